"""Tests that need a program of the system: skip with the package named, or pick the right outcome.

Some of kode's tests drive programs that no Python package brings on every machine: ripgrep
(``rg``), bubblewrap (``bwrap``, the sandbox of ``bash_run``), Chromium, Node.js with npm,
PostgreSQL's server. Where one is missing, a test that needs it is skipped with a reason
naming the package that brings it (`requires_program`), never failed.

For the sandbox the question is not whether ``bwrap`` is on ``PATH`` but whether kode can make a
sandbox here (`sandbox_here`, kode's own probe): bubblewrap may come from elsewhere, or be
installed where the kernel refuses it namespaces. A test of what commands do, not of the
sandbox, runs its commands under `runnable` (the policy as it is where kode can sandbox, and
unconfined on purpose where it cannot, since the policy would ask for every command there); a
test of the sandbox itself is marked `requires_sandbox`.

Example:
    ```python {.no-run}
    from kode.testing.programs import requires_program, requires_sandbox

    @requires_program("node", package="nodejs")
    def test_with_node() -> None: ...

    @requires_sandbox()
    def test_inside_the_sandbox() -> None: ...
    ```
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

from kode.builtin.runtime import RuntimePolicy, SandboxSupport
from kode.trust.sandbox import sandbox_support_for

__all__ = [
    "missing_program",
    "requires_program",
    "requires_sandbox",
    "runnable",
    "sandbox_here",
]


def missing_program(program: str, *, package: str, needed_for: str = "") -> str:
    """The reason a test skips when `program` is missing: it names the package to install."""
    why = f" ({needed_for})" if needed_for else ""
    return (
        f"{program} is not installed{why}: install the package {package!r} (Debian and Ubuntu: "
        f"apt-get install {package})"
    )


def requires_program(
    program: str, *, package: str, found: str | bool | None = True, needed_for: str = ""
) -> pytest.MarkDecorator:
    """A mark that skips a test where `program` is missing, naming `package`.

    Args:
        program: The executable's name, looked up on ``PATH``.
        package: The system package that brings it (Debian's name).
        found: Where kode itself found the program, when kode looks elsewhere than ``PATH``
            (e.g. ``KODE_RG`` for ripgrep): a path, or `None` for not found. By default the
            program is looked up on ``PATH``.
        needed_for: What the test needs it for, as the reason says it.
    """
    where = shutil.which(program) if found is True else found
    return pytest.mark.skipif(
        not where, reason=missing_program(program, package=package, needed_for=needed_for)
    )


def sandbox_here(
    policy: RuntimePolicy | None = None, *, workspace: str | os.PathLike[str] | None = None
) -> SandboxSupport:
    """Whether kode can sandbox ``bash_run``'s commands here: kode's own probe, run once.

    Args:
        policy: The policy whose bubblewrap is asked about (default: a default policy's).
        workspace: The directory the commands work in (default: the current directory).
    """
    # As bash_run asks it for a command run in the workspace: one that holds the bubblewrap
    # in use (a checkout with its .venv, for the current directory) gets no sandbox.
    where = os.getcwd() if workspace is None else os.fspath(workspace)
    return sandbox_support_for((policy or RuntimePolicy()).bwrap, (where,))


def requires_sandbox(
    policy: RuntimePolicy | None = None, *, workspace: str | os.PathLike[str] | None = None
) -> pytest.MarkDecorator:
    """A mark that skips a test where kode cannot sandbox commands, saying why.

    Args:
        policy: The policy whose bubblewrap is asked about (default: a default policy's).
        workspace: The directory the test's commands work in (default: the current
            directory): a test whose workspaces are elsewhere (in a temporary directory) is
            not skipped because the bubblewrap in use lives under the current directory.
    """
    support = sandbox_here(policy, workspace=workspace)
    return pytest.mark.skipif(
        not support.available, reason=f"kode cannot make an OS sandbox here: {support.reason}"
    )


def runnable(policy: RuntimePolicy) -> RuntimePolicy:
    """`policy`, with its sandbox off where kode cannot make one here.

    For a test of what commands do (their output, exit status, processes), not of the
    sandbox: where no sandbox can be had, a policy that wants one asks for every command off
    the safe list, so the test runs them unconfined on purpose (``sandbox="off"``) instead.
    """
    if policy.sandbox == "off" or sandbox_here(policy).available:
        return policy
    return replace(policy, sandbox="off")
