"""What a tool does to the world, as far as permissions care: the `Kind` enum."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Kind"]


class Kind(StrEnum):
    """The kind of a tool. Mutating kinds (`is_mutating`) drive approval in agents."""

    READ = "read"
    """Reads data without changing anything."""
    EDIT = "edit"
    """Changes files or data."""
    DELETE = "delete"
    """Removes files or data."""
    MOVE = "move"
    """Moves or renames files or data."""
    SEARCH = "search"
    """Searches, without changing anything."""
    EXECUTE = "execute"
    """Runs commands or code."""
    THINK = "think"
    """Only thinks or plans; no effect outside the conversation."""
    FETCH = "fetch"
    """Fetches from the network."""
    OTHER = "other"
    """Anything else (the default)."""

    @property
    def is_mutating(self) -> bool:
        """Whether tools of this kind change the world (edit, delete, move, execute)."""
        return self in _MUTATING


_MUTATING = frozenset({Kind.EDIT, Kind.DELETE, Kind.MOVE, Kind.EXECUTE})
