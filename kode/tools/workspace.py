"""The workspace a tool may touch, and the file pool that keeps agents from clobbering edits.

This module owns `Workspace` (a root directory plus extra allowed paths; every path a tool
touches is resolved against it and refused with ``path_not_in_workspace`` if it escapes — by
``..``, by an absolute path, or through a symlink) and `FilePool` (when the agent last read and
wrote each file; writing a file that changed on disk since the agent read it, or that it never
read, is refused with a message telling the model to read it again).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["FilePool", "Workspace"]


@dataclass(kw_only=True, frozen=True, slots=True)
class Workspace:
    """A root directory, and the only places tools may touch.

    Example:
        ```python
        import tempfile
        from kode.tools.workspace import Workspace

        ws = Workspace(root=tempfile.mkdtemp())
        assert ws.resolve("notes/a.txt").name == "a.txt"
        ```
    """

    root: Path
    """The directory relative paths start from."""
    extra_paths: tuple[Path, ...] = ()
    """Other directories (or files) tools may also touch."""

    @classmethod
    def of(cls, value: object, *, what: str = "workspace") -> Workspace | None:
        """`value` as a workspace: a `Workspace` as it is, a path as the root of one, `None`.

        Raises:
            TypeError: anything else (the message names `what` and what it got).
        """
        if value is None or isinstance(value, Workspace):
            return value
        if isinstance(value, str | os.PathLike):
            root = os.fspath(value)
            if isinstance(root, str):
                return cls(root=Path(root))
        raise TypeError(
            f"{what} must be a Workspace, a path (str or os.PathLike) or None, "
            f"got {type(value).__name__}: {value!r}"
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())
        object.__setattr__(self, "extra_paths", tuple(Path(p).resolve() for p in self.extra_paths))

    def allowed(self, path: Path) -> bool:
        """Whether an already resolved path is inside the root or an extra path."""
        return any(path == base or base in path.parents for base in (self.root, *self.extra_paths))

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The absolute, symlink-free form of `path` (relative to the root), if allowed.

        Raises:
            ToolError: of type ``path_not_in_workspace`` when it resolves outside; of type
                ``invalid_tool_params`` for a path with a NUL character; ``tool_error`` when
                it cannot be resolved (a symlink loop).
        """
        text = os.fspath(path)
        if "\x00" in text:
            raise ToolError(
                f"Path {text!r} contains a NUL character; no file has such a name.",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
                details={"path": text},
            )
        raw = Path(text).expanduser()
        candidate = raw if raw.is_absolute() else self.root / raw
        try:
            resolved = candidate.resolve(strict=False)
        except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before 3.13)
            raise ToolError(
                f"Path '{text}' cannot be resolved: {exc}.",
                details={"path": text},
            ) from None
        if not self.allowed(resolved):
            raise ToolError(
                f"Path '{text}' is outside the workspace ({self.root}); use a path inside it.",
                type=ToolErrorType.PATH_NOT_IN_WORKSPACE,
                details={"path": text, "resolved": str(resolved)},
            )
        return resolved

    def display(self, path: Path) -> str:
        """`path` relative to the root when it is inside it, else absolute."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


@dataclass(kw_only=True, slots=True)
class _Seen:
    read_mtime: int | None = None
    read_size: int | None = None
    written: bool = False


@dataclass(kw_only=True, slots=True)
class FilePool:
    """What the agent read and wrote, to refuse writes over changes it has not seen."""

    _files: dict[Path, _Seen] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):  # no such file (a parent may be a file)
            return None
        return st.st_mtime_ns, st.st_size

    def record_read(self, path: Path, *, stat_result: os.stat_result | None = None) -> None:
        """Note that the agent has just read `path`.

        Args:
            path: The file, resolved.
            stat_result: Its `stat` taken before reading it (default: taken now). A stamp
                from before the read is the safe one: a change made while the file was being
                read then counts as unseen.
        """
        stamp = (
            (stat_result.st_mtime_ns, stat_result.st_size)
            if stat_result is not None
            else self._stamp(path)
        )
        with self._lock:
            seen = self._files.setdefault(path, _Seen())
            seen.read_mtime, seen.read_size = stamp if stamp else (None, None)

    def record_write(self, path: Path) -> None:
        """Note that the agent has just written `path` (so it knows its content)."""
        self.record_read(path)
        with self._lock:
            self._files[path].written = True

    def check_writable(self, path: Path, *, display: str | None = None) -> None:
        """Refuse a write to `path` unless the agent has seen its current content.

        A file that does not exist yet may be written.

        Raises:
            ToolError: the file exists and was never read, or changed on disk since.
        """
        stamp = self._stamp(path)
        if stamp is None:
            return
        name = display or str(path)
        with self._lock:
            seen = self._files.get(path)
        if seen is None or seen.read_mtime is None:
            raise ToolError(
                f"File '{name}' exists and has not been read in this session; read it first, "
                "then write or edit it.",
                type=ToolErrorType.PERMISSION_DENIED,
                details={"path": str(path), "reason": "not_read"},
            )
        if (seen.read_mtime, seen.read_size) != stamp:
            raise ToolError(
                f"File '{name}' changed on disk since it was last read (someone else edited "
                "it); read it again before writing, so their changes are not lost.",
                type=ToolErrorType.PERMISSION_DENIED,
                details={"path": str(path), "reason": "changed_on_disk"},
            )

    def known(self) -> list[Path]:
        """Every file the agent has read or written."""
        with self._lock:
            return sorted(self._files)
