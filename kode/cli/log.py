"""What the ``kode`` command does with the records of kode's loggers.

A tool that raises is logged (``kode.tools``, ``kode.agent``, ``kode.mcp``) with its
traceback; left to Python's last-resort handler, twenty lines of it would land in the middle
of ``kode run``'s display, of ``kode tools call``'s output and of ``kode mcp serve``'s
stderr. While a command runs, this module sends those records to stderr as one line each:
the message, the exception, and where in the application's own code it was raised. With
``--verbose`` stderr gets each record in full, traceback included; with ``--log-file FILE``
the file does, whatever stderr shows. It does not change what a model or a client is told.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import sysconfig
import traceback
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "LogFileError",
    "OneLineFormatter",
    "add_log_arguments",
    "logging_for",
    "where_raised",
]

# kode's own folder (this module is in kode/cli/): a frame there is never the application's.
_KODE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep
_LIBRARY_DIRS = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)
_FULL = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _application_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of `exc`'s traceback in the application's own code, if any."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        file = frame.filename
        if file.startswith("<"):
            continue
        resolved = str(Path(file).resolve())
        if resolved.startswith(_KODE_DIR) or resolved.startswith(_LIBRARY_DIRS):
            continue
        return frame
    return None


def _shown(file: str) -> Path:
    path = Path(file)
    with contextlib.suppress(ValueError, OSError):
        path = path.resolve().relative_to(Path.cwd().resolve())
    return path


def where_raised(exc: BaseException, *, function: bool = False) -> str | None:
    """``file:line`` in the application's own code where `exc` was raised, if it was there.

    The innermost frame outside kode, the standard library and installed packages; for a
    `SyntaxError`, the place of the error in the file being compiled. Paths under the current
    directory are shown relative to it. With `function`, `` in <function>`` follows.
    """
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        return f"{_shown(exc.filename)}:{exc.lineno}"
    frame = _application_frame(exc)
    if frame is None:
        return None
    place = f"{_shown(frame.filename)}:{frame.lineno}"
    return f"{place} in {frame.name}" if function else place


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


class OneLineFormatter(logging.Formatter):
    """Each record on one line: ``kode: <message>: <error> (at file:line in function)``.

    The first record that carried a traceback ends with where to find it (``--verbose``).
    """

    def __init__(self) -> None:
        super().__init__()
        self._hinted = False

    def format(self, record: logging.LogRecord) -> str:
        """The record's message, its exception's type and first line, and where it was raised."""
        message = _first_line(record.getMessage())
        level = "" if record.levelno >= logging.ERROR else f"{record.levelname.lower()}: "
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            # A handled tool error names its exception's type and message itself.
            exc = getattr(record, "kode_exception", None)
            if not isinstance(exc, BaseException):
                return f"kode: {level}{message}"
            line = f"kode: {level}{message}"
        else:
            name = type(exc).__name__
            said = _first_line(str(exc))
            if not message.endswith(name):  # "Tool 'x' raised KeyError" names the type already
                message = f"{message}: {name}"
            line = f"kode: {level}{message}" + (f": {said}" if said else "")
        where = where_raised(exc, function=True)
        if where is not None:
            line += f" (at {where})"
        if not self._hinted:
            self._hinted = True
            line += " [--verbose shows the traceback]"
        return line


def _with_traceback_or_info(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.INFO or record.exc_info is not None


class LogFileError(Exception):
    """The file ``--log-file`` names cannot be opened for appending."""


class _StderrHandler(logging.Handler):
    """Writes to whatever `sys.stderr` is when a record comes (a test may have replaced it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:  # a closed stderr (a pipe whose reader left): drop the record
            self.handleError(record)


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``-v/--verbose`` and ``--log-file FILE`` to a command."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show kode's log records in full on stderr, with the traceback of a tool that "
        "raised (default: one line each)",
    )
    parser.add_argument(
        "--log-file",
        metavar="FILE",
        help="append kode's log records in full, tracebacks included, to FILE",
    )


@contextlib.contextmanager
def logging_for(args: argparse.Namespace) -> Iterator[None]:
    """Route the ``kode`` loggers' records as `args` asks, while the block runs.

    Without ``--verbose``: warnings and errors on stderr, one line each. With it: records from
    INFO up, in full. With ``--log-file``: every record from INFO up, in full, in that file.

    Raises:
        LogFileError: the ``--log-file`` cannot be opened.
    """
    verbose = bool(getattr(args, "verbose", False))
    log_file = getattr(args, "log_file", None)
    logger = logging.getLogger("kode")
    stderr = _StderrHandler(logging.INFO if verbose else logging.WARNING)
    stderr.setFormatter(logging.Formatter(_FULL) if verbose else OneLineFormatter())
    handlers: list[logging.Handler] = [stderr]
    if log_file:
        try:
            to_file = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise LogFileError(
                f"--log-file: cannot open {log_file}: {exc.strerror or exc}"
            ) from None
        to_file.setLevel(logging.INFO)
        to_file.setFormatter(logging.Formatter(_FULL))
        handlers.append(to_file)
    level = logger.level
    if verbose or log_file:
        # INFO and up, and the DEBUG records that carry a traceback (a tool that raised).
        if logger.getEffectiveLevel() > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
        for handler in handlers:
            if handler.level <= logging.INFO:
                handler.setLevel(logging.DEBUG)
                handler.addFilter(_with_traceback_or_info)
    for handler in handlers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(level)
