# Two entry points for a new user: `make demo` and `make test`.
# Everything else here is what those two need.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# python3-venv gives `python3 -m venv` its pip on Debian/Ubuntu; the SSH tests start a real
# sshd; the report test renders the HTML report in headless Chromium.
# The example OCR system is Tesseract with its Simplified Chinese model; the serial-device
# tests synthesize command words with espeak-ng and sox; the demo's speech sets and its
# second synthesizer are festival's HTS and diphone voices; the run-store tests start PostgreSQL;
# the lost-link tests put a participant's machine in a network namespace (iproute2); the
# significance-test tests run SCTK's sclite and sc_stats (sctk).
SYSTEM_PACKAGES := python3-venv bubblewrap openssh-server openssh-client chromium chromium-driver \
	tesseract-ocr tesseract-ocr-chi-sim fonts-noto-cjk espeak-ng sox time busybox postgresql \
	iproute2 sctk festival festvox-us-slt-hts festvox-kallpc16k
DEMO_SITE := site_config/demo.toml
# Set up again when the Python packages or the Debian package list change (a checkout that
# gained festival installs it on its next `make demo`).
STAMP := $(VENV)/.installed-$(shell (cat pyproject.toml; echo $(SYSTEM_PACKAGES)) | cksum | cut -d' ' -f1)

.PHONY: demo test lint bench system-deps clean

system-deps:
	@scripts/install-system-deps $(SYSTEM_PACKAGES)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# `onsite run` ends by printing the leaderboard; a second `make demo` resumes (nothing left
# to do). Then the self-contained HTML report, whose path is printed last.
demo: $(STAMP)
	$(VENV)/bin/onsite run $(DEMO_SITE)
	$(VENV)/bin/onsite report runs/demo --html runs/demo/report.html
	@echo "Judging panel for the speech synthesis task (pair comparison, 4 judges):"
	$(VENV)/bin/onsite judge runs/demo --test pair --task tts --category paragraph \
		--judges 4 --seed 2004 --plan-only
	@echo "Open it with: $(VENV)/bin/onsite judge runs/demo --test pair --task tts" \
		"--listen 0.0.0.0:8017 --link-host <this machine's LAN address>  (docs/judging.md)"

# pytest's exit code 5 means no test ran: a failure here, never a pass. The linters run
# first, so CI fails on a lint or type error as on a failing test.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	@$(PY) -m pytest; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: no tests ran" >&2; exit 1; fi; exit $$status

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) runs site_config/runs
