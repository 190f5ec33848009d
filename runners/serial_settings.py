"""The ``serial`` transport's device settings: what the site file's ``[devices.NAME]`` with
``transport = "serial"`` may say (docs/device-protocol.md).

Apart from the registration (runners/serial_device.py), which opens the runner lazily, and
from the runner (runners/serial_runner.py), which takes these settings: both import this
module, and neither imports the other at load time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveFloat, model_validator

from .transport import DeviceSettings

ResetLine = Literal["dtr", "rts", "none"]


class SerialDevice(DeviceSettings):
    """A PDA or embedded board on a serial line (docs/device-protocol.md): the site file's
    ``[devices.NAME]`` with ``transport = "serial"``."""

    transport: Literal["serial"] = "serial"
    port: str = ""  # a path such as /dev/ttyUSB0, or a pyserial URL
    baud: Annotated[int, Field(gt=0)] = 115200
    reset: ResetLine = "dtr"  # the line pulsed for a hard reset
    boot_timeout: PositiveFloat = 10.0
    # Run this device-agent module under the pty emulator instead of opening a port.
    emulate: str | None = None
    emulate_args: list[str] = []
    # Or run this device program (with "{port}" for its tty) behind the emulated line.
    emulate_command: list[str] = []
    # No frame at all from a working device for this long means the link is lost.
    silence_seconds: PositiveFloat = 3.0
    ping_seconds: PositiveFloat = 0.5
    max_window: Annotated[int, Field(ge=1)] = 3

    @model_validator(mode="after")
    def _port_or_emulator(self) -> SerialDevice:
        if not self.port and not self.emulate and not self.emulate_command:
            raise ValueError(
                'give port = "/dev/ttyUSB0" (or emulate = "<agent module>", or '
                'emulate_command = ["./mydevice", "{port}"])'
            )
        if self.emulate and self.emulate_command:
            raise ValueError("give emulate or emulate_command, not both")
        if self.emulate_command and not any("{port}" in a for a in self.emulate_command):
            raise ValueError('emulate_command must name the device\'s tty as "{port}"')
        return self
