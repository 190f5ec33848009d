"""The command line (`onsite ...`): the parser and one module per command; it renders with rich
on a terminal and plainly otherwise. The entry point is ``harness.cli.main:main``.

``from harness.cli import main`` is that function (loaded on first use, like every
package's public names: lazy_exports); the module is ``harness.cli.main`` in ``sys.modules``.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.cli.main import build_parser, main

__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(("build_parser", "main"), ".main"))

__all__ = ["build_parser", "main"]
