"""The ``ssh`` transport's device settings: what the site file's ``[devices.NAME]`` with
``transport = "ssh"`` may say (docs/ssh.md).

Apart from the registration (runners/ssh_device.py), which opens the runner lazily, and
from the paramiko implementation (runners/ssh_link.py, runners/ssh.py), which takes these
settings: all import this module, and it imports none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PositiveFloat, model_validator

from .transport import DeviceProblem, DeviceSettings


class SshDevice(DeviceSettings):
    """A participant's own machine, reached over SSH (docs/ssh.md): the site file's
    ``[devices.NAME]`` with ``transport = "ssh"``."""

    transport: Literal["ssh"] = "ssh"
    host: Annotated[str, Field(min_length=1)]
    user: Annotated[str, Field(min_length=1)]
    port: Annotated[int, Field(gt=0, lt=65536)] = 22
    key: str | None = None  # private key file, relative to the site file; else the SSH agent
    host_key: str | None = None  # pinned "ssh-ed25519 AAAA..." line
    known_hosts: str | None = None  # relative to the site file
    workdir: str = "/tmp/onsite"
    connect_timeout: PositiveFloat = 10.0
    # The first contact of a session: a machine that is down is told quickly (docs/ssh.md).
    first_connect_timeout: PositiveFloat = 3.0
    trust_on_first_use: bool = False
    rtt_interval: PositiveFloat = 30.0
    # A connection that acknowledges nothing for this long is dead (keep-alives every
    # second; TCP_USER_TIMEOUT): a lost link is seen within it, not at the item's limit.
    link_timeout: Annotated[float, Field(ge=1.0, le=600.0)] = 5.0

    @model_validator(mode="after")
    def _no_password(self) -> SshDevice:
        if self.trust_on_first_use and not self.known_hosts:
            raise ValueError(
                "trust_on_first_use records the host key in known_hosts: give known_hosts too"
            )
        return self

    @property
    def key_file(self) -> Path | None:
        """The private key file, if one is given (``~`` expanded)."""
        return Path(self.key).expanduser() if self.key else None

    @property
    def known_hosts_file(self) -> Path | None:
        """The known_hosts file, if one is given (``~`` expanded)."""
        return Path(self.known_hosts).expanduser() if self.known_hosts else None

    @property
    def pinned_key(self) -> str | None:
        """The pinned host key line, or None when none is given."""
        return self.host_key.strip() or None if self.host_key else None

    def resolved(self, root: Path) -> SshDevice:
        """Key and known_hosts made absolute against the site file's directory."""
        paths = {
            name: str((root / Path(value).expanduser()).resolve())
            for name in ("key", "known_hosts")
            if (value := getattr(self, name))
        }
        return self.model_copy(update=paths) if paths else self

    def private_files(self) -> tuple[Path, ...]:
        """The private key and known_hosts files: no sealed system may read them."""
        return tuple(p for p in (self.key_file, self.known_hosts_file) if p is not None)

    def problems(self) -> list[DeviceProblem]:
        """A key file that is not there (checked before the day, not at the first start)."""
        if self.key_file is not None and not self.key_file.is_file():
            return [
                DeviceProblem(
                    "key",
                    f"private key file {self.key_file} does not exist",
                    "give the path of the key (relative to the site file), or leave key out "
                    "to use the SSH agent",
                )
            ]
        return []

    @property
    def endpoint(self) -> str:
        """host:port, as messages name the device."""
        return f"{self.host}:{self.port}"

    @property
    def address(self) -> str:
        """user@host:port, as authentication messages name the login."""
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def host_entry(self) -> str:
        """The host's name in known_hosts files: bare on port 22, else [host]:port."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"
