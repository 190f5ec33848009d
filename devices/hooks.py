"""The hooks a participant fills in; everything else of the device agent is fixed.

An agent module (e.g. ``examples.devices.sphinx_command``) defines a class
following :class:`Recognizer` and a function ``make_recognizer()`` returning
one. ``python -m devices.agent`` and ``python -m devices.emulator`` load it by
module path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Recognizer(Protocol):
    """What the agent core needs from a participant's recognizer.

    ``name`` and ``version`` identify the system in READY; ``sample_rates``
    lists the PCM rates ``recognize`` accepts (items at other rates are
    refused before any audio is sent). The core calls ``load`` once per
    session, before any item, and ``recognize`` once per item; it never
    calls them concurrently. Raising an exception answers with ERROR.
    """

    name: str
    version: str
    sample_rates: tuple[int, ...]

    def load(self, vocabulary: Sequence[str]) -> None:
        """Load the model, restricted to ``vocabulary`` (one command per entry) if not empty."""
        ...

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        """Recognise signed 16-bit little-endian mono PCM and return the text."""
        ...


RecognizerFactory = Callable[[], Recognizer]


def load_agent(module_path: str) -> RecognizerFactory:
    """``make_recognizer`` of the agent module at ``module_path`` (dotted, importable)."""
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise ValueError(f"cannot import agent module {module_path!r}: {exc}") from exc
    factory = getattr(module, "make_recognizer", None)
    if not callable(factory):
        raise ValueError(
            f"agent module {module_path!r} has no make_recognizer(); define "
            "make_recognizer() -> Recognizer (see devices/hooks.py)"
        )
    return factory
