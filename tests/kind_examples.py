"""A demo-style job for each task kind: what tests/test_kind_conformance.py runs every kind on.

A kind's example is a small test set and a real system that answers it, odd and
hostile answers included. The examples of the kinds before the conformance test
live there; a kind added later brings its own in its test module
(``tests/test_kind_<name>.py``, a module-level ``EXAMPLES``: kind name ->
builder), so adding a kind changes no test but its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import REPO, run_site, write_site


@dataclass(frozen=True)
class KindExample:
    """A kind's demo-style job: its test set, task keys and the system (a site entry)."""

    testset: Path
    system: Mapping[str, Any]  # the site file's [systems.X] keys: command, env, workdir ...
    task_keys: Mapping[str, Any] = field(default_factory=dict)
    budget: Mapping[str, Any] = field(
        default_factory=lambda: {"seconds": 20.0, "hang_seconds": 20.0}
    )
    device: Mapping[str, Any] | None = None


Builder = Callable[[Path], KindExample]


def own_examples() -> dict[str, Builder]:
    """The examples kinds bring in their own test modules (tests/test_kind_*.py)."""
    found: dict[str, Builder] = {}
    for path in sorted((REPO / "tests").glob("test_kind_*.py")):
        module = importlib.import_module(f"tests.{path.stem}")
        for kind, builder in getattr(module, "EXAMPLES", {}).items():
            if kind in found:
                raise AssertionError(f"two examples of kind {kind!r} ({path.name})")
            found[kind] = builder
    return found


def run_example(kind: str, example: KindExample, tmp: Path) -> Path:
    """Run the example's system over its test set as one job; the run directory."""
    site = write_site(
        tmp / "site.toml",
        example.testset,
        {"sys": dict(example.system)},
        task=kind.replace("-", "_"),
        task_keys={"kind": kind, **example.task_keys},
        budget=dict(example.budget),
        device=dict(example.device) if example.device else None,
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None], results
    return run_dir
