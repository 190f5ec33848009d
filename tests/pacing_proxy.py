"""A pty proxy that splits, delays and coalesces bytes the way UARTs and USB adapters do.

The host opens :attr:`PacingProxy.path`; the proxy passes every byte to and
from the device's tty unchanged, but in pieces of random size (1 byte to
4 KiB), each after a random pause of up to ``max_delay`` seconds, so that
what one read returns starts and ends anywhere in a frame, and several frames
written apart arrive in one read. Nothing is lost or reordered: a correct
reader of the stream must see the same frames whatever the cuts.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import tty


class PacingProxy:
    """Between a host tty (``path``) and the device's fd; use as a context manager."""

    def __init__(
        self, device_fd: int, seed: int, max_delay: float = 0.004, own_fd: bool = False
    ) -> None:
        self.device_fd = device_fd
        self.own_fd = own_fd
        self.max_delay = max_delay
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self._threads = [
            threading.Thread(target=self._pump, args=(self.device_fd, self._master), daemon=True),
            threading.Thread(target=self._pump, args=(self._master, self.device_fd), daemon=True),
        ]
        self.pieces = 0

    @classmethod
    def to_tty(cls, device_path: str, seed: int, max_delay: float = 0.004) -> PacingProxy:
        """A proxy in front of a device tty given by path (the emulator's)."""
        fd = os.open(device_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd)
        return cls(fd, seed, max_delay, own_fd=True)

    def _size(self, rng: random.Random) -> int:
        # Log-uniform from 1 byte to 4 KiB: single bytes as often as whole bursts.
        return max(1, min(4096, int(2 ** rng.uniform(0, 12))))

    def _pump(self, src: int, dst: int) -> None:
        rng = random.Random(self._rng.random())
        held = bytearray()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([src], [], [], 0.0 if held else 0.05)
                if ready:
                    data = os.read(src, 1 << 16)
                    if not data:
                        return
                    held += data
            except OSError:
                return
            if not held:
                continue
            # A pause lets more bytes pile up behind (coalescing); a piece cuts anywhere.
            if rng.random() < 0.3:
                self._stop.wait(rng.uniform(0.0, self.max_delay))
                continue
            n = min(len(held), self._size(rng))
            view = memoryview(bytes(held[:n]))
            del held[:n]
            self.pieces += 1
            while view and not self._stop.is_set():
                try:
                    _, writable, _ = select.select([], [dst], [], 0.05)
                    if writable:
                        view = view[os.write(dst, view) :]
                except OSError:
                    return

    def __enter__(self) -> PacingProxy:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)
        for fd in (self._master, self._slave, *([self.device_fd] if self.own_fd else [])):
            with contextlib.suppress(OSError):
                os.close(fd)
