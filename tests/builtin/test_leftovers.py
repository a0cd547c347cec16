"""What a kode process killed with SIGKILL leaves behind: no grep worker, no shells' directory.

Each test starts a real kode process in a subprocess, waits until it has started what it would
leave, kills it with SIGKILL (it gets no chance to clean up) and looks at what is left.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kode.builtin._shared._shell_dirs import shells_dir, sweep_stale_shell_dirs
from kode.testing.programs import requires_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A kode process whose fs_grep search runs in the Python worker on a pattern that backtracks
# for minutes, with a deadline far away; it prints the worker's pid once the worker runs (in the
# read-only sandbox when the second argument says so: then the pid is bubblewrap's).
GREPPING = """
import os, sys, threading, time, anyio
from pathlib import Path
from kode.builtin.fs._grep import GrepQuery, confinement, python_search

root = Path(sys.argv[1])
confine = confinement((root,)) if sys.argv[2:] == ["sandbox"] else None
(root / "a.txt").write_text("a" * 40 + "!\\n")

def report():
    me = os.getpid()
    while True:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                if int(stat[stat.rfind(")") + 2 :].split()[1]) == me:
                    print(entry, flush=True)
                    return
        time.sleep(0.02)

threading.Thread(target=report, daemon=True).start()
query = GrepQuery(
    pattern="(a+)+$", ignore_case=False, base=root, file="a.txt", glob=None,
    prune=frozenset(), mode="content", context=0, limit=10,
)
anyio.run(lambda: python_search(query, deadline=600, roots=(root,), confine=confine))
"""

# A kode process with a background shell (sandboxed or not), so its shells' directory exists;
# prints the directory's path once the shell's command runs. "thread": sandboxed, started from
# a thread that has ended by then, and the command tries to kill its supervisor first (the
# namespace's first process: signals from inside cannot reach it).
SHELLING = """
import sys, threading, time
from pathlib import Path
from kode.builtin._shared._processes import ProcessManager
from kode.trust.sandbox import Sandbox, sandbox_support

root, seconds, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
support = sandbox_support()
sandbox = (
    Sandbox(program=support.program, mode="workspace-write", roots=(root,),
            user_namespace=support.user_namespace)
    if mode != "no" else None
)
manager = ProcessManager()
command = f"touch started; sleep {seconds}"
if mode == "thread":
    command = "kill -KILL 1; " + command
    starter = threading.Thread(target=manager.start, args=(command,),
                               kwargs={"cwd": root, "sandbox": sandbox})
    starter.start()
    starter.join()
else:
    manager.start(command, cwd=root, sandbox=sandbox)
shell = manager.get("shell_1")
deadline = time.monotonic() + 20
while not (root / "started").exists() and time.monotonic() < deadline:
    time.sleep(0.01)
print(shell.log.parent if (root / "started").exists() else "not started", flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def until(predicate: Callable[[], bool], limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def sleeping(seconds: str) -> list[int]:
    """The processes running ``sleep <seconds>``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and running(int(entry)):
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", seconds.encode()]:
                found.append(int(entry))
    return found


def start(
    script: str, *arguments: object, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Start `script` in a new kode process; return it and the first line it prints."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, arguments)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line, f"the kode process printed nothing (exit status {process.poll()})"
    return process, line


def kill_hard(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


def _descendants(pid: int) -> set[int]:
    """The live processes below `pid`, read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rfind(")") + 2 :].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {p for p in found if running(p)}


@pytest.mark.parametrize("where", ["plain", "sandbox"])
def test_the_grep_worker_dies_when_kode_is_killed(tmp_path: Path, where: str) -> None:
    if where == "sandbox":
        from kode.trust.sandbox import sandbox_support

        if not sandbox_support().available:
            pytest.skip("no bubblewrap sandbox here")
    process, line = start(GREPPING, tmp_path, where)
    worker = int(line)
    try:
        assert until(lambda: running(worker), 5)
        time.sleep(0.5)  # it is searching: the pattern backtracks for minutes
        assert running(worker)
        # In the sandbox: bubblewrap, and the worker below it (its namespace's first process).
        everything = {worker} | _descendants(worker)
        assert len(everything) >= (2 if where == "sandbox" else 1), everything
    finally:
        kill_hard(process)
    assert until(lambda: not any(running(p) for p in everything), 5), (
        "the grep worker outlived its kode process"
    )


def test_the_grep_worker_started_after_its_parent_died_exits(tmp_path: Path) -> None:
    """The worker checks its parent when it starts: one already gone ends it at once."""
    script = (
        "import sys; from kode.builtin.fs._grep_worker import main; "
        "sys.argv = ['worker', '1']; main()"  # pid 1 is never this process's parent
    )
    worker = subprocess.run(
        [sys.executable, "-c", script], input=b"", capture_output=True, timeout=30
    )
    assert worker.returncode == 1


@pytest.mark.parametrize(
    "sandboxed",
    [
        "no",
        *(
            pytest.param(
                mode,
                marks=requires_sandbox(),
            )
            for mode in ("yes", "thread")
        ),
    ],
)
def test_a_killed_kode_process_leaves_a_directory_the_next_one_removes(
    tmp_path: Path, sandboxed: str
) -> None:
    seconds = str(600 + secrets.randbelow(10_000))  # names this test's command in /proc
    # Its shells' directory goes in a temporary directory of this test's own: in the shared
    # one, any other kode process on the machine (another test run) that starts a shell would
    # rightly sweep it away once its owner is dead, before this test looks.
    base = tmp_path / "tmp"
    base.mkdir()
    process, line = start(
        SHELLING, tmp_path, seconds, sandboxed, env={**os.environ, "TMPDIR": str(base)}
    )
    left = Path(line)
    try:
        assert line != "not started", "the shell's command did not run"
        assert left.is_dir() and left.name.startswith(f"kode-shells-{process.pid}-")
        assert left.parent == base
        assert (left / "owner").read_text().split()[0] == str(process.pid)
        assert until(lambda: bool(sleeping(seconds)), 5)  # bash starts it after the touch
    finally:
        kill_hard(process)
    # The shell's processes die with the kode process (the supervisor watches its parent, or
    # in the sandbox the lifeline, and the namespace ends with it); its directory stays, since
    # nobody could clean it up.
    assert until(lambda: not sleeping(seconds), 5), sleeping(seconds)
    assert left.is_dir()
    removed = sweep_stale_shell_dirs(str(base))
    assert removed == [str(left)]
    assert not left.exists()
    mine = shells_dir()  # this process's own, alive: kept
    try:
        assert str(mine) not in sweep_stale_shell_dirs()
        assert mine.is_dir()
    finally:
        for entry in mine.iterdir():
            entry.unlink()
        mine.rmdir()


def test_the_sweep_keeps_what_it_cannot_judge(tmp_path: Path) -> None:
    base = tmp_path
    unowned = base / "kode-shells-unowned"  # an older kode's, or one being made: no owner
    unowned.mkdir()
    garbled = base / "kode-shells-garbled"
    garbled.mkdir()
    (garbled / "owner").write_text("not a pid\n")
    other = base / "other-dir"
    other.mkdir()
    (other / "owner").write_text("999999999 1\n")
    reused = base / "kode-shells-reused"  # the pid now runs another process
    reused.mkdir()
    (reused / "owner").write_text(f"{os.getpid()} 1\n")
    link = base / "kode-shells-link"
    link.symlink_to(reused, target_is_directory=True)
    removed = sweep_stale_shell_dirs(str(base))
    assert removed == [str(reused)]
    assert unowned.is_dir() and garbled.is_dir() and other.is_dir()
    assert link.is_symlink()


def test_the_default_base_is_the_temporary_directory() -> None:
    made = shells_dir()
    try:
        assert made.parent == Path(tempfile.gettempdir())
        assert (made / "owner").read_text().split()[0] == str(os.getpid())
    finally:
        (made / "owner").unlink()
        made.rmdir()


def test_a_supervisor_whose_kode_process_is_already_gone_runs_nothing(tmp_path: Path) -> None:
    """kode killed while the supervisor's interpreter was still starting: the supervisor
    finds its parent already replaced and starts nothing (it used to wait forever for the
    parent to change, with the command running)."""
    from kode.builtin._shared import _supervisor

    supervisor = [sys.executable, "-I", "-S", _supervisor.__file__, f"{_supervisor.PARENT_OPTION}1"]
    done = subprocess.run(
        [*supervisor, "bash", "-c", "touch marker; sleep 600"],
        cwd=tmp_path,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert not (tmp_path / "marker").exists()


def test_a_sandboxed_supervisor_whose_lifeline_has_ended_runs_nothing(tmp_path: Path) -> None:
    """kode ended before the supervisor started: its lifeline is at its end already."""
    from kode.builtin._shared import _supervisor

    read, write = os.pipe()
    os.close(write)
    try:
        done = subprocess.run(
            [
                *(sys.executable, "-I", "-S", _supervisor.__file__),
                f"{_supervisor.LIFELINE_OPTION}{read}",
                *("bash", "-c", "touch marker; sleep 600"),
            ],
            cwd=tmp_path,
            capture_output=True,
            timeout=30,
            pass_fds=(read,),
        )
    finally:
        os.close(read)
    assert done.returncode == 1
    assert not (tmp_path / "marker").exists()


def test_a_supervisor_kills_what_it_runs_when_its_lifeline_ends(tmp_path: Path) -> None:
    """Outside a PID namespace (the supervisor is not its first process) it kills every
    process below it, as when its parent dies."""
    from kode.builtin._shared import _supervisor

    seconds = str(600 + secrets.randbelow(10_000))
    read, write = os.pipe()
    supervisor = subprocess.Popen(
        [
            *(sys.executable, "-I", "-S", _supervisor.__file__),
            f"{_supervisor.LIFELINE_OPTION}{read}",
            *("bash", "-c", f"(sleep {seconds}; true) & sleep {seconds}; true"),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(read,),
        start_new_session=True,
    )
    os.close(read)
    try:
        assert until(lambda: len(sleeping(seconds)) == 2, 10), sleeping(seconds)
        assert supervisor.poll() is None
    finally:
        os.close(write)
    assert until(lambda: not sleeping(seconds), 10), sleeping(seconds)
    assert supervisor.wait(timeout=10) is not None
