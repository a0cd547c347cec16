"""Escapes attempted from inside commands that skipped approval: none may succeed.

Every attempt runs in a real ``bash_run`` command under a policy that lets any command run
without asking (``security="full", ask="off"``), so each one runs in the OS sandbox: writing
outside the workspace, reading hidden paths, reaching a listener the test opens, leaving a
process running after the command ends (or is killed), signalling or seeing processes outside,
leaving the sandbox's namespaces, and tampering with the supervisor. Attempts are batched into
a few commands; each is then judged on its own, from outside, by what it would have left: a
file, a change, a connection, a signal, a process, a secret in the output. The controls at the
end run the same detectors where the sandbox is off or allows it, and must see something.

Files live under the user's cache directory, not /tmp: the sandbox replaces /tmp with a
private one, so anything there would be out of reach whatever else the sandbox did.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kode import ToolContext
from kode.builtin.runtime import (
    DEFAULT_HIDDEN_PATHS,
    ProcessManager,
    RuntimePolicy,
    bash_kill,
    bash_run,
    sandbox_support,
)
from kode.testing.programs import requires_sandbox
from kode.tools.results import ToolResult
from kode.tools.workspace import Workspace

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]

PY = sys.executable
TOKEN = secrets.token_hex(6)
BASE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kode-sandbox-tests"


# --- the world the attempts run in ------------------------------------------------------------


@dataclass
class Listener:
    """A socket the test listens on; records whatever reaches it."""

    sock: socket.socket
    address: str
    hits: list[str] = field(default_factory=list)


@dataclass
class World:
    root: Path
    ws: Path
    outside: Path
    home: Path
    secrets: dict[str, str]  # path → the token in it
    canary: subprocess.Popen[bytes]
    canary_log: Path
    listeners: dict[str, Listener]
    kode_signals: list[int]
    outputs: dict[str, str] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def policy(self, **changes: Any) -> RuntimePolicy:
        settings: dict[str, Any] = dict(
            security="full",
            ask="off",
            max_output_chars=2_000_000,
            hidden_paths=(*DEFAULT_HIDDEN_PATHS, str(self.outside / "private"), "secret.env"),
        )
        settings.update(changes)
        return RuntimePolicy(**settings)

    def context(self, **changes: Any) -> ToolContext[None]:
        ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=self.ws))
        ctx.services["runtime_policy"] = self.policy(**changes)
        return ctx

    def run(self, command: str, *, timeout: float = 60, **changes: Any) -> ToolResult:
        async def call() -> ToolResult:
            ctx = self.context(**changes)
            try:
                return await bash_run.run({"command": command, "timeout": timeout}, ctx)
            finally:
                manager = ctx.services.get("processes")
                if isinstance(manager, ProcessManager):
                    await manager.aclose()

        return anyio.run(call)


def _listen(kind: str, ws: Path, outside: Path) -> Listener:
    if kind in ("tcp4", "tcp4-any", "tcp6"):
        family = socket.AF_INET6 if kind == "tcp6" else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        host = {"tcp4": "127.0.0.1", "tcp4-any": "0.0.0.0", "tcp6": "::1"}[kind]
        sock.bind((host, 0))
        sock.listen(16)
        return Listener(sock=sock, address=str(sock.getsockname()[1]))
    if kind == "udp4":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        return Listener(sock=sock, address=str(sock.getsockname()[1]))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if kind == "unix-abstract":
        name = f"\0kode-sandbox-{TOKEN}"
        sock.bind(name)
        address = name[1:]
    else:
        path = (ws if kind == "unix-ws" else outside) / f"{kind}.sock"
        sock.bind(str(path))
        address = str(path)
    sock.listen(16)
    return Listener(sock=sock, address=address)


def _serve(listeners: dict[str, Listener], stop: threading.Event) -> None:
    for listener in listeners.values():
        listener.sock.settimeout(0.05)
    while not stop.is_set():
        for name, listener in listeners.items():
            try:
                if listener.sock.type == socket.SOCK_DGRAM:
                    data = listener.sock.recv(4096)
                    listener.hits.append(data.decode(errors="replace"))
                else:
                    conn, _ = listener.sock.accept()
                    with conn:
                        conn.settimeout(0.5)
                        with contextlib.suppress(OSError):
                            listener.hits.append(conn.recv(4096).decode(errors="replace") or name)
            except (TimeoutError, BlockingIOError, OSError):
                continue


CANARY = f"""
import signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(sig, lambda number, frame: log.write(f"{{number}}\\n"))
print("ready", flush=True)
while True:
    time.sleep(1)  # canary-{TOKEN}
"""

SECRET_FILES = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".gnupg/private-keys-v1.d/key.key",
    ".password-store/site.gpg",
    ".local/share/keyrings/login.keyring",
    ".bash_history",
    ".cargo/credentials.toml",
    ".vault-token",
    ".pgpass",
)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    support = sandbox_support()
    assert support.available, f"bubblewrap is installed but cannot sandbox here: {support.reason}"
    root = BASE / TOKEN
    root.mkdir(parents=True)
    ws, outside, home = root / "ws", root / "outside", root / "home"
    for made in (ws, outside / "private", home):
        made.mkdir(parents=True)
    secret_paths: dict[str, str] = {}
    for index, name in enumerate(SECRET_FILES):
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        secret_paths[str(path)] = f"SECRET{index:02d}-{TOKEN}"
    secret_paths[str(outside / "private" / "token.txt")] = f"SECRETPRIVATE-{TOKEN}"
    secret_paths[str(ws / "secret.env")] = f"SECRETENV-{TOKEN}"
    for path, token in secret_paths.items():
        Path(path).write_text(f"{token}\n")
    (outside / "existing.txt").write_text("unchanged\n")
    (outside / "visible.txt").write_text(f"VISIBLE-{TOKEN}\n")
    (ws / "existing.txt").write_text("unchanged\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "hooks").mkdir(exist_ok=True)
    sleep = shutil.which("sleep")
    assert sleep is not None
    for technique in range(len(TECHNIQUES)):
        for ending in ENDINGS:
            name = escapee_name(technique, ending)
            shutil.copy(sleep, ws / name)
            (ws / f"run-{name}").write_text(
                f'#!/bin/sh\ntouch "ready-{name}"\nexec ./{name} 1000\n'
            )
            (ws / f"run-{name}").chmod(0o755)
    canary_log = root / "canary.log"
    canary = subprocess.Popen([PY, "-c", CANARY, str(canary_log)], stdout=subprocess.PIPE)
    assert canary.stdout is not None and canary.stdout.readline() == b"ready\n"
    listeners = {kind: _listen(kind, ws, outside) for kind in LISTENER_KINDS}
    stop = threading.Event()
    server = threading.Thread(target=_serve, args=(listeners, stop), daemon=True)
    server.start()
    kode_signals: list[int] = []
    previous = signal.signal(signal.SIGUSR2, lambda number, frame: kode_signals.append(number))
    made = World(
        root=root,
        ws=ws,
        outside=outside,
        home=home,
        secrets=secret_paths,
        canary=canary,
        canary_log=canary_log,
        listeners=listeners,
        kode_signals=kode_signals,
    )
    made.notes["git"] = tree_digest(ws / ".git")
    made.notes["existing-mode"] = (outside / "existing.txt").stat().st_mode
    made.notes["supervisor"] = file_digest(Path(_supervisor_path()))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))  # ~ in the hidden paths, for kode and its commands
            yield made
    finally:
        signal.signal(signal.SIGUSR2, previous)
        stop.set()
        server.join(5)
        for listener in listeners.values():
            listener.sock.close()
        canary.kill()
        canary.wait()
        if canary.stdout is not None:
            canary.stdout.close()
        for target in stray_targets():
            with contextlib.suppress(OSError):
                shutil.rmtree(target) if target.is_dir() else target.unlink()
        shutil.rmtree(root, ignore_errors=True)


def _supervisor_path() -> str:
    from kode.builtin._shared import _supervisor

    return _supervisor.__file__


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digest(path: Path) -> str:
    """A digest of every name, mode and content under `path` (links by their target)."""
    digest = hashlib.sha256()
    for entry in sorted(path.rglob("*")):
        digest.update(str(entry.relative_to(path)).encode())
        info = entry.lstat()
        digest.update(str(info.st_mode).encode())
        if entry.is_symlink():
            digest.update(os.readlink(entry).encode())
        elif entry.is_file():
            digest.update(entry.read_bytes())
    return digest.hexdigest()


def segments(text: str) -> dict[str, str]:
    """Each attempt's output in a batch, by its id."""
    found: dict[str, str] = {}
    for match in re.finditer(r"@@begin (\S+)\n(.*?)\n@@end \1 ", text, re.S):
        found[match.group(1)] = match.group(2)
    return found


def batch(attempts: list[tuple[str, str]]) -> str:
    """One command running each attempt in a subshell, its output marked with its id."""
    lines = []
    for ident, code in attempts:
        begin = f"printf '\\n@@begin %s\\n' {ident}"
        end = f"printf '\\n@@end %s %s\\n' {ident} $?"
        lines.append(f"{begin}; ( {code} ) 2>&1; {end}")
    return "\n".join(lines)


# --- 1. writing outside the workspace ---------------------------------------------------------


TARGET_DIRS: dict[str, Callable[[World], Path]] = {
    "outside": lambda w: w.outside,
    "home": lambda w: w.home,
    "parent": lambda w: w.root,
    "tmp": lambda w: Path("/tmp"),
    "vartmp": lambda w: Path("/var/tmp"),
    "shm": lambda w: Path("/dev/shm"),
    "etc": lambda w: Path("/etc"),
    "usrlocal": lambda w: Path("/usr/local"),
    "cache": lambda w: BASE,
}
WRITE_TECHNIQUES: dict[str, str] = {
    "touch": "touch {t}",
    "redirect": "echo x > {t}",
    "tee": "printf x | tee {t}",
    "cp": "cp /etc/hostname {t}",
    "mkdir": "mkdir {t}",
    "python": PY + " -c \"open('{t}', 'w').write('x')\"",
    "symlink": "ln -s /etc/hostname {t}",
    "dd": "dd if=/dev/zero of={t} count=1",
}


def write_target(world: World, where: str, technique: str) -> Path:
    return TARGET_DIRS[where](world) / f"kode-sandbox-{TOKEN}-{where}-{technique}"


def stray_targets() -> list[Path]:
    found: list[Path] = []
    for directory in ("/tmp", "/var/tmp", "/dev/shm", "/etc", "/usr/local", str(BASE)):
        with contextlib.suppress(OSError):
            found += [p for p in Path(directory).iterdir() if f"kode-sandbox-{TOKEN}-" in p.name]
    return found


EXISTING_FILE_TECHNIQUES: dict[str, str] = {
    "append": "echo x >> {f}",
    "truncate": "truncate -s 0 {f}",
    "remove": "rm -f {f}",
    "move": "mv {f} existing-moved.txt",
    "chmod": "chmod 000 {f}",
    "python": PY + " -c \"open('{f}', 'w').write('x')\"",
    "sed": "sed -i s/unchanged/changed/ {f}",
}
GIT_TECHNIQUES: dict[str, str] = {
    "config": "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config",
    "hook": "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
    "remove-head": "rm -f .git/HEAD",
    "move": "mv .git g",
    "git-config": "git config core.fsmonitor 'touch pwned'",
}
SPECIAL_WRITES: dict[str, str] = {
    "through-symlink": "ln -s {outside} link-out && echo x > link-out/kode-sandbox-{token}-special",
    "dotdot": "echo x > ../kode-sandbox-{token}-special-dotdot",
    "proc-self-root": "echo x > /proc/self/root{outside}/kode-sandbox-{token}-special-proc",
    "proc-1-root": "echo x > /proc/1/root{outside}/kode-sandbox-{token}-special-proc1",
    "bind-mount": (
        "mkdir -p m && mount --bind {outside} m && touch m/kode-sandbox-{token}-special-bind"
    ),
}
READ_ONLY_WRITES: dict[str, str] = {
    "touch": "touch ro-new",
    "overwrite": "echo x > existing.txt",
    "remove": "rm -f existing.txt",
    "mkdir": "mkdir ro-dir",
    "python": PY + " -c \"open('ro-python', 'w').write('x')\"",
}

WRITE_ATTEMPTS = (
    [f"{where}-{technique}" for where in TARGET_DIRS for technique in WRITE_TECHNIQUES]
    + [f"existing-{technique}" for technique in EXISTING_FILE_TECHNIQUES]
    + [f"git-{technique}" for technique in GIT_TECHNIQUES]
    + [f"special-{name}" for name in SPECIAL_WRITES]
)


@pytest.fixture(scope="module")
def writes(world: World) -> World:
    attempts = []
    for where in TARGET_DIRS:
        for technique, code in WRITE_TECHNIQUES.items():
            target = shlex.quote(str(write_target(world, where, technique)))
            attempts.append((f"{where}-{technique}", code.format(t=target)))
    existing = shlex.quote(str(world.outside / "existing.txt"))
    attempts += [
        (f"existing-{name}", code.format(f=existing))
        for name, code in EXISTING_FILE_TECHNIQUES.items()
    ]
    attempts += [(f"git-{name}", code) for name, code in GIT_TECHNIQUES.items()]
    attempts += [
        (f"special-{name}", code.format(outside=shlex.quote(str(world.outside)), token=TOKEN))
        for name, code in SPECIAL_WRITES.items()
    ]
    world.outputs["writes"] = world.run(batch(attempts)).text
    before = tree_digest(world.ws)
    ro = world.run(batch(list(READ_ONLY_WRITES.items())), sandbox="read-only")
    world.notes["read-only"] = (before, tree_digest(world.ws), ro.text)
    return world


@pytest.mark.parametrize("attempt", WRITE_ATTEMPTS)
def test_write_outside_the_workspace(writes: World, attempt: str) -> None:
    world = writes
    assert f"@@begin {attempt}\n" in world.outputs["writes"]  # it ran
    kind, _, technique = attempt.partition("-")
    if kind in TARGET_DIRS:
        assert not os.path.lexists(write_target(world, kind, technique))
    elif kind == "existing":
        existing = world.outside / "existing.txt"
        assert existing.read_text() == "unchanged\n"
        assert existing.stat().st_mode == world.notes["existing-mode"]
    elif kind == "git":
        assert tree_digest(world.ws / ".git") == world.notes["git"]
        assert not (world.ws / "pwned").exists()
    else:
        assert not [p for p in world.root.rglob(f"kode-sandbox-{TOKEN}-special*")]
        assert not stray_targets()


@pytest.mark.parametrize("attempt", sorted(READ_ONLY_WRITES))
def test_write_to_a_read_only_workspace(writes: World, attempt: str) -> None:
    before, after, text = writes.notes["read-only"]
    assert f"@@begin {attempt}\n" in text
    assert after == before, segments(text).get(attempt)


# --- 2. reading hidden paths ------------------------------------------------------------------


READ_TECHNIQUES: dict[str, str] = {
    "cat": "cat {p}",
    "python": PY + " -c \"print(open('{p}').read())\"",
    "copy": "cp {p} copy-{i} && cat copy-{i}",
    "symlink": "ln -s {p} link-{i} && cat link-{i}",
}
SHADOW = os.access("/etc/shadow", os.R_OK) and Path("/etc/shadow").stat().st_size > 0
SECRET_IDS = [f"s{index:02d}" for index in range(len(SECRET_FILES))] + ["private", "env"]
READ_ATTEMPTS = (
    [f"{s}-{t}" for s in SECRET_IDS for t in READ_TECHNIQUES]
    + [
        "home-grep",
        "home-tar",
        "home-find",
        "outside-grep",
    ]
    + (["shadow-cat", "shadow-python", "shadow-symlink-root"] if SHADOW else [])
)


def secret_by_id(world: World, ident: str) -> tuple[str, str]:
    paths = list(world.secrets)
    index = SECRET_IDS.index(ident)
    return paths[index], world.secrets[paths[index]]


@pytest.fixture(scope="module")
def reads(world: World) -> World:
    attempts = []
    for number, ident in enumerate(SECRET_IDS):
        path, _ = secret_by_id(world, ident)
        for technique, code in READ_TECHNIQUES.items():
            attempts.append(
                (
                    f"{ident}-{technique}",
                    code.format(p=shlex.quote(path), i=f"{number}-{technique}"),
                )
            )
    attempts += [
        ("home-grep", "grep -r SECRET ~"),
        ("home-tar", "tar cf - ~ 2>/dev/null | strings | grep SECRET"),
        ("home-find", "find ~ -type f -exec cat {} +"),
        ("outside-grep", f"grep -r SECRET {shlex.quote(str(world.outside))}"),
    ]
    if SHADOW:
        attempts += [
            ("shadow-cat", "cat /etc/shadow"),
            ("shadow-python", PY + " -c \"print(open('/etc/shadow').read())\""),
            ("shadow-symlink-root", "ln -s / rootlink && head -3 rootlink/etc/shadow"),
        ]
    world.outputs["reads"] = world.run(batch(attempts)).text
    return world


@pytest.mark.parametrize("attempt", READ_ATTEMPTS)
def test_read_a_hidden_path(reads: World, attempt: str) -> None:
    world = reads
    output = segments(world.outputs["reads"]).get(attempt)
    assert output is not None, f"attempt {attempt} did not run"
    for token in world.secrets.values():
        assert token not in output
    if attempt.startswith("shadow"):
        first = Path("/etc/shadow").read_text().splitlines()[0]
        assert first not in output
    for made in world.ws.iterdir():  # copies a command made in the workspace
        if made.is_file() and not made.is_symlink() and made.name.startswith("copy-"):
            assert not any(t in made.read_text(errors="replace") for t in world.secrets.values())


# --- 3. the network ---------------------------------------------------------------------------


LISTENER_KINDS = ("tcp4", "tcp4-any", "tcp6", "udp4", "unix-ws", "unix-outside", "unix-abstract")


def _host_address() -> str | None:
    with contextlib.suppress(OSError):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for UDP connect
            address = probe.getsockname()[0]
            return None if address.startswith("127.") else address
    return None


def _python_connect(family: str, address: str, kind: str = "SOCK_STREAM") -> str:
    code = (
        f"import socket; s = socket.socket(socket.{family}, socket.{kind}); "
        f"s.connect({address}); s.sendall(b'attempt')"
    )
    return f"{PY} -c {shlex.quote(code)}"


NETWORK_ATTEMPTS: dict[str, tuple[str, Callable[[World], str]]] = {
    "bash-tcp": (
        "tcp4",
        lambda w: f"echo attempt > /dev/tcp/127.0.0.1/{w.listeners['tcp4'].address}",
    ),
    "bash-tcp-localhost": (
        "tcp4",
        lambda w: f"echo attempt > /dev/tcp/localhost/{w.listeners['tcp4'].address}",
    ),
    "python-tcp": (
        "tcp4",
        lambda w: _python_connect("AF_INET", f"('127.0.0.1', {w.listeners['tcp4'].address})"),
    ),
    "curl": ("tcp4", lambda w: f"curl -s -m 2 http://127.0.0.1:{w.listeners['tcp4'].address}/"),
    "git-http": (
        "tcp4",
        lambda w: f"git ls-remote http://127.0.0.1:{w.listeners['tcp4'].address}/x",
    ),
    "python-tcp6": (
        "tcp6",
        lambda w: _python_connect("AF_INET6", f"('::1', {w.listeners['tcp6'].address})"),
    ),
    "python-udp": (
        "udp4",
        lambda w: (
            f"{PY} -c "
            + shlex.quote(
                "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                f".sendto(b'attempt', ('127.0.0.1', {w.listeners['udp4'].address}))"
            )
        ),
    ),
    "host-address": (
        "tcp4-any",
        lambda w: _python_connect(
            "AF_INET", f"({w.notes['host']!r}, {w.listeners['tcp4-any'].address})"
        ),
    ),
    "unix-in-workspace": (
        "unix-ws",
        lambda w: _python_connect("AF_UNIX", repr(w.listeners["unix-ws"].address)),
    ),
    "unix-outside": (
        "unix-outside",
        lambda w: _python_connect("AF_UNIX", repr(w.listeners["unix-outside"].address)),
    ),
    "unix-abstract": (
        "unix-abstract",
        lambda w: _python_connect("AF_UNIX", repr("\0" + w.listeners["unix-abstract"].address)),
    ),
    "unix-datagram-outside": (
        "unix-outside",
        lambda w: (
            f"{PY} -c "
            + shlex.quote(
                "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)"
                f".sendto(b'attempt', {w.listeners['unix-outside'].address!r})"
            )
        ),
    ),
}


@pytest.fixture(scope="module")
def network(world: World) -> World:
    world.notes["host"] = _host_address() or "127.0.0.1"
    attempts = [(name, make(world)) for name, (_, make) in NETWORK_ATTEMPTS.items()]
    world.outputs["network"] = world.run(batch(attempts)).text
    time.sleep(0.3)  # anything that got through has been accepted by now
    return world


@pytest.mark.parametrize("attempt", sorted(NETWORK_ATTEMPTS))
def test_open_a_network_connection(network: World, attempt: str) -> None:
    kind, _ = NETWORK_ATTEMPTS[attempt]
    assert f"@@begin {attempt}\n" in network.outputs["network"]
    assert network.listeners[kind].hits == [], segments(network.outputs["network"]).get(attempt)


# --- 4. processes left running ----------------------------------------------------------------


TECHNIQUES: dict[str, str] = {
    "job_control": "set -m; ESCAPEE & set +m",  # off again: setsid fails in a group leader
    "python_setpgid": (
        f"{PY} -c 'import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE &"
    ),
    "python_setsid": (
        f"{PY} -c 'import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE &"
    ),
    "setsid_command": "setsid ESCAPEE &",
    "setsid_fork": "setsid -f ESCAPEE",
    "perl_setpgrp": "perl -e 'setpgrp(0, 0); exec @ARGV' ESCAPEE &",
    "double_fork": "( ESCAPEE & ) &",
    "daemonize": (
        f"{PY} -c 'import os, sys\n"
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE"
    ),
    "nohup": "nohup ESCAPEE > /dev/null 2>&1 &",
    "disown": "ESCAPEE & disown",
}
ENDINGS = ("exit", "timeout", "bash_kill", "close", "kode_killed")
PROCESS_ATTEMPTS = [f"{t}-{e}" for e in ENDINGS for t in TECHNIQUES]


def escapee_name(technique: int, ending: str) -> str:
    return f"e{technique:02d}{ENDINGS.index(ending)}{TOKEN[:8]}"  # at most 15: a comm


def escape_command(ending: str, then: str) -> str:
    lines = []
    for index, technique in enumerate(TECHNIQUES.values()):
        lines.append(technique.replace("ESCAPEE", f"./run-{escapee_name(index, ending)}"))
    ready = " ".join(f"ready-{escapee_name(i, ending)}" for i in range(len(TECHNIQUES)))
    lines.append(f"for i in $(seq 200); do ls {ready} >/dev/null 2>&1 && break; sleep 0.05; done")
    lines.append(then)
    return "\n".join(lines)


def alive_escapees(ending: str) -> dict[str, list[str]]:
    """The escapees of `ending` still in the process table (zombies too), by technique."""
    wanted = {escapee_name(i, ending): t for i, t in enumerate(TECHNIQUES)}
    found: dict[str, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            if comm in wanted:
                found.setdefault(wanted[comm], []).append(entry)
    return found


def wait_ready(world: World, ending: str) -> None:
    names = [world.ws / f"ready-{escapee_name(i, ending)}" for i in range(len(TECHNIQUES))]
    deadline = time.monotonic() + 30
    while not all(p.exists() for p in names):
        assert time.monotonic() < deadline, [p.name for p in names if not p.exists()]
        time.sleep(0.02)
    time.sleep(0.2)  # the last ones exec their sleep


KILLED_KODE = """
import sys, time, anyio
from pathlib import Path
from kode import ToolContext
from kode.builtin.runtime import RuntimePolicy, bash_run
from kode.tools.workspace import Workspace

ctx = ToolContext(workspace=Workspace(root=Path(sys.argv[1])))
ctx.services["runtime_policy"] = RuntimePolicy(security="full", ask="off")
result = anyio.run(bash_run.run, {"command": sys.argv[2], "background": True}, ctx)
assert result.details["sandboxed"], result.text
print("started", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def processes(world: World) -> dict[str, dict[str, list[str]]]:
    left: dict[str, dict[str, list[str]]] = {}
    before = {e: alive_escapees(e) for e in ENDINGS}
    assert not any(before.values()), before

    result = world.run(escape_command("exit", "exit 0"))
    assert result.details["sandboxed"] and result.details["leftovers_killed"], result.text
    left["exit"] = alive_escapees("exit")

    result = world.run(escape_command("timeout", "sleep 1000"), timeout=5)
    assert result.details["timed_out"], result.text
    left["timeout"] = alive_escapees("timeout")

    async def in_background(ending: str) -> None:
        ctx = world.context()
        manager = ProcessManager()
        ctx.services["processes"] = manager
        try:
            started = await bash_run.run(
                {"command": escape_command(ending, "sleep 1000"), "background": True}, ctx
            )
            assert started.details["sandboxed"], started.text
            try:
                await anyio.to_thread.run_sync(wait_ready, world, ending)
            except AssertionError as exc:
                log = manager.get("shell_1").log.read_text(errors="replace")
                raise AssertionError(f"{exc}\nthe shell's output:\n{log}") from None
            assert alive_escapees(ending)  # they run: the detector sees them
            if ending == "bash_kill":
                killed = await bash_kill.run({"shell_id": started.details["shell_id"]}, ctx)
                assert killed.text.startswith("Killed shell_1"), killed.text
            else:
                await manager.aclose()
            left[ending] = alive_escapees(ending)
        finally:
            await manager.aclose()

    anyio.run(in_background, "bash_kill")
    anyio.run(in_background, "close")

    kode = subprocess.Popen(
        [PY, "-c", KILLED_KODE, str(world.ws), escape_command("kode_killed", "sleep 1000")],
        stdout=subprocess.PIPE,
        env={**os.environ, "HOME": str(world.home)},
    )
    try:
        assert kode.stdout is not None and kode.stdout.readline() == b"started\n"
        wait_ready(world, "kode_killed")
        assert alive_escapees("kode_killed")
    finally:
        kode.kill()
        kode.wait()
        if kode.stdout is not None:
            kode.stdout.close()
    deadline = time.monotonic() + 5
    while alive_escapees("kode_killed") and time.monotonic() < deadline:
        time.sleep(0.05)
    left["kode_killed"] = alive_escapees("kode_killed")
    return left


@pytest.mark.parametrize("attempt", PROCESS_ATTEMPTS)
def test_leave_a_process_running(processes: dict[str, dict[str, list[str]]], attempt: str) -> None:
    technique, _, ending = attempt.rpartition("-")
    assert technique not in processes[ending], processes[ending]


# --- 5. the PID namespace, other processes, the supervisor, the namespaces ---------------------


# What an attempt prints when it got through; spelt so that the word is in no command line
# (a command that lists processes would otherwise print it).
SAY_ESCAPED = "echo ESC" + "''" + "APED"


def ptrace_code(pid: int) -> str:
    code = (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        f"r = libc.ptrace(16, {pid}, 0, 0); print('ESC' + 'APED' if r == 0 else 'refused')"
    )
    return f"{PY} -c {shlex.quote(code)}"


def keyctl_code() -> str:
    code = (
        "import ctypes, platform; libc = ctypes.CDLL(None, use_errno=True); "
        "nr = {'x86_64': 248, 'aarch64': 217}.get(platform.machine(), -1); "
        "r = libc.syscall(nr, b'user', b'kode', b'x', 1, -4); "
        "print('ESC' + 'APED' if r >= 0 else 'refused')"
    )
    return f"{PY} -c {shlex.quote(code)}"


NAMESPACE_ATTEMPTS: dict[str, Callable[[World], str]] = {
    "signal-usr1": lambda w: f"kill -USR1 {w.canary.pid}",
    "signal-term": lambda w: f"kill -TERM {w.canary.pid}",
    "signal-hup": lambda w: f"kill -HUP {w.canary.pid}",
    "signal-int": lambda w: f"kill -INT {w.canary.pid}",
    "signal-kill": lambda w: f"kill -KILL {w.canary.pid}",
    "signal-stop": lambda w: f"kill -STOP {w.canary.pid}",
    "signal-python": lambda w: f"{PY} -c 'import os; os.kill({w.canary.pid}, 12)'",
    # The pattern is put together at run time: written out, it would match this very command.
    "signal-pkill": lambda w: f"T={TOKEN}; pkill -USR1 -f canary-$T",
    "signal-kode": lambda w: f"kill -USR2 {os.getpid()}",
    "see-proc": lambda w: "ls /proc",
    "see-ps": lambda w: "ps -eo pid,args",
    "see-cmdline": lambda w: f"cat /proc/{w.canary.pid}/cmdline",
    "see-environ": lambda w: f"cat /proc/{os.getpid()}/environ",
    "see-fds": lambda w: f"ls -l /proc/{w.canary.pid}/fd",
    "open-mem": lambda w: (
        f"{PY} -c \"open('/proc/{os.getpid()}/mem', 'rb'); print('ESC' + 'APED')\""
    ),
    "ptrace": lambda w: ptrace_code(w.canary.pid),
    "unshare-user": lambda w: f"unshare -U true && {SAY_ESCAPED}",
    "unshare-mount": lambda w: f"unshare -m true && {SAY_ESCAPED}",
    "nsenter": lambda w: f"nsenter -t 1 -m -p true && {SAY_ESCAPED}",
    "mount-tmpfs": lambda w: f"mkdir -p mnt && mount -t tmpfs none mnt && {SAY_ESCAPED}",
    "remount-rw": lambda w: f"mount -o remount,rw / && {SAY_ESCAPED}",
    "unmount-hidden": lambda w: f"umount ~/.ssh && {SAY_ESCAPED}; ls ~/.ssh",
    "chroot": lambda w: f"chroot / true && {SAY_ESCAPED}",
    "keyring": lambda w: keyctl_code(),
    "supervisor-code": lambda w: f"echo 'import os' >> {_supervisor_path()}",
}
TAMPER_COMMANDS: dict[str, str] = {
    # Each ends its own command in its own way; SLEEPER must be gone afterwards.
    "fake-exit-status": 'echo "exit 0" > /proc/$PPID/fd/2; SLEEPER & sleep 1000',
    "stop-supervisor": "SLEEPER & kill -STOP $PPID; sleep 1000",
    "kill-supervisor": "SLEEPER & sleep 0.2; kill -9 $PPID; sleep 1000",
    "kill-namespace-init": "SLEEPER & kill -9 1; echo still-here; exit 0",
    "kill-everything": "SLEEPER & sleep 0.2; kill -9 -1; sleep 1000",
    "ignore-term": "trap '' TERM; SLEEPER & sleep 1000",
}
NAMESPACE_IDS = (
    sorted(NAMESPACE_ATTEMPTS)
    + [f"tamper-{n}" for n in sorted(TAMPER_COMMANDS)]
    + ["tamper-background-stop-supervisor"]
)


def sleeper(world: World, name: str) -> str:
    binary = world.ws / f"t{hashlib.sha256(name.encode()).hexdigest()[:6]}{TOKEN[:8]}"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", binary)
    return binary.name


def sleeping(name: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat[stat.index("(") + 1 : stat.rindex(")")] == name:
                    found.append(entry)
    return found


def until(predicate: Callable[[], bool], limit: float) -> None:
    """Wait until `predicate()` holds, for at most `limit` seconds (/proc has no events)."""
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)


def running(pid: str) -> bool:
    with contextlib.suppress(OSError):
        return state(int(pid)) not in ("Z", "X")
    return False


def describe(pids: list[str]) -> list[str]:
    """What each process is, for a failure's message: state, parent, program, namespace."""
    shown = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:4]
            namespace = os.readlink(f"/proc/{pid}/ns/pid")
        except OSError as exc:
            shown.append(f"{pid}: gone ({exc.strerror})")
            continue
        state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
        shown.append(f"{pid}: state {state}, parent {parent}, {namespace}, argv {argv}")
    return shown


def still_ours(pid: str, world: World) -> bool:
    """Whether `pid` still runs and is still this world's command (bubblewrap, with the
    workspace on its command line): pids are reused, by other processes of the machine too."""
    with contextlib.suppress(OSError, ValueError):
        cmdline = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
        return running(pid) and str(world.ws).encode() in cmdline.split(b"\0")
    return False


def state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()[0]


@pytest.fixture(scope="module")
def namespaces(world: World) -> World:
    attempts = [(name, make(world)) for name, make in NAMESPACE_ATTEMPTS.items()]
    world.outputs["namespaces"] = world.run(batch(attempts)).text
    for name, code in TAMPER_COMMANDS.items():
        binary = sleeper(world, name)
        started = time.monotonic()
        result = world.run(code.replace("SLEEPER", f"./{binary} 1000"), timeout=2)
        took = time.monotonic() - started

        def left_running(
            binary: str = binary, pid: str = str(result.details.get("pid"))
        ) -> list[str]:
            return sleeping(binary) + [p for p in [pid] if still_ours(p, world)]

        # The namespace's processes may still be in the kernel's exit path when the call
        # returns on a loaded machine (state R, memory already released); gone a moment
        # later. A process that escaped would still be running after the second.
        seen = left_running()
        if seen:
            until(lambda: not left_running(), 1.0)
        left = left_running()
        world.notes[f"tamper-{name}"] = (
            took,
            left,
            f"{result.text}\nleft running: {describe(left or seen)}" if left else result.text,
            result.details.get("sandboxed"),
        )
    world.notes["tamper-background-stop-supervisor"] = anyio.run(stopped_in_background, world)
    time.sleep(0.2)
    return world


async def stopped_in_background(world: World) -> tuple[float, list[str], str, bool]:
    """A background shell stops its supervisor, then bash_kill: nothing may be left."""
    binary = sleeper(world, "background")
    ctx = world.context()
    manager = ProcessManager()
    ctx.services["processes"] = manager
    started_at = time.monotonic()
    try:
        command = f"./{binary} 1000 & kill -STOP $PPID; sleep 1000"
        started = await bash_run.run({"command": command, "background": True}, ctx)
        await anyio.to_thread.run_sync(until, lambda: bool(sleeping(binary)), 20.0)
        await anyio.sleep(0.3)
        killed = await bash_kill.run({"shell_id": started.details["shell_id"]}, ctx)
        bwrap = str(started.details["pid"])
        left = sleeping(binary) + ([bwrap] if still_ours(bwrap, world) else [])
        return time.monotonic() - started_at, left, killed.text, started.details["sandboxed"]
    finally:
        await manager.aclose()


@pytest.mark.parametrize("attempt", NAMESPACE_IDS)
def test_escape_the_namespaces_or_tamper(namespaces: World, attempt: str) -> None:
    world = namespaces
    if attempt.startswith("tamper-"):
        took, left, text, sandboxed = world.notes[attempt]
        assert sandboxed
        assert left == [], text
        assert took < 30, text  # it came back: the supervisor could not hold the call
        return
    output = segments(world.outputs["namespaces"]).get(attempt)
    assert output is not None, f"attempt {attempt} did not run"
    assert "ESCAPED" not in output
    assert world.canary.poll() is None, "the canary outside the sandbox was killed"
    assert state(world.canary.pid) not in ("T", "t"), "the canary was stopped"
    assert world.canary_log.read_text() == "", "the canary received a signal"
    assert world.kode_signals == [], "the kode process received a signal"
    assert f"canary-{TOKEN}" not in output
    pids = set(re.findall(r"\b\d+\b", output)) if attempt == "see-proc" else set()
    assert str(world.canary.pid) not in pids and str(os.getpid()) not in pids
    if attempt == "ptrace":
        status = Path(f"/proc/{world.canary.pid}/status").read_text()
        assert "TracerPid:\t0\n" in status
    if attempt == "see-environ":
        assert "HOME=" not in output
    if attempt == "supervisor-code":
        assert file_digest(Path(_supervisor_path())) == world.notes["supervisor"]


def test_there_are_at_least_a_hundred_attempts() -> None:
    total = (
        len(WRITE_ATTEMPTS)
        + len(READ_ONLY_WRITES)
        + len(READ_ATTEMPTS)
        + len(NETWORK_ATTEMPTS)
        + len(PROCESS_ATTEMPTS)
        + len(NAMESPACE_IDS)
    )
    assert total >= 100, total


# --- controls: the detectors see what happens without the sandbox, or where it allows it ------


def test_control_the_workspace_is_writable_and_the_system_readable(world: World) -> None:
    result = world.run(f"touch control-ok && cat {shlex.quote(str(world.outside / 'visible.txt'))}")
    assert result.details["sandboxed"]
    assert (world.ws / "control-ok").exists()
    assert f"VISIBLE-{TOKEN}" in result.text


def test_control_without_the_sandbox_the_detectors_see_everything(world: World) -> None:
    target = write_target(world, "outside", "control")
    secret, token = secret_by_id(world, "s00")
    result = world.run(
        f"touch {shlex.quote(str(target))}; cat {shlex.quote(secret)}; "
        f"kill -USR1 {world.canary.pid}; "
        + _python_connect("AF_UNIX", repr(world.listeners["unix-outside"].address)),
        sandbox="off",
    )
    try:
        assert not result.details["sandboxed"]
        assert target.exists()
        assert token in result.text
        deadline = time.monotonic() + 5
        while not world.canary_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert world.canary_log.read_text() == f"{signal.SIGUSR1.value}\n"
        while not world.listeners["unix-outside"].hits and time.monotonic() < deadline:
            time.sleep(0.02)
        assert world.listeners["unix-outside"].hits
    finally:
        target.unlink(missing_ok=True)
        world.canary_log.write_text("")
        world.listeners["unix-outside"].hits.clear()


def test_control_with_network_allowed_a_connection_arrives(world: World) -> None:
    listener = world.listeners["tcp4"]
    result = world.run(
        _python_connect("AF_INET", f"('127.0.0.1', {listener.address})"), network=True
    )
    try:
        assert result.details["sandboxed"]
        deadline = time.monotonic() + 5
        while not listener.hits and time.monotonic() < deadline:
            time.sleep(0.02)
        assert listener.hits == ["attempt"], result.text
    finally:
        listener.hits.clear()
