"""The system-call filter of sandboxed commands (seccomp, classic BPF), on x86-64 and arm64.

This module owns which system calls a sandboxed ``bash_run`` command may make: `seccomp_program`
assembles the filter (refusing io_uring, every socket family but the network's and netlink, and
`REFUSED_CALLS`), `seccomp_fd` hands it to bubblewrap's ``--seccomp``. It does not decide what
runs sandboxed or mount anything (`kode.trust.sandbox`).
"""

from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass

__all__ = [
    "IO_URING_CALLS",
    "REFUSED_CALLS",
    "SOCKET_FAMILIES",
    "seccomp_fd",
    "seccomp_program",
]


# struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, over struct seccomp_data {int nr; u32 arch;
# u64 ip; u64 args[6]}: the low half of args[0] is at offset 16 on little-endian machines.
_LD = 0x20  # BPF_LD | BPF_W | BPF_ABS, at one of these offsets:
_NR, _ARCH, _ARG0 = 0, 4, 16
_JEQ = 0x15
_JSET = 0x45
_RET = 0x06
_ALLOW = 0x7FFF0000
_KILL = 0x80000000
_EPERM = 0x00050000 | 1
_ENOSYS = 0x00050000 | 38

SOCKET_FAMILIES: dict[str, int] = {"AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16}
"""The only address families a sandboxed command may make a socket of: the network (its own
namespace's, with only a loopback unless the policy allows the network) and netlink (which the
C library's name lookups use, and which only sees the command's own network namespace). Every
other family is refused with EPERM: Unix-domain sockets (they would reach sockets outside the
sandbox by path: Docker's, a desktop's, a database's), ``AF_VSOCK`` (a virtual machine's host,
which network namespaces do not separate), ``AF_PACKET``, ``AF_ALG`` (the kernel's crypto),
``AF_KEY``, ``AF_XDP``, Bluetooth, CAN, TIPC, RDS and the rest."""


@dataclass(kw_only=True, frozen=True, slots=True)
class _Arch:
    """The system-call numbers the filter needs, for one ABI."""

    audit: int
    """``AUDIT_ARCH_*``: what ``seccomp_data.arch`` holds for calls of this ABI."""
    socket: int
    """``socket``: allowed for `SOCKET_FAMILIES` only."""
    refused: tuple[int, ...]
    """Calls refused with EPERM (see `REFUSED_CALLS`), in this ABI's numbers."""
    x32: int = 0
    """The bit that marks an x32 call (x86-64 only): such calls are killed."""


# Numbers of the calls of REFUSED_CALLS after io_uring's, in that order. io_uring (425-427) and
# every call from 428 on have the same numbers in all four ABIs.
_NEW_CALLS = (428, 429, 430, 431, 432, 433, 438, 442, 467)
_ARCHES: dict[str, tuple[_Arch, ...]] = {
    "x86_64": (
        _Arch(
            audit=0xC000003E,
            socket=41,
            refused=(248, 249, 250, 321, 323, 101, 310, 311, 298, 304, 165, 166, 155, 272, 308),
            x32=0x40000000,
        ),
        _Arch(  # i386 programs; socketcall (102) multiplexes every socket call: refused whole
            audit=0x40000003,
            socket=359,
            refused=(286, 287, 288, 357, 374, 26, 347, 348, 336, 342, 21, 52, 217, 310, 346, 102),
        ),
    ),
    "aarch64": (
        _Arch(
            audit=0xC00000B7,
            socket=198,
            refused=(217, 218, 219, 280, 282, 117, 270, 271, 241, 265, 40, 39, 41, 97, 268),
        ),
        _Arch(  # 32-bit ARM programs
            audit=0x40000028,
            socket=281,
            refused=(309, 310, 311, 386, 388, 26, 376, 377, 364, 371, 21, 52, 218, 337, 375, 102),
        ),
    ),
}
_IO_URING = (425, 426, 427)

IO_URING_CALLS: tuple[str, ...] = ("io_uring_setup", "io_uring_enter", "io_uring_register")
"""Refused with ENOSYS, as on a kernel built without io_uring: its ``IORING_OP_SOCKET``,
``IORING_OP_CONNECT``, ``IORING_OP_OPENAT`` and the rest make sockets and open files inside the
kernel, where a filter on system calls cannot see them. ENOSYS rather than EPERM because every
program that uses io_uring (libuv, liburing's users, tokio-uring) must already fall back to
plain system calls on such kernels, and they do it on ENOSYS."""

REFUSED_CALLS: tuple[str, ...] = (
    "add_key",
    "request_key",
    "keyctl",
    "bpf",
    "userfaultfd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "perf_event_open",
    "open_by_handle_at",
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "pidfd_getfd",
    "mount_setattr",
    "open_tree_attr",
)
"""Refused with EPERM (on 32-bit x86 ``socketcall`` too): calls a command of a build or a test
does not need, each of which reaches past what the sandbox's namespaces separate, or is a
common way into the kernel's bugs: the kernel keyrings (shared with the user's session);
loading BPF programs; ``userfaultfd``; reading or writing another process's memory or taking
its descriptors (``ptrace``, so ``strace`` and ``gdb`` do not work sandboxed;
``process_vm_*``; ``pidfd_getfd``); ``perf_event_open``; opening a file by handle (which
skips paths, and so the mounts that hide them); and mounting, old API and new, and entering
or making namespaces. Most would fail anyway without capabilities; refusing them here does
not depend on that."""


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter a sandboxed command runs under (`None` on an architecture it does not know).

    It refuses `IO_URING_CALLS` with ENOSYS, `REFUSED_CALLS` with EPERM, and a ``socket``
    of any family but `SOCKET_FAMILIES` with EPERM; it kills x32-ABI calls on x86-64;
    everything else is allowed. x86-64 with its i386 ABI and arm64 with its 32-bit ARM ABI are
    known; a call of another ABI is allowed, as no such program can run there.
    """
    arches = _ARCHES.get(machine or platform.machine())
    if arches is None:
        return None
    # Assembled with labels, then jump offsets resolved (cBPF jumps only forward).
    code: list[tuple[int, int | str, int | str, int]] = [(_LD, 0, 0, _ARCH)]
    for index, arch in enumerate(arches):
        code.append((_JEQ, f"arch{index}", 0, arch.audit))
    code.append((_RET, 0, 0, _ALLOW))
    labels: dict[str, int] = {}
    for index, arch in enumerate(arches):
        labels[f"arch{index}"] = len(code)
        code.append((_LD, 0, 0, _NR))
        if arch.x32:
            code.append((_JSET, "kill", 0, arch.x32))
        for call in _IO_URING:
            code.append((_JEQ, "enosys", 0, call))
        for call in (*arch.refused, *_NEW_CALLS):
            code.append((_JEQ, "deny", 0, call))
        code.append((_JEQ, 0, "allow", arch.socket))
        code.append((_LD, 0, 0, _ARG0))
        for family in SOCKET_FAMILIES.values():
            code.append((_JEQ, "allow", 0, family))
        code.append((_RET, 0, 0, _EPERM))
    for label, action in (
        ("allow", _ALLOW),
        ("deny", _EPERM),
        ("enosys", _ENOSYS),
        ("kill", _KILL),
    ):
        labels[label] = len(code)
        code.append((_RET, 0, 0, action))

    def offset(at: int, target: int | str) -> int:
        jump = target if isinstance(target, int) else labels[target] - at - 1
        assert 0 <= jump < 256, "a cBPF jump reaches 255 instructions at most"
        return jump

    return b"".join(
        struct.pack("=HBBI", op, offset(at, jt), offset(at, jf), k)
        for at, (op, jt, jf, k) in enumerate(code)
    )


def seccomp_fd() -> int | None:
    """A descriptor holding `seccomp_program`, for bubblewrap's ``--seccomp``.

    The caller closes it once bubblewrap has started. `None`: no filter for this machine.
    """
    program = seccomp_program()
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
