"""Shared fixtures (the helpers themselves are in tests/helpers.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pg import Postgres, PostgresMissing, start_postgres
from tests.sshd import Sshd, SshdMissing, start_sshd


@pytest.fixture(autouse=True)
def _readable_tmp_path(tmp_path: Path) -> None:
    """pytest makes tmp_path 0700; sandboxed systems run as nobody and read their workdir."""
    tmp_path.chmod(0o755)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A real OpenSSH server on 127.0.0.1 with generated host and user keys."""
    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except SshdMissing as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Postgres]:
    """A real PostgreSQL server on 127.0.0.1 (tests/pg.py), shared by the session."""
    try:
        server = start_postgres()
    except PostgresMissing as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg(pg_server: Postgres) -> Postgres:
    """The PostgreSQL server, running (a test before may have stopped it)."""
    if pg_server.process is None or pg_server.process.poll() is not None:
        pg_server.start()
    return pg_server


@pytest.fixture
def plan_env() -> Any:
    """Build the env table for a fake system from a {frames: behaviour} plan."""

    def build(plan: dict[int, dict[str, Any]], **extra: str) -> dict[str, str]:
        return {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()}), **extra}

    return build
