"""How to install an optional part of kode: the one sentence every "needs an extra" message uses.

This module owns the install hint: what a user types to get an extra (``web``, ``openai``, ...)
today. The distribution ``kode-sdk`` is not published on PyPI yet, so ``pip install
'kode-sdk[web]'`` finds nothing; what works is installing from a checkout of the repository, or
from its git URL (README.md shows both). When the distribution is published, this is the one
place to change. It imports nothing of kode, so every layer may use it.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint"]

DISTRIBUTION = "kode-sdk"
"""The name of kode's distribution (the import name ``kode`` is another project's on PyPI)."""


def install_hint(*extras: str) -> str:
    """The command that installs `extras`, as a message ends with it.

    Example:
        ```python
        from kode.extras import install_hint

        assert install_hint("web").startswith("pip install -e '.[web]'")
        ```

    Raises:
        ValueError: no extra, or a name that cannot be an extra's.
    """
    if not extras or any(not e or not e.replace("-", "").isalnum() for e in extras):
        raise ValueError(f"install_hint needs the names of extras, got {extras!r}")
    names = ",".join(extras)
    return (
        f"pip install -e '.[{names}]' in a checkout of kode, or pip install "
        f"'{DISTRIBUTION}[{names}] @ git+<repository URL>' ({DISTRIBUTION} is not on "
        "PyPI yet)"
    )
