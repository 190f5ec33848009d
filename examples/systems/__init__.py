"""Example participant systems speaking the onsite serve/exec protocols.

Run them from examples/ (the demo's workdir) as ``python -m systems.NAME``; from the
repository root, where tests import them, ``python -m examples.systems.NAME`` works
too: imports inside this package are relative.
"""
