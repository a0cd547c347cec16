"""Sessions: what outlives a run, as append-only records in a store.

A session is a header (template, label, status, last activity, fork origin, lease) and a log
of records (`MessageAdded`, `CallUpdated`, ...) that `fold` turns into a `SessionState`. A
`Store` keeps them: `MemoryStore`, `SQLiteStore` (one file, the embedded default) or
`PostgresStore` (extra ``postgres``); `store_from` makes one from a URL. See
docs/sessions.md.

This package imports ``kode.tools`` and ``kode.models`` only; `PostgresStore` imports
psycopg when one is made.
"""

from __future__ import annotations

from kode.sessions.errors import (
    SchemaVersionError,
    SessionConflictError,
    SessionError,
    SessionExistsError,
    SessionLeaseError,
    SessionNotFoundError,
    SessionRecordError,
    StoreError,
    StoreURLError,
)
from kode.sessions.memory import MemoryStore
from kode.sessions.postgres import PostgresStore
from kode.sessions.records import (
    TERMINAL_STATUSES,
    ApprovalDecided,
    ApprovalRequested,
    CallStatus,
    CallUpdated,
    ClientCallsWaiting,
    HistoryCompacted,
    MessageAdded,
    MetadataSet,
    SessionEntry,
    SessionRecord,
    SessionStatus,
    StatusChanged,
    TodosReplaced,
    ToolAlwaysAllowed,
    UsageAdded,
    record_adapter,
)
from kode.sessions.sqlite import SQLiteStore
from kode.sessions.state import CallState, PendingApproval, SessionState, fold
from kode.sessions.store import (
    DEFAULT_LEASE_TTL,
    MAX_PAGE_SIZE,
    Lease,
    NewSession,
    SessionHeader,
    SessionLog,
    SessionPage,
    Store,
)
from kode.sessions.url import store_from

__all__ = [
    "DEFAULT_LEASE_TTL",
    "MAX_PAGE_SIZE",
    "TERMINAL_STATUSES",
    "ApprovalDecided",
    "ApprovalRequested",
    "CallState",
    "CallStatus",
    "CallUpdated",
    "ClientCallsWaiting",
    "Lease",
    "MemoryStore",
    "MessageAdded",
    "HistoryCompacted",
    "MetadataSet",
    "NewSession",
    "PendingApproval",
    "PostgresStore",
    "SQLiteStore",
    "SchemaVersionError",
    "SessionConflictError",
    "SessionEntry",
    "SessionError",
    "SessionExistsError",
    "SessionHeader",
    "SessionLeaseError",
    "SessionLog",
    "SessionNotFoundError",
    "SessionPage",
    "SessionRecord",
    "SessionRecordError",
    "SessionState",
    "SessionStatus",
    "StatusChanged",
    "Store",
    "StoreError",
    "StoreURLError",
    "TodosReplaced",
    "ToolAlwaysAllowed",
    "UsageAdded",
    "fold",
    "record_adapter",
    "store_from",
]
