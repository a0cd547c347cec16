"""The errors of the sessions layer: a session that is missing, taken, held, or unreadable.

Hierarchy::

    KodeError
    └── SessionError               anything a session store refuses
        ├── SessionNotFoundError   no session by that id (also a KeyError)
        ├── SessionExistsError     a session by that id exists already
        ├── SessionLeaseError      another owner holds the session's lease, or ours was lost
        ├── SessionConflictError   the session changed since it was read (append(if_last_seq=))
        ├── SessionRecordError     a record cannot follow the records before it, or is damaged
        ├── SchemaVersionError     the database's schema is newer than this kode knows
        ├── StoreURLError          a store URL kode cannot open (also a ValueError)
        └── StoreError             the database itself failed (locked, unreachable, ...)
"""

from __future__ import annotations

from kode.tools.errors import KodeError

__all__ = [
    "SchemaVersionError",
    "SessionConflictError",
    "SessionError",
    "SessionExistsError",
    "SessionLeaseError",
    "SessionNotFoundError",
    "SessionRecordError",
    "StoreError",
    "StoreURLError",
]


class SessionError(KodeError):
    """A session store refused an operation; the message says what and why."""


class SessionNotFoundError(SessionError, KeyError):
    """No session has the id asked for."""

    def __str__(self) -> str:
        # KeyError's str() would add quotes around the message.
        return str(self.args[0]) if self.args else ""


class SessionExistsError(SessionError):
    """A session with the id given to `create` or `fork` exists already."""


class SessionLeaseError(SessionError):
    """Another owner holds the session's lease, or the caller's lease expired and was taken."""


class SessionConflictError(SessionError):
    """The session has records past the one an append was made against (`if_last_seq`)."""


class SessionRecordError(SessionError):
    """A record cannot follow the ones before it, or is damaged.

    A done call running again, a record JSON cannot hold, or one that does not match the
    checksum a SQL store wrote with it (changed or damaged since).
    """


class SchemaVersionError(SessionError):
    """The database was written by a newer kode, whose schema this one does not know."""


class StoreURLError(SessionError, ValueError):
    """A store URL names no store kode can open."""


class StoreError(SessionError):
    """The database failed: locked for too long, unreachable, out of space, ..."""
