"""Embedded devices on a serial line: wire protocol, device-side agent, emulator.

This package imports nothing else of the project. Its contents arrive with the
serial-device issue; the package exists now so that the import direction
(runners -> devices) is fixed from the start.
"""

__all__: list[str] = []
