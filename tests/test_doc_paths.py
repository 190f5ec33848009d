"""The layout pages name real files: every path docs/architecture.md and docs/task-kinds.md
name exists (a module moved or renamed without its page fails here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO

PAGES = ("docs/architecture.md", "docs/task-kinds.md")

# A path: directories and a file name with a suffix, or a directory ending in "/", as the
# pages write them (`harness/kinds/lid.py`, `runners/`, [transports.md](transports.md)).
_PATH = re.compile(
    r"(?<![\w./-])((?:[\w*.-]+/)+[\w*.-]+\.(?:py|md|toml|jsonl|json|txt|sh)|"
    r"(?:[\w.-]+/)+(?=[\s`),.;:]|$)|[\w-]+\.md(?=\)))"
)


def named_paths(text: str) -> set[str]:
    """The repository paths a page names (URLs and example files of a test set left out)."""
    found: set[str] = set()
    for line in text.splitlines():
        line = re.sub(r"https?://\S+", "", line)
        for m in _PATH.finditer(line):
            found.add(m.group(1))
    return found


def _exists(path: str) -> bool:
    for base in (REPO, REPO / "docs"):
        if "*" in path:
            if any(base.glob(path)):
                return True
        elif (base / path).exists():
            return True
    return False


# Names of a test set's files and of a run directory's, not of the repository.
_NOT_REPO = re.compile(r"^(ref|hyp|trials|items|outputs|runs|journal|site|run|logs|stage)\b")


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_layout_page_names_exists(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    paths = named_paths(text)
    assert len(paths) > 5, f"{page}: the check found too few paths to mean anything"
    missing = sorted(p for p in paths if not _NOT_REPO.match(p) and not _exists(p))
    assert missing == [], f"{page} names paths that do not exist: {missing}"


def test_the_check_sees_a_missing_path() -> None:
    text = "The store is `harness/store.py`; the kinds are in harness/kinds/ ([x](task-kinds.md))."
    paths = named_paths(text)
    assert paths == {"harness/store.py", "harness/kinds/", "task-kinds.md"}
    assert [p for p in sorted(paths) if not _exists(p)] == ["harness/store.py"]


def test_repo_root_is_this_checkout() -> None:
    assert (REPO / "harness").is_dir() and Path(__file__).parent == REPO / "tests"
