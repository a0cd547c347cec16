"""``python -m kode.cli``: the ``kode`` command (`kode.cli.main`), as ``python -m kode`` is."""

from __future__ import annotations

import sys

from kode.cli import main

if __name__ == "__main__":
    sys.exit(main())
