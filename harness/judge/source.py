"""A panel's judgements as a temporary score file, for `onsite score ... --run`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.judge.results import ExportFile
from harness.judge.store import JudgeStore, PanelError, panel_path


@contextmanager
def panel_export(run_dir: Path, task: str, test: str) -> Iterator[Path]:
    """The judgements of the run's (task, test) panel written as its score file."""
    path = panel_path(run_dir, task, test)
    if not path.is_file():
        raise PanelError(
            f"{run_dir} has no {test} panel for task {task!r} ({path} is missing): "
            f"start one with `onsite judge {run_dir} --test {test} --task {task} --judges N`"
        )
    store = JudgeStore(path)
    try:
        if not store.answers():
            raise PanelError(
                f"the {test} panel of task {task!r} has no judgements yet "
                f"(onsite judge {run_dir} --test {test} --task {task} --progress)"
            )
        with ExportFile(store, run_dir) as export:
            yield export
    finally:
        store.close()
