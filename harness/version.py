"""The installed onsite's version (``onsite --version``, the run manifest): ``harness.__version__``.

A module of its own so that the package's every public name loads the same way (lazily,
``lazy_exports``): package metadata costs tens of milliseconds to read.
"""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]


def _version() -> str:
    try:
        return version("onsite-eval")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0+source"


__version__ = _version()
