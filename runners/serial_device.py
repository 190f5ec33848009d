"""The ``serial`` transport's registration: a PDA or embedded board on a serial line
(docs/device-protocol.md); its settings are runners/serial_settings.py.

Kept apart from runners/serial_runner.py (pyserial, soundfile, devices/) so that reading
a site file or a run directory does not load them: ``open`` imports the runner when a
system is started.
"""

from __future__ import annotations

from .base import Runner, SystemSpec
from .serial_settings import SerialDevice
from .transport import Transport, facts_not_collected


def _open_serial(spec: SystemSpec, device: SerialDevice) -> Runner:
    from .serial_runner import SerialRunner

    return SerialRunner(spec, device)


TRANSPORT = (
    Transport(
        settings=SerialDevice,
        open=_open_serial,
        modes=frozenset({"serve"}),
        host_facts=facts_not_collected,
        # The device's agent is the system: the site names no command to start.
        needs_command=False,
        # The device protocol has no frames for a file going upstream.
        returns_files=False,
    )
)
