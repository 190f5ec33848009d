"""`onsite --help` and `onsite status` load only what they use (issue 18).

Each command runs in a fresh interpreter, as a user starts it, under ``-X importtime``;
what it loaded is read from ``sys.modules`` as it exits, and the import-time tree says
who pulled a heavy module in when one is found. The heavy modules are the transports'
libraries (paramiko, pyserial, psutil), the numeric and media stack (numpy, soundfile,
OpenCV, numba, matplotlib), the PostgreSQL driver and the HTML report. Behaviour, never
seconds: benchmarks/startup.py measures the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FAKE_SERVE, REPO, make_testset, run_site, toml_value

# Top-level packages no light command may load, and our own heavy modules.
HEAVY_PACKAGES = (
    "paramiko",
    "serial",
    "psutil",
    "numpy",
    "soundfile",
    "cv2",
    "numba",
    "matplotlib",
    "scipy",
    "psycopg",
    "jinja2",
    "starlette",
    "uvicorn",
    "devices",
)
HEAVY_MODULES = (
    "harness.report.build",
    "harness.report.html",
    "harness.engine.controller",
    "runners.local",
    "runners.ssh",
    "runners.ssh_link",
    "runners.serial_runner",
    "scoring._fast_align",
    "scoring._fast_mt",
    # The CWMT XML reader and writer: only MT scoring and the combination set need them.
    "scoring.cwmt_xml",
    "scoring.cwmt_write",
)

# Runs the CLI (or a snippet) and writes sys.modules to the file named in argv[1] at exit.
_PROBE = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
if sys.argv[1] == "-c":
    exec(sys.argv[2])
else:
    sys.argv = ["onsite", *sys.argv[1:]]
    runpy.run_module("harness.cli", run_name="__main__", alter_sys=True)
"""


def _heavy(modules: list[str]) -> list[str]:
    """The heavy packages (by their top-level name) and heavy modules among ``modules``."""
    return sorted(
        {m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY_PACKAGES}
        | {m for m in modules if m in HEAVY_MODULES}
    )


def _importers(importtime: str, module: str) -> list[str]:
    """The chain of imports that loaded ``module``, innermost first, from -X importtime.

    A module's line comes after its children's, indented one step less than they are.
    """
    rows = []
    for line in importtime.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1]
            rows.append((len(name) - len(name.lstrip()), name.strip()))
    for at, (depth, name) in enumerate(rows):
        if name == module:
            chain, want = [name], depth
            for d, n in rows[at + 1 :]:
                if d < want:
                    chain.append(n)
                    want = d
            return chain
    return [module, "(loaded outside the import statement: importlib.import_module)"]


def loaded_by(tmp_path: Path, *args: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """The heavy modules loaded by `onsite ARGS` (or by ``-c CODE``), and the process."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _PROBE, str(out), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CI": "1", "PYTHONPATH": str(REPO)},
    )
    assert out.is_file(), proc.stderr[-3000:]
    heavy = _heavy(json.loads(out.read_text()))
    return heavy, proc


def assert_light(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the command; fail naming each heavy module and the imports that loaded it."""
    heavy, proc = loaded_by(tmp_path, *args)
    why = {m: " <- ".join(_importers(proc.stderr, m)) for m in heavy}
    assert not heavy, f"{' '.join(args)[:200]} loaded heavy modules:\n" + "\n".join(why.values())
    return proc


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished ASR run whose site also defines an SSH and a serial device."""
    root = tmp_path_factory.mktemp("startup")
    root.chmod(0o755)  # the sandboxed system runs as nobody and reads its workdir
    testset = make_testset(
        root / "ts", [(f"u{i}", 1600 + i, "hello world") for i in range(4)], conditions=True
    )
    site = root / "site.toml"
    site.write_text(
        "\n".join(
            [
                '[site]\nname = "startup"\nruns = "runs"\n',
                '[devices.local]\ntransport = "local"\n',
                # Defined, never used: reading the site must not load their runners.
                '[devices.remote]\ntransport = "ssh"\nhost = "192.0.2.1"\nuser = "team"\n',
                '[devices.board]\ntransport = "serial"\nport = "/dev/ttyUSB9"\n',
                '[tasks.asr]\nkind = "asr"',
                f"testset = {json.dumps(str(testset))}",
                "budget = { seconds = 5.0, hang_seconds = 5.0 }\n",
                '[systems.fake]\ndevice = "local"\ntasks = ["asr"]\nmode = "serve"',
                f"command = {toml_value(FAKE_SERVE)}\n",
            ]
        ),
        encoding="utf-8",
    )
    found, results = run_site(site)
    assert [r.failed for r in results] == [None]
    return found


def test_help_loads_nothing_heavy(tmp_path: Path) -> None:
    proc = assert_light(tmp_path, "--help")
    assert proc.returncode == 0 and "status" in proc.stdout


def test_a_commands_help_loads_nothing_heavy(tmp_path: Path) -> None:
    for command in ("run", "status", "report", "score"):
        assert assert_light(tmp_path, command, "--help").returncode == 0


def test_status_of_a_run_loads_nothing_heavy(tmp_path: Path, run_dir: Path) -> None:
    proc = assert_light(tmp_path, "status", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The whole status: every item done, and the quality so far scored (the WER of the
    # fake system, which answers with the wrong words).
    line = next(ln for ln in proc.stdout.splitlines() if ln.split()[:2] == ["asr", "fake"])
    assert "4/4" in line and "WER" in line and "%" in line


def test_report_as_json_loads_no_report_builder(tmp_path: Path, run_dir: Path) -> None:
    # Intervals and ranks resample with numpy (harness/significance.py); without them the
    # leaderboard loads nothing heavy.
    proc = assert_light(tmp_path, "report", str(run_dir), "--json", "--no-intervals")
    [row] = json.loads(proc.stdout)
    assert row["completed"] == 4 and row["metric"] == "wer" and row["ci_low"] is None
    heavy, with_intervals = loaded_by(tmp_path, "report", str(run_dir), "--json")
    assert with_intervals.returncode == 0, with_intervals.stderr[-2000:]
    assert set(heavy) <= {"numpy", "scipy"}, heavy  # no report builder, no matplotlib
    [row] = json.loads(with_intervals.stdout)
    assert row["ci_low"] <= row["score"] <= row["ci_high"] and row["rank_low"] == 1


def test_status_and_report_say_what_the_full_load_says(tmp_path: Path, run_dir: Path) -> None:
    # The light path (WAV headers read without libsndfile, a small corpus aligned without
    # numpy) gives the same leaderboard as when everything heavy is already loaded.
    code = (
        "import json, sys, numpy, soundfile, runners.ssh, runners.serial_runner\n"
        "from harness.cli.main import main\n"
        f"main(['report', {str(run_dir)!r}, '--json', '--full', '--no-intervals'])\n"
    )
    heavy, full = loaded_by(tmp_path, "-c", code)
    assert "numpy" in heavy and "paramiko" in heavy
    light = assert_light(tmp_path, "report", str(run_dir), "--json", "--full", "--no-intervals")
    assert json.loads(light.stdout) == json.loads(full.stdout)


def test_the_registries_load_nothing_heavy(tmp_path: Path) -> None:
    # Derived from the registries: a kind module or a transport's device module added
    # later is covered without changing this test.
    code = (
        "from harness.kinds.registry import task_kinds, score_families\n"
        "from harness.site import TASK_MODELS\n"
        "import runners\n"
        "from runners import LocalDevice, SerialDevice, SshDevice, DeviceSettings\n"
        "kinds = task_kinds(); score_families()\n"
        "assert set(TASK_MODELS) == set(kinds)\n"
        "assert {'local', 'ssh', 'serial'} <= set(runners.transport_names())\n"
        "[t.settings for t in runners.transports()]\n"
    )
    proc = assert_light(tmp_path, "-c", code)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_runners_names_still_import_as_before(tmp_path: Path) -> None:
    # `from runners import X` loads X's module on first use; the heavy ones then load.
    code = (
        "from runners import LocalServeRunner, SshServeRunner, SerialRunner, probe\n"
        "from runners import SshDevice, SerialDevice, LocalDevice, list_serial_ports\n"
        "from runners.ssh_link import SshDevice as Same\n"
        "from runners.serial_runner import SerialDevice as Same2\n"
        "assert Same is SshDevice and Same2 is SerialDevice\n"
        "import runners\n"
        "assert runners.transport('ssh').settings is SshDevice\n"
        "assert set(runners.__all__) <= set(dir(runners))\n"
        "for name in runners.__all__: getattr(runners, name)\n"
    )
    heavy, proc = loaded_by(tmp_path, "-c", code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {"paramiko", "serial", "runners.ssh", "runners.serial_runner"} <= set(heavy)


def test_an_unknown_name_of_the_lazy_packages_is_an_attribute_error() -> None:
    import harness.report
    import runners

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        runners.nothing_here  # noqa: B018
    with pytest.raises(ImportError):
        from runners import nothing_here  # type: ignore[attr-defined]  # noqa: F401
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        harness.report.nothing_here  # noqa: B018
    # The function, not the submodule of the same name.
    import harness.leaderboard  # noqa: F401  (binds the submodule's name on the package)

    assert callable(harness.leaderboard)
    assert harness.leaderboard.__module__ == "harness.leaderboard"
