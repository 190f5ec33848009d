"""The transport registry: a transport registered in one place is validated by the site file,
opened by the controller, probed by `onsite check` and described in the manifest, with no
other code changed (docs/transports.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from harness import SiteError, load_site
from harness.engine.dryrun import dry_run, probe_devices
from harness.engine.manifest import build_manifest
from runners import (
    CheckStep,
    DeviceProblem,
    DeviceSettings,
    HostFacts,
    LocalServeRunner,
    Runner,
    SerialDevice,
    SshDevice,
    SystemSpec,
    Transport,
    open_runner,
    register,
    transport,
    transport_names,
    unregister,
)

REPO = Path(__file__).resolve().parents[1]
TESTSET = REPO / "site_config" / "data" / "demo-asr"


class LoopDevice(DeviceSettings):
    """A made-up transport: the controller's own machine under another name."""

    transport: Literal["loop"] = "loop"
    label: str = "bench"
    flaky: bool = False

    def problems(self) -> list[DeviceProblem]:
        if self.label == "missing":
            return [DeviceProblem("label", "no such bench here", "name a bench that exists")]
        return []


def _open(spec: SystemSpec, device: LoopDevice) -> Runner:
    return LocalServeRunner(spec)


def _probe(device: LoopDevice) -> list[CheckStep]:
    return [CheckStep("bench", not device.flaky, f"bench {device.label}")]


def _facts(device: LoopDevice, host: Mapping[str, Any]) -> HostFacts:
    return HostFacts({"collected": f"on bench {device.label}"}, files_on_controller=False)


@pytest.fixture
def loop() -> Iterator[Transport[LoopDevice]]:
    added = register(
        Transport(
            settings=LoopDevice,
            open=_open,
            modes=frozenset({"serve"}),
            host_facts=_facts,
            probe=_probe,
        )
    )
    try:
        yield added
    finally:
        unregister("loop")


def _site(tmp_path: Path, device: str, system: str = "") -> Path:
    path = tmp_path / "site.toml"
    command = json.dumps([sys.executable, "-m", "examples.systems.null_system"])
    path.write_text(
        f'[site]\nname = "t"\nruns = "runs"\n\n[devices.bench]\n{device}\n\n'
        f'[tasks.asr]\nkind = "asr"\ntestset = {json.dumps(str(TESTSET))}\n'
        "budget = { realtime_factor = 20.0, hang_seconds = 30 }\n\n"
        f'[systems.null]\ndevice = "bench"\ntasks = ["asr"]\ncommand = {command}\n'
        f"workdir = {json.dumps(str(REPO))}\n{system}",
        encoding="utf-8",
    )
    return path


def test_the_built_in_transports_are_registered() -> None:
    assert transport_names() == ["command", "local", "serial", "ssh"]
    assert transport("ssh").settings is SshDevice
    assert transport("serial").settings is SerialDevice
    assert transport("local").modes == {"serve", "exec"}
    assert transport("ssh").modes == {"serve"}
    assert not transport("serial").needs_command
    assert not transport("serial").returns_files
    with pytest.raises(ValueError, match="known transports: command, local, serial, ssh"):
        transport("carrier-pigeon")


def test_a_registered_transport_runs_end_to_end(tmp_path: Path, loop: Transport[Any]) -> None:
    site = load_site(_site(tmp_path, 'transport = "loop"\nlabel = "b7"'))
    assert site.device("bench") == LoopDevice(label="b7")
    assert probe_devices(site) == {"bench": [CheckStep("bench", True, "bench b7")]}
    manifest = build_manifest(tmp_path / "run", site)
    assert manifest["systems"]["null"]["environment"] == {"collected": "on bench b7"}
    assert manifest["systems"]["null"]["files_sha256"] == {}
    [result] = dry_run(site, items=2)
    assert result.ok, result
    assert [r["verdict"] for r in result.items] == ["ok", "ok"]


def test_a_registered_transport_gets_the_site_file_errors(
    tmp_path: Path, loop: Transport[Any]
) -> None:
    with pytest.raises(SiteError) as bad_key:
        load_site(_site(tmp_path, 'transport = "loop"\nlabell = "b7"'))
    text = str(bad_key.value)
    assert "site.toml:7 [devices.bench.labell]: unknown key 'labell'" in text
    assert "allowed keys: transport, label, flaky" in text
    with pytest.raises(SiteError, match=r"devices\.bench\.label.*no such bench here"):
        load_site(_site(tmp_path, 'transport = "loop"\nlabel = "missing"'))
    with pytest.raises(SiteError, match="mode 'exec' is not supported on loop devices"):
        load_site(_exec_site(tmp_path, 'transport = "loop"'))


def _exec_site(tmp_path: Path, device: str) -> Path:
    """A site whose one system runs in exec mode on the given device."""
    path = _site(tmp_path, device, 'mode = "exec"\n')
    text = path.read_text(encoding="utf-8").replace(
        '"examples.systems.null_system"]', '"examples.systems.null_system", "{input}", "{output}"]'
    )
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_transports_list_the_registered_ones(tmp_path: Path, loop: Transport[Any]) -> None:
    with pytest.raises(SiteError, match="use one of: command, local, serial, ssh, loop"):
        load_site(_site(tmp_path, 'transport = "tape"'))


def test_ssh_devices_take_no_exec_mode(tmp_path: Path) -> None:
    with pytest.raises(SiteError) as err:
        load_site(_exec_site(tmp_path, 'transport = "ssh"\nhost = "127.0.0.1"\nuser = "me"'))
    assert "systems.null.mode" in str(err.value)
    assert "use mode = one of: serve" in str(err.value)


def test_settings_from_a_mapping_name_the_bad_key(tmp_path: Path) -> None:
    spec = SystemSpec(
        "s", "t", "asr", "serve", ("true",), tmp_path, tmp_path / "log", tmp_path / "stage"
    )
    with pytest.raises(ValueError, match=r"unknown key 'hots' \(known: host, user"):
        open_runner("ssh", {"hots": "x", "user": "u"}, spec)
    with pytest.raises(ValueError, match="ssh device: 'host' is required"):
        open_runner("ssh", {"user": "u"}, spec)
    with pytest.raises(ValueError, match="port: Input should be greater than 0"):
        open_runner("ssh", {"host": "h", "user": "u", "port": 0}, spec)


def test_ssh_paths_resolve_against_the_site_file(tmp_path: Path) -> None:
    device = SshDevice(host="h", user="u", key="keys/id", known_hosts="~/kh")
    resolved = device.resolved(tmp_path)
    assert resolved.key == str(tmp_path / "keys" / "id")
    assert resolved.known_hosts == str(Path("~/kh").expanduser())
    assert resolved.problems()[0].key == "key"
    # Settings as written are what the journal records: untouched by resolving.
    assert device.key == "keys/id"


def test_serial_settings_are_checked_once_when_the_site_loads(tmp_path: Path) -> None:
    # The runner's own check (the tty must appear as "{port}") now stops the site file.
    no_port = 'transport = "serial"\nemulate_command = ["./mydevice"]'
    with pytest.raises(SiteError, match=r"\[devices\.bench\].*emulate_command must name"):
        load_site(_site(tmp_path, no_port))
    with pytest.raises(SiteError, match=r"\[devices\.bench\.reset\].*'dtr', 'rts' or 'none'"):
        load_site(_site(tmp_path, 'transport = "serial"\nport = "/dev/null"\nreset = "dsr"'))
