"""The OS sandbox of kode's read-only helpers (the grep worker, ``rg``): bubblewrap, read-only.

This module owns `helper_sandbox`, the `kode.trust.processes.Confinement` a helper that only
reads runs in: the sandbox of commands (`kode.trust.sandbox`) in ``read-only`` mode — the whole
file system read-only, the workspace too, a private ``/tmp``, the default hidden paths emptied,
no network, no Unix socket, its own PID namespace — started from ``/`` unless told otherwise. It
does not start anything (`kode.trust.processes.open_helper` does).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kode.trust.processes import python_paths
from kode.trust.sandbox import DEFAULT_HIDDEN_PATHS, Sandbox, sandbox_support_for, seccomp_fd

__all__ = ["HelperSandbox", "helper_sandbox"]

_PRIVATE = ("/tmp", "/var/tmp", "/run", "/var/run")
_log = logging.getLogger("kode.builtin.runtime")
_announced: set[str] = set()


@dataclass(kw_only=True, frozen=True, slots=True)
class HelperSandbox:
    """A read-only sandbox for one helper (a `kode.trust.processes.Confinement`)."""

    sandbox: Sandbox
    """The sandbox's settings (``read-only``, no network)."""

    def wrap(self, argv: Sequence[str], *, cwd: str = "/") -> tuple[list[str], tuple[int, ...]]:
        """`argv` run in the sandbox from `cwd`, and the system-call filter's descriptor."""
        fd = seccomp_fd()
        try:
            wrapped = self.sandbox.argv(list(argv), cwd=Path(cwd), seccomp=fd)
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        # No --die-with-parent: that signal follows the *thread* that started bubblewrap, and
        # trio starts processes in worker threads that end when idle. The helper ends with its
        # stdin instead (see kode.builtin.fs._grep_worker), or, for rg, with its output pipe.
        return wrapped, () if fd is None else (fd,)


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _announce(reason: str) -> None:
    if reason not in _announced:
        _announced.add(reason)
        _log.warning("kode: helpers run without the OS sandbox: %s.", reason)


def helper_sandbox(roots: Sequence[Path], program: str = "bwrap") -> HelperSandbox | None:
    """The read-only sandbox for a helper reading `roots`, or `None` where there is none.

    `None` (logged once per reason) when bubblewrap cannot run here, or when kode's own
    install lies where the sandbox mounts a private, empty directory (``/tmp``), so the
    helper would not find it; the helper then runs isolated (`kode.trust.processes`), but
    not sandboxed.
    """
    support = sandbox_support_for(program, roots)
    if not support.available or support.program is None:
        _announce(support.reason)
        return None
    # The sandbox binds these where they are under a private directory: the interpreter's
    # prefixes and kode's package (whose parent directories it makes, so kode's root is there).
    *paths, _ = python_paths(roots)
    bound = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)]
    for path in (os.path.realpath(p) for p in paths):
        if any(_under(path, p) for p in bound):
            continue
        if any(_under(path, p) for p in _PRIVATE):
            _announce(f"kode's install ({path}) is under a directory the sandbox makes private")
            return None
    return HelperSandbox(
        sandbox=Sandbox(
            program=support.program,
            mode="read-only",
            roots=tuple(roots),
            network=False,
            hidden=DEFAULT_HIDDEN_PATHS,
            user_namespace=support.user_namespace,
        )
    )
