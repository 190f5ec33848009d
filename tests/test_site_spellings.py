"""Old site-file spellings still load, with a deprecation warning that names the file, the
line and the fix: a device's ``kind`` is now its ``transport`` (``kind`` is a task's only)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from harness import SiteError, load_site
from harness.engine.integrity import job_settings, settings_changes
from harness.errors import SiteDeprecationWarning
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, write_site

DEMO = REPO / "site_config" / "demo.toml"


def _site(tmp_path: Path, device: dict[str, object]) -> Path:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "a b c")])
    return write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE}}, device=device
    )


def _line(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8").splitlines().index(text) + 1


def test_a_device_kind_loads_as_its_transport_with_a_deprecation_warning(
    tmp_path: Path,
) -> None:
    path = _site(tmp_path, {"kind": "local", "sandbox": False})
    with pytest.warns(SiteDeprecationWarning) as caught:
        site = load_site(path)
    assert site.device("local").transport == "local"
    assert site.device_options("local")["sandbox"] is False
    (warning,) = caught
    line = _line(path, 'kind = "local"')
    assert str(warning.message) == (
        f"{path}:{line} [devices.local.kind]: `kind` is the old name of a device's "
        "`transport` (deprecated: still read for now). "
        'Fix: write `transport = "local"` in place of `kind = "local"`'
    )


def test_the_new_spelling_loads_without_a_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        site = load_site(_site(tmp_path, {"transport": "local"}))
    assert site.device("local").transport == "local"


def test_a_device_giving_both_keys_is_an_error_naming_it(tmp_path: Path) -> None:
    path = _site(tmp_path, {"transport": "local", "kind": "ssh"})
    with pytest.raises(SiteError) as err:
        load_site(path)
    line = _line(path, 'kind = "ssh"')
    assert [str(p) for p in err.value.problems] == [
        f"{path}:{line} [devices.local.kind]: device 'local' gives both `transport` and "
        "`kind` (the old name of `transport`). Fix: remove `kind`"
    ]


def test_both_keys_are_reported_beside_the_other_problems(tmp_path: Path) -> None:
    path = _site(tmp_path, {"transport": "local", "kind": "local", "sandbox": "maybe"})
    with pytest.raises(SiteError) as err:
        load_site(path)
    wheres = [p.where for p in err.value.problems]
    assert wheres == ["devices.local.kind", "devices.local.sandbox"]


@pytest.mark.parametrize("key", ["kind", "transport"])
def test_an_unknown_transport_names_the_key_the_file_has(tmp_path: Path, key: str) -> None:
    path = _site(tmp_path, {key: "locl"})
    with pytest.raises(SiteError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore", SiteDeprecationWarning)
        load_site(path)
    (problem,) = err.value.problems
    assert problem.where == f"devices.local.{key}"
    assert problem.line == _line(path, f'{key} = "locl"')
    assert problem.message == "unknown transport 'locl'"
    assert problem.fix == "use one of: command, local, serial, ssh"


def test_the_cli_shows_the_warning_once_and_a_run_copy_reads_silently(tmp_path: Path) -> None:
    path = _site(tmp_path, {"kind": "local", "sandbox": False})
    line = _line(path, 'kind = "local"')
    warning = (
        f"warning: {path}:{line} [devices.local.kind]: `kind` is the old name of a device's "
        "`transport` (deprecated: still read for now). "
        'Fix: write `transport = "local"` in place of `kind = "local"`'
    )
    checked = onsite("check", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stderr.splitlines() == [warning]
    ran = onsite("run", str(path))
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines() == [warning]
    # The run directory's copy keeps the old spelling: it records what was written, and
    # readers of the run do not ask anyone to correct it.
    run_dir = tmp_path / "runs" / "t"
    assert 'kind = "local"' in (run_dir / "site.toml").read_text(encoding="utf-8")
    report = onsite("report", str(run_dir), "--json")
    assert report.returncode == 0, report.stderr
    assert report.stderr == ""
    assert [row["completed"] for row in json.loads(report.stdout)] == [1]


def test_a_transport_changed_under_an_old_journal_is_a_site_change(tmp_path: Path) -> None:
    site = load_site(_site(tmp_path, {"transport": "local"}))
    new = job_settings(site, "asr", "fake", "0" * 64)
    device = new["device_settings"]
    # As a run journaled before the rename recorded it.
    old = {**new, "device_settings": {"kind": "local", **device} | {"kind": "local"}}
    del old["device_settings"]["transport"]
    assert settings_changes(old, new) == []
    old["device_settings"]["kind"] = "ssh"
    assert settings_changes(old, new) == ['device_settings.transport: "ssh" -> "local"']


def test_the_demo_site_uses_the_new_spelling() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SiteDeprecationWarning)
        site = load_site(DEMO)
    assert {site.device(name).transport for name in site.config.devices} == {"local", "serial"}


def test_a_device_without_a_transport_is_told_to_add_one(tmp_path: Path) -> None:
    path = _site(tmp_path, {"sandbox": False})
    with pytest.raises(SiteError) as err:
        load_site(path)
    (problem,) = err.value.problems
    assert problem.where == "devices.local.transport"
    assert problem.message == "the device names no transport"
    assert problem.fix == "add transport = one of: command, local, serial, ssh"
