"""Checks made before any system starts: configuration errors that a start would hit
every time, refused at once with the fix instead of being retried as lost systems."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from harness.errors import InputError, Problem
from harness.site import Site


def sealed_start_problems(site: Site, jobs: Iterable[tuple[str, str]]) -> list[Problem]:
    """What would stop a sealed local system from starting, on every try: its workdir, or
    a file its command names, that the system's own user cannot read (docs/security.md)."""
    from runners.sandbox import unreadable_for_sandbox

    problems = []
    seen: set[str] = set()
    for _task, system in jobs:
        if system in seen:
            continue
        seen.add(system)
        cfg = site.config.systems[system]
        device = site.device(cfg.device)
        if getattr(device, "transport", None) != "local":
            continue
        sandbox = device.sandbox_settings((), None)
        workdir = site.workdir(system)
        for path in unreadable_for_sandbox(sandbox, workdir, cfg.command):
            what = "workdir" if path == workdir.resolve() else "command"
            chmod = "chmod -R o+rX" if what == "workdir" else "chmod o+r"
            who = f"the account {sandbox.user!r}" if sandbox.user else "a user of its own"
            problems.append(
                Problem(
                    site.path,
                    f"systems.{system}.{what}",
                    f"{path} is not readable by others, and the sealed system runs as "
                    f"{who}, not as the controller's user: it could never start",
                    f"{chmod} {shlex.quote(str(path))}",
                )
            )
    return problems


def refuse_unstartable(site: Site, jobs: Iterable[tuple[str, str]]) -> None:
    """Raise InputError naming each problem of ``sealed_start_problems``."""
    problems = sealed_start_problems(site, jobs)
    if problems:
        raise InputError(problems)
