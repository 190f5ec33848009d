"""The ``ssh`` transport's registration: a participant's own machine, reached over SSH
(docs/ssh.md). Its settings are runners/ssh_settings.py.

Kept apart from runners/ssh.py and runners/ssh_link.py (paramiko) so that reading a
site file or a run directory does not load them: ``open`` and ``probe`` import the
runner when a system is started or a machine is checked.
"""

from __future__ import annotations

from .base import Runner, SystemSpec
from .ssh_settings import SshDevice
from .transport import CheckStep, Transport, facts_not_collected

__all__ = ["TRANSPORT", "SshDevice"]


def _open_ssh(spec: SystemSpec, device: SshDevice) -> Runner:
    from .ssh import SshServeRunner

    return SshServeRunner(spec, device)


def _probe_ssh(device: SshDevice) -> list[CheckStep]:
    from .ssh import probe

    return probe(device)


TRANSPORT = (
    Transport(
        settings=SshDevice,
        open=_open_ssh,
        modes=frozenset({"serve"}),
        host_facts=facts_not_collected,
        probe=_probe_ssh,
    )
)
