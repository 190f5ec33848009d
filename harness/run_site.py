"""The site a run directory was made from, without loading the scorers.

Kept apart from `harness.leaderboard` (which imports every task kind's
scorer) so `onsite status` stays light.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import Problem, SiteError
from .site import Site, load_site

__all__ = ["site_of_run"]


def site_of_run(run_dir: Path) -> Site:
    """The site a run used: its copy in the run directory, paths resolved as the original's."""
    copy = run_dir / "site.toml"
    meta_path = run_dir / "run.json"
    if not copy.is_file() or not meta_path.is_file():
        raise SiteError(
            [
                Problem(
                    run_dir,
                    "",
                    "not a run directory (no site.toml and run.json)",
                    "give the directory `onsite run` wrote, e.g. runs/demo",
                )
            ]
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    return load_site(copy, base=Path(meta["site_root"]))
