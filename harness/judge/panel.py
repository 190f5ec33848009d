"""Open a panel: build and store its plan the first time, reopen it unchanged afterwards."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from harness.judge.material import load_material
from harness.judge.plan import TESTS, build_plan
from harness.judge.store import JudgeStore, PanelError, panel_path
from harness.judge.subset import Subset, describe, read_items_file, stored_subset


def open_panel(
    run_dir: Path,
    task: str,
    test: str,
    judges: int | None,
    seed: int | None,
    category: str | None = None,
    subset: Subset | None = None,
    pool_depth: int | None = None,
) -> tuple[JudgeStore, tuple[str, ...]]:
    """The panel's store, with its plan; and the warnings of a plan built now.

    A panel that exists already is reopened as it is: the same judges, tokens and
    plan, so judges resume where they were. Asking for another number of judges,
    another seed, category or subset then is an error rather than a silent new plan.
    ``subset`` (a fraction drawn with ``seed``, or an items file) restricts a new
    panel to those items (harness/judge/subset.py); ``pool_depth`` is the relevance
    test's pool depth (harness/judge/pooling.py).
    """
    if test not in TESTS:
        raise PanelError(f"unknown test {test!r}; use one of {', '.join(TESTS)}")
    path = panel_path(run_dir, task, test)
    store = JudgeStore(path)
    meta = store.meta()
    if meta:
        for name, asked in (("judges", judges), ("seed", seed), ("category", category)):
            if asked is not None and str(asked) != meta.get(name, ""):
                store.close()
                raise PanelError(
                    f"{path} holds a plan with {name} = {meta[name]}, not {asked}; leave "
                    f"--{name} out to go on with it, or move the file away for a new plan"
                )
        try:
            problem = _other_subset(meta, subset)
        except ValueError:  # an --items file that cannot be read
            store.close()
            raise
        held_depth = json.loads(meta["pool"])["depth"] if meta.get("pool") else None
        if pool_depth is not None and held_depth is None:
            problem = "holds no pooled plan; --pool-depth is for the relevance test"
        elif pool_depth is not None and pool_depth != held_depth:
            problem = f"holds a plan with pool depth {held_depth}, not {pool_depth}"
        if problem:
            store.close()
            raise PanelError(f"{path} {problem}; move the file away for a new plan")
        return store, ()
    if judges is None:
        store.close()
        path.unlink(missing_ok=True)
        raise PanelError("a new panel needs --judges N")
    try:
        material = load_material(run_dir, task, test, category, subset, pool_depth)
        plan = build_plan(test, material, judges, 0 if seed is None else seed)
        store.write_plan(plan, material, category or "")
    except BaseException:
        store.close()
        for leftover in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
        ):
            leftover.unlink(missing_ok=True)
        raise
    return store, material.warnings


def _other_subset(meta: dict[str, str], asked: Subset | None) -> str | None:
    """Why ``asked`` is not the subset of the stored plan (None: it is, or none asked)."""
    if asked is None:
        return None
    held = stored_subset(meta)
    if held is None:
        return "holds a plan of every item, not a subset; leave --subset/--items out"
    if asked.fraction is not None:
        if held["fraction"] != asked.fraction or held["seed"] != asked.seed:
            return f"holds a plan that {describe(held)}, not --subset {asked.fraction:g} " + (
                f"with seed {asked.seed}"
            )
        return None
    assert asked.file is not None
    _, sha = read_items_file(asked.file)
    if held["sha256"] != sha:
        return f"holds a plan of other items than {asked.file} lists (SHA-256 differs)"
    return None


class PanelServer:
    """The panel's app under uvicorn, in a thread (tests) or in the foreground (CLI).

    It answers to ``host`` and ``link_host`` (and, listening on every interface or on
    loopback, to the machine's own names): webguard.allowed_hosts. The plan's audio is
    decoded here, before serving (PanelError if a file cannot be read).
    """

    def __init__(
        self, store: JudgeStore, host: str, port: int, link_host: str | None = None
    ) -> None:
        import uvicorn

        from harness.judge.app import create_app
        from harness.webguard import allowed_hosts

        app = create_app(store, allowed_hosts(host, link_host))
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            server_header=False,
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until stopped (Ctrl-C)."""
        self.server.run()

    def start(self) -> None:
        """Serve in a background thread; returns once the socket listens."""
        self._thread = threading.Thread(target=self.server.run, daemon=True)
        self._thread.start()
        while not self.server.started:
            if not self._thread.is_alive():
                raise PanelError("the panel could not start (is the port in use?)")
            self._thread.join(0.02)

    @property
    def port(self) -> int:
        """The port it listens on (useful with port 0)."""
        servers = self.server.servers
        return int(servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
