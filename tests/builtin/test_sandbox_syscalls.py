"""Sockets and refused system calls, tried from a compiled program inside the sandbox.

A C program (``seccomp_attempts.c``, compiled with gcc inside the sandbox by a ``bash_run`` that
skipped approval) tries every way found to make or reach a socket: io_uring's
``IORING_OP_SOCKET`` and ``IORING_OP_CONNECT``, ``socket`` by libc and by raw system call (with
high bits in the family), the i386 ABI's ``socketcall`` and ``socket`` through ``int 0x80``, the
x32 ABI, every address family that is not the network's, and each call of `REFUSED_CALLS`. The
Unix socket it aims at is one the test listens on outside the workspace, at a path the sandbox
can see; nothing may arrive. The control runs the same program outside the sandbox: there it
gets through, so the detector works.
"""

from __future__ import annotations

import errno
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode import ToolContext
from kode.builtin.runtime import (
    IO_URING_CALLS,
    REFUSED_CALLS,
    ProcessManager,
    RuntimePolicy,
    bash_run,
    sandbox_support,
)
from kode.testing.programs import requires_sandbox
from kode.tools.results import ToolResult
from kode.tools.workspace import Workspace

BASE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kode-sandbox-tests"

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    # kode's probe, for where these tests' workspaces are: bubblewrap may come from the
    # `sandbox` extra's wheel rather than PATH.
    requires_sandbox(workspace=BASE),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc compiles the attempts"),
    pytest.mark.skipif(
        platform.machine() not in ("x86_64", "aarch64"),
        reason="the system-call filter knows x86-64 and arm64 only",
    ),
]

TOKEN = secrets.token_hex(6)
SOURCE = Path(__file__).with_name("seccomp_attempts.c")

UNIX_SOCKET_ATTEMPTS = (
    "io_uring_setup",
    "socket_unix",
    "syscall_socket_unix",
    "socket_unix_high_bits",
    "i386_socketcall_socket",
    "i386_socket_unix",
)
OTHER_FAMILIES = (
    "socket_packet",
    "socket_vsock",
    "socket_alg",
    "socket_key",
    "socket_xdp",
    "socket_bluetooth",
    "socket_can",
    "socket_tipc",
    "socket_rds",
    "socket_qipcrtr",
)


@dataclass
class World:
    ws: Path
    outside: Path
    listener: socket.socket
    hits: list[bytes] = field(default_factory=list)
    results: dict[str, tuple[int, int]] = field(default_factory=dict)
    output: str = ""

    def run(self, command: str, **changes: Any) -> ToolResult:
        async def call() -> ToolResult:
            ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=self.ws))
            ctx.services["runtime_policy"] = RuntimePolicy(security="full", ask="off", **changes)
            try:
                return await bash_run.run({"command": command, "timeout": 120}, ctx)
            finally:
                manager = ctx.services.get("processes")
                if isinstance(manager, ProcessManager):
                    await manager.aclose()

        return anyio.run(call)


def _serve(world: World, stop: threading.Event) -> None:
    world.listener.settimeout(0.05)
    while not stop.is_set():
        try:
            conn, _ = world.listener.accept()
        except OSError:
            continue
        with conn:
            conn.settimeout(1)
            try:
                world.hits.append(conn.recv(100))
            except OSError:
                world.hits.append(b"connected")


def parse(text: str) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit() and parts[2].isdigit():
            found[parts[0]] = (int(parts[1]), int(parts[2]))
    return found


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    support = sandbox_support()
    assert support.available, f"bubblewrap is installed but cannot sandbox here: {support.reason}"
    root = BASE / f"syscalls-{TOKEN}"
    ws, outside, home = root / "ws", root / "outside", root / "home"
    for made in (ws, outside, home):
        made.mkdir(parents=True)
    shutil.copy(SOURCE, ws / "attempts.c")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(outside / "l.sock"))
    listener.listen(16)
    made = World(ws=ws, outside=outside, listener=listener)
    stop = threading.Event()
    server = threading.Thread(target=_serve, args=(made, stop), daemon=True)
    server.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))
            target = str(outside / "l.sock")
            result = made.run(
                "gcc -O1 -o attempts attempts.c && ./attempts "
                + target
                # what the command can see: the socket's path, and no socket descriptor at all
                + f" && test -S {target} && echo socket-visible"
                + " && for f in /proc/[0-9]*/fd/*; do readlink $f; done | grep -c socket:"
                + " ; echo fds-checked"
            )
            assert result.details["sandboxed"], result.text
            time.sleep(0.3)  # anything that got through has been accepted by now
            made.output = result.text
            made.results = parse(result.text)
            yield made
    finally:
        stop.set()
        server.join(5)
        listener.close()
        shutil.rmtree(root, ignore_errors=True)


def test_the_program_ran_and_the_target_was_in_sight(world: World) -> None:
    assert "socket-visible" in world.output, world.output
    assert "fds-checked" in world.output, world.output
    assert "ptrace" in world.results, world.output


def test_no_descriptor_of_a_socket_reaches_the_command(world: World) -> None:
    """No socket is passed in, so none can be connected or passed on (``SCM_RIGHTS``)."""
    counted = world.output.split("socket-visible", 1)[1].split("fds-checked", 1)[0].split()
    assert counted == ["0"], world.output


@pytest.mark.parametrize("attempt", UNIX_SOCKET_ATTEMPTS + OTHER_FAMILIES)
def test_no_socket_but_the_networks(world: World, attempt: str) -> None:
    if attempt.startswith("i386") and platform.machine() != "x86_64":
        pytest.skip("the i386 ABI is x86-64's")
    if attempt.startswith("i386") and world.results.get("i386_getpid", (-1, 0))[0] < 0:
        pytest.skip("this kernel runs no i386 programs (no IA32 emulation)")
    expected = errno.ENOSYS if attempt.startswith("io_uring") else errno.EPERM
    assert world.results[attempt] == (-1, expected), world.output


def test_nothing_arrives_at_the_unix_socket_outside(world: World) -> None:
    assert world.hits == [], world.output


def test_x32_calls_are_killed(world: World) -> None:
    if platform.machine() != "x86_64":
        pytest.skip("the x32 ABI is x86-64's")
    assert world.results["x32_socket"] == (signal.SIGSYS, 0), world.output


@pytest.mark.parametrize("call", IO_URING_CALLS)
def test_io_uring_is_not_there(world: World, call: str) -> None:
    assert world.results[call] == (-1, errno.ENOSYS), world.output


@pytest.mark.parametrize("call", REFUSED_CALLS)
def test_refused_calls(world: World, call: str) -> None:
    if call == "open_tree_attr":
        pytest.skip("too new for the C library's headers here; refused by number")
    assert world.results[call] == (-1, errno.EPERM), world.output


def test_what_a_command_needs_still_works(world: World) -> None:
    """The network's sockets, netlink (name lookups) and a socket pair are not refused."""
    for allowed in ("socket_inet", "socket_netlink", "socketpair_unix"):
        assert world.results[allowed][0] >= 0, world.output
    assert world.results["socketpair_connect"][0] == -1  # a pair's end reaches nothing else


def test_node_falls_back_from_io_uring(world: World) -> None:
    """libuv tries io_uring for file operations; on ENOSYS it uses plain calls."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    result = world.run(
        "node -e \"const fs = require('fs'); fs.writeFile('n.txt', 'ok', e => "
        "fs.readFile('n.txt', 'utf8', (e2, d) => console.log(e || e2 || 'node ' + d)))\""
    )
    assert result.details["sandboxed"]
    assert "node ok" in result.text, result.text


def test_control_outside_the_sandbox_the_program_gets_through(world: World) -> None:
    """The same program, not sandboxed, reaches the listener: io_uring's way among them."""
    world.hits.clear()
    done = subprocess.run(
        [str(world.ws / "attempts"), str(world.outside / "l.sock")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    deadline = time.monotonic() + 5
    while len(world.hits) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    outside = parse(done.stdout)
    try:
        if outside["io_uring_setup"][0] >= 0:  # a kernel with io_uring
            assert b"escaped-io_uring" in world.hits, done.stdout
        assert b"escaped-socket_unix" in world.hits
        assert outside["ptrace"] == (0, 0)
    finally:
        world.hits.clear()
