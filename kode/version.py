"""kode's version: the one number, and what the installed distribution says.

This module owns `__version__` (the number in a source tree, kept equal to pyproject.toml's by a
test) and `installed_version`, which the ``kode --version`` command and ``kode mcp serve`` (the
server's ``serverInfo``) report. It imports nothing of kode, so every layer may use it; the
package's face (`kode.__version__`) re-exports the number.
"""

from __future__ import annotations

from kode.extras import DISTRIBUTION

__all__ = ["__version__", "installed_version"]

__version__ = "0.1.0"
"""kode's version in this source tree."""


def installed_version() -> str:
    """The installed kode's version: its distribution's, else `__version__`.

    `importlib.metadata` is imported here, when asked (it is slow to load).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree, or an older distribution name
        return __version__
