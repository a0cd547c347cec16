"""Start a process kode runs for itself: isolated, from a directory and environment kode chooses.

This module owns how kode starts its helpers (the grep worker, ``rg``, the commands'
supervisor): the command line of an isolated Python worker (`python_command`), the environment
(`helper_environment`), the working directory (`helper_directory`) and the start itself
(`open_helper`), optionally inside an OS sandbox (a `Confinement`, which
`kode.trust.confine` makes from bubblewrap). Which programs may run is
`kode.trust.executables`'s.

A Python worker runs as ``python -I -S -c CODE``: no ``PYTHON*`` variable, no user site, no
working directory or script directory on ``sys.path``, and no ``site`` module, so no ``.pth``
file of any site-packages (a workspace ``.venv``'s included) and no ``sitecustomize`` or
``usercustomize`` is processed. Its ``sys.path`` is the standard library's, then kode's own
install (`python_paths`): the directories this process imported its dependencies and kode
from, without any under the workspace (but the environment kode runs from), its working
directory or ``''``; before anything else it imports ``kode`` from kode's own directory alone
and checks it is the package this process runs. A file the model writes into the workspace
(``kode.py``, ``sitecustomize.py``, a ``.pth``) is therefore never imported by a worker.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import Process

from kode.trust import executables

__all__ = [
    "HELPER_ENVIRONMENT",
    "SAFE_PATH",
    "Confinement",
    "HelperError",
    "helper_directory",
    "helper_environment",
    "open_helper",
    "python_command",
    "python_paths",
]

HELPER_ENVIRONMENT: tuple[str, ...] = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""The variables of the kode process a helper gets (besides ``PATH``, always `SAFE_PATH`)."""
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The ``PATH`` of a helper: system directories only."""

# kode/trust/processes.py -> the directory holding the imported `kode` package.
_KODE_ROOT = str(Path(__file__).resolve().parents[2])
_STARTED_IN = os.getcwd()


class HelperError(RuntimeError):
    """A helper cannot be started safely (no trusted interpreter, say)."""


class Confinement(Protocol):
    """An OS sandbox for a helper that only reads (`kode.trust.confine` makes one)."""

    def wrap(self, argv: Sequence[str], *, cwd: str = "/") -> tuple[list[str], tuple[int, ...]]:
        """`argv` run inside the sandbox from `cwd`, and descriptors the child must inherit.

        The caller closes the descriptors once the child has started (or failed to).
        """
        ...


def helper_environment(
    allow: Iterable[str] = (), values: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a helper, scrubbed.

    `SAFE_PATH`, `HELPER_ENVIRONMENT` and `allow` of this process's variables, then
    `values`. API keys, ``PYTHONPATH``, ``LD_PRELOAD``, ``RIPGREP_CONFIG_PATH`` and the rest
    are not passed on.
    """
    env = {"PATH": SAFE_PATH}
    for name in (*HELPER_ENVIRONMENT, *allow):
        value = os.environ.get(name)
        if value is not None:
            env[name] = value
    env.update(values or {})
    return env


_directory: list[str] = []
_directory_lock = threading.Lock()


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def helper_directory() -> str:
    """A directory of kode's own, outside any workspace, for helpers to start in.

    Made once per process (mode 0700, in the system's temporary directory), removed at exit.
    """
    with _directory_lock:
        if not _directory or not os.path.isdir(_directory[0]):
            _directory[:] = [tempfile.mkdtemp(prefix="kode-helpers-")]
            atexit.register(_remove, _directory[0])
        return _directory[0]


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _environment_dirs() -> list[str]:
    """The environments kode runs from (``sys.prefix``, and the one it is a venv of)."""
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)})


def python_paths(roots: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """The directories of kode's own install: a worker's ``sys.path`` after the stdlib's.

    This process's ``sys.path`` entries that are absolute directories, in order, without
    the one Python put first (the script's directory, or the working directory for ``-m``
    and ``-c``: the application's, not kode's), the directory it started in, and any under
    `roots` (the workspace) but those of the environment kode runs from (an in-project
    ``.venv`` is kode's install: its ``.pth`` files are not processed, ``-S``); then the
    directory holding the ``kode`` package, always and last (a module planted next to it
    cannot shadow a dependency).
    """
    bases = [os.path.realpath(r) for r in roots]
    bases += [os.path.abspath(r) for r in roots]
    environments = _environment_dirs()
    found: list[str] = []
    first = 0 if sys.flags.isolated or getattr(sys.flags, "safe_path", False) else 1
    for entry in sys.path[first:]:
        if not entry or not os.path.isabs(entry) or entry in found:
            continue
        real = os.path.realpath(entry)
        if real in (_KODE_ROOT, os.path.realpath(_STARTED_IN)) or not os.path.isdir(real):
            continue
        if any(_under(real, e) for e in environments):
            found.append(entry)
        elif not any(_under(entry, b) or _under(real, b) for b in bases if b != "/"):
            found.append(entry)
    return [*found, _KODE_ROOT]


def python_command(
    code: str,
    *args: str,
    roots: Sequence[str | os.PathLike[str]] = (),
    kode: bool = True,
) -> list[str]:
    """The command line running `code` in an isolated Python worker (see the module's notes).

    Before `code` runs, the worker imports the ``kode`` package (its ``__init__`` imports
    nothing) from kode's own directory alone, and checks it is the one this process runs: a
    ``kode.py`` anywhere on its path cannot stand in for it. Only then are the other import
    paths added; kode's modules are found through the package, not through ``sys.path``.

    Args:
        code: The worker's code (kode's own, never a model's).
        *args: Its ``sys.argv[1:]``.
        roots: The workspace's roots: no import path under them, but kode's own.
        kode: Import and check the ``kode`` package first (`False` for code that does not
            use it).

    Raises:
        HelperError: no trusted interpreter was found.
    """
    interpreter = executables.python(roots)
    if interpreter.path is None:
        raise HelperError(
            "kode found no trusted Python interpreter for its worker process: "
            + interpreter.describe()
        )
    *paths, root = python_paths(roots)
    origin = os.path.realpath(os.path.join(root, "kode", "__init__.py"))
    prelude = "import sys, os\n"
    if kode:
        prelude += (
            f"sys.path.append({root!r})\n"
            "import kode\n"
            f"if os.path.realpath(kode.__file__ or '') != {origin!r}:\n"
            f"    sys.exit('kode: the worker imported kode from ' + str(kode.__file__))\n"
            f"sys.path.remove({root!r})\n"
        )
    prelude += f"sys.path.extend({[*paths, root]!r})\n"
    return [interpreter.path, "-I", "-S", "-c", prelude + code, *args]


async def open_helper(
    argv: Sequence[str],
    *,
    confine: Confinement | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: int | None = subprocess.PIPE,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
) -> Process:
    """Start a helper, in `confine`'s sandbox when one is given.

    It starts from `cwd` (default `helper_directory`, or ``/`` in the sandbox), with `env`
    (default `helper_environment`).

    A `cwd` in the workspace is for a program that reads nothing from its working directory
    (``rg --no-config --no-ignore``), never for an interpreter.

    Raises:
        OSError: the program could not be started.
    """
    fds: tuple[int, ...] = ()
    command = list(argv)
    if confine is not None:
        command, fds = confine.wrap(command, cwd=cwd or "/")
    options: dict[str, Any] = {"pass_fds": fds} if fds else {}
    try:
        return await anyio.open_process(
            command,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd if cwd is not None else helper_directory(),
            env=dict(env) if env is not None else helper_environment(),
            **options,
        )
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
