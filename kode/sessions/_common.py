"""What every store does the same way: argument checks, ids, times, cursors, JSON.

Each store calls these so that the same bad argument gets the same clear error from every
store, and the same record the same bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import socket
import time
import uuid
import zlib
from collections.abc import Collection, Sequence
from typing import Any, get_args

from pydantic import ValidationError

from kode.sessions.errors import (
    SessionConflictError,
    SessionExistsError,
    SessionLeaseError,
    SessionRecordError,
)
from kode.sessions.records import SessionEntry, SessionRecord, SessionStatus, record_adapter
from kode.sessions.store import MAX_PAGE_SIZE, NewSession

MAX_ID_LENGTH = 256
"""The longest session id, template id, label or lease owner a store accepts."""

_UNUSABLE = re.compile("[\x00-\x1f\ud800-\udfff]")  # control characters, lone surrogates
STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))
RECORD_TYPES: frozenset[str] = frozenset(
    {
        "message",
        "call",
        "client_wait",
        "approval_request",
        "approval_decision",
        "usage",
        "todos",
        "always_allowed",
        "status",
        "metadata",
        "compaction",
    }
)


def now_us() -> int:
    """The time now, in whole microseconds since the epoch (how stores keep times)."""
    return time.time_ns() // 1000


def to_seconds(us: int) -> float:
    """Microseconds since the epoch as `time.time()` seconds."""
    return us / 1_000_000


def check_text(value: object, what: str, *, optional: bool = False) -> str | None:
    """`value` if it is a usable id or label, else a clear `TypeError`/`ValueError`."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    if not value or len(value) > MAX_ID_LENGTH:
        raise ValueError(
            f"{what} must have 1 to {MAX_ID_LENGTH} characters, got {len(value)}: {value[:40]!r}"
        )
    if _UNUSABLE.search(value):
        raise ValueError(
            f"{what} {value[:40]!r} contains a control character or a lone surrogate; "
            "use printable text"
        )
    return value


def check_id(value: object, what: str = "session_id") -> str:
    """A required id (see `check_text`)."""
    checked = check_text(value, what)
    assert checked is not None
    return checked


def new_session_id() -> str:
    """A fresh session id."""
    return f"session_{uuid.uuid4().hex}"


_HOST: list[str] = []  # _this_host(), once known


def _this_host() -> str:
    """This machine's name, with its PID namespace on Linux (a container's pids are its own).

    Two hosts with one name, or two containers with one host name, are told apart by the
    namespace: a lease of a process in another namespace is never taken as a dead one's.
    """
    if _HOST:
        return _HOST[0]
    name = socket.gethostname().replace(":", "_")
    try:
        name += f"~{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:  # not Linux, or no /proc: the name alone
        pass
    _HOST.append(name)
    return name


def new_owner() -> str:
    """A lease owner id unique to this process and call: host, pid and a random part."""
    return f"{_this_host()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _process_gone(pid: int) -> bool:
    """Whether no process `pid` runs on this host (a zombie, killed and not reaped, is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):  # it exists (another user's), or cannot be asked
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return False
    return bool(fields) and fields[0] == b"Z"


def owner_gone(owner: str) -> bool:
    """Whether `owner` names a process of this host (as `new_owner` makes them) that has ended.

    Its lease can then be taken at once instead of after its ``ttl``: nobody can renew it.
    Owners made elsewhere (another host, another PID namespace, a name the application
    chose) are never gone: their leases run out as usual. A pid reused by a new process
    counts as alive (the lease then runs out as usual: the safe side).
    """
    parts = owner.split(":")
    if len(parts) != 3 or parts[0] != _this_host() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    return pid != os.getpid() and pid > 0 and _process_gone(pid)


def check_status(value: object) -> SessionStatus:
    """A session status, else a clear `ValueError`."""
    if value not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(sorted(STATUSES))}; got {value!r}")
    return value  # type: ignore[return-value]


def check_ttl(ttl: object) -> float:
    """A lease time-to-live in seconds: a finite number above 0."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TypeError(f"ttl must be a number of seconds, got {type(ttl).__name__}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"ttl must be a finite number of seconds above 0, got {ttl!r}")
    return float(ttl)


def check_limit(limit: object, *, what: str = "limit", most: int = MAX_PAGE_SIZE) -> int:
    """A page size within 1..`most`."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"{what} must be an int, got {type(limit).__name__}")
    if not 1 <= limit <= most:
        raise ValueError(f"{what} must be within 1..{most}, got {limit}")
    return limit


def check_load(
    after: object, limit: object, types: Collection[str] | None
) -> tuple[int, int | None, list[str] | None]:
    """The arguments of `Store.load`, checked."""
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ValueError(f"after must be a sequence number of 0 or more, got {after!r}")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    chosen: list[str] | None = None
    if types is not None:
        if isinstance(types, str):
            raise TypeError(f"types must be a collection of record types, not a string: {types!r}")
        chosen = sorted(set(types))
        unknown = [t for t in chosen if t not in RECORD_TYPES]
        if unknown or not chosen:
            raise ValueError(
                f"types must name record types ({', '.join(sorted(RECORD_TYPES))}); "
                f"got {', '.join(map(repr, unknown)) or 'none'}"
            )
    return after, limit, chosen


def dump_metadata(metadata: object) -> str:
    """`metadata` as JSON text: a dict of JSON values."""
    if not metadata and isinstance(metadata, dict | None):
        return "{}"
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict of JSON values, got {type(metadata).__name__}")
    try:
        return json.dumps(metadata, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata must hold JSON values only: {exc}") from None


def check_new(sessions: Sequence[NewSession]) -> list[tuple[NewSession, str, str]]:
    """Each new session with its id (made if missing) and metadata JSON; ids unique."""
    if isinstance(sessions, NewSession) or not isinstance(sessions, Sequence):
        raise TypeError("sessions must be a sequence of NewSession")
    out: list[tuple[NewSession, str, str]] = []
    seen: set[str] = set()
    for spec in sessions:
        if not isinstance(spec, NewSession):
            raise TypeError(f"sessions must hold NewSession values, got {type(spec).__name__}")
        sid = check_id(spec.session_id) if spec.session_id is not None else new_session_id()
        check_id(spec.template, "template")
        check_text(spec.label, "label", optional=True)
        check_text(spec.parent_id, "parent_id", optional=True)
        if sid in seen:
            raise SessionExistsError(f"session id {sid!r} is given twice in one create_many")
        seen.add(sid)
        out.append((spec, sid, dump_metadata(spec.metadata)))
    return out


_NO_PARENT: set[str] = {"parent_call_id"}


def dump_records(records: Sequence[SessionRecord]) -> list[tuple[str, str, str | None]]:
    """Each record's ``type``, JSON text, and the status it sets (for the header), checked."""
    if not isinstance(records, Sequence) or isinstance(records, str | bytes):
        raise TypeError("records must be a sequence of session records")
    out: list[tuple[str, str, str | None]] = []
    for index, record in enumerate(records):
        kind = getattr(record, "type", None)
        if kind not in RECORD_TYPES or not hasattr(record, "model_dump_json"):
            raise TypeError(
                f"records[{index}] is not a session record (MessageAdded, CallUpdated, ...): "
                f"{type(record).__name__}"
            )
        try:
            if kind == "call" and getattr(record, "parent_call_id", None) is None:
                # A model's call is written as before the field existed (a kode from before
                # it still reads the log); only a script's calls say who made them.
                data = record.model_dump_json(exclude=_NO_PARENT)
            else:
                data = record.model_dump_json()
        except Exception as exc:  # a lone surrogate, a value JSON cannot hold
            raise SessionRecordError(
                f"records[{index}] ({kind}) cannot be written as JSON: {exc}"
            ) from None
        status = getattr(record, "status", None) if kind == "status" else None
        out.append((kind, data, status))
    return out


def load_metadata(text: str) -> dict[str, Any]:
    """Metadata from its stored JSON text."""
    if text == "{}":
        return {}
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def checksum(seq: int, at_us: int, kind: str, data: str) -> int:
    """The CRC-32 a SQL store keeps with a record: of its place, time, type and JSON text.

    It finds a record changed or damaged after it was written (a flipped byte, an edit of
    the file), not one a person who can write the database forges: they can write the
    checksum too.
    """
    return zlib.crc32(
        data.encode("utf-8", "surrogatepass"), zlib.crc32(f"{seq}:{at_us}:{kind}:".encode())
    )


def check_checksum(
    session_id: str, seq: int, at_us: int, kind: str, data: str, stored: int | None
) -> None:
    """Raise `SessionRecordError` when a record does not match its stored checksum.

    A record without one (written before checksums were kept) is not checked.
    """
    if stored is not None and checksum(seq, at_us, kind, data) != stored:
        raise SessionRecordError(
            f"record {seq} ({kind}) of session {session_id!r} does not match its checksum: "
            "it was changed or damaged after it was written. Restore the database from a "
            f"backup, or fork the session at record {seq - 1} to continue from before it"
        )


def load_entry(seq: int, at_us: int, data: str) -> SessionEntry:
    """An entry from its stored columns."""
    try:
        record = record_adapter.validate_json(data)
    except ValidationError as exc:
        raise SessionRecordError(
            f"record {seq} is not a record this kode can read: {exc.errors()[0]['msg']}"
        ) from None
    return SessionEntry(seq=seq, at=to_seconds(at_us), record=record)


def encode_cursor(last_active_us: int, session_id: str) -> str:
    """An opaque cursor for the position after a session in a listing."""
    raw = json.dumps([last_active_us, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[int, str]:
    """The position a cursor stands for, else a clear `ValueError`."""
    wrong = (
        f"cursor {str(cursor)[:60]!r} is not one list_sessions made; pass the next_cursor "
        "of the previous page unchanged"
    )
    if not isinstance(cursor, str):
        raise ValueError(wrong)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value: Any = json.loads(raw)
    except (binascii.Error, ValueError):
        raise ValueError(wrong) from None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not isinstance(value[0], int)
        or not isinstance(value[1], str)
    ):
        raise ValueError(wrong)
    return value[0], value[1]


def held_error(session_id: str, owner: str, expires_us: int, now: int) -> SessionLeaseError:
    """The error for a lease another owner holds."""
    left = max(0.0, (expires_us - now) / 1_000_000)
    return SessionLeaseError(
        f"session {session_id!r} is leased by {owner!r} for {left:.1f} s more: another "
        "process or task is running it. Wait until it ends or its lease expires, or fork it "
        "to continue separately."
    )


def lost_error(session_id: str, mine: str, holder: str | None) -> SessionLeaseError:
    """The error for a lease its owner no longer holds."""
    now_held = f"it is now held by {holder!r}" if holder else "it was released"
    return SessionLeaseError(
        f"the lease of session {session_id!r} by {mine!r} was lost ({now_held}); stop "
        "writing to the session and acquire its lease again"
    )


def check_last_seq(value: object) -> int | None:
    """An append's ``if_last_seq``: `None` or a sequence number of 0 or more."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"if_last_seq must be a sequence number of 0 or more, got {value!r}")
    return value


def conflict_error(session_id: str, expected: int, found: int) -> SessionConflictError:
    """The error for an append made against a log that has changed since."""
    return SessionConflictError(
        f"session {session_id!r} has {found} records, not {expected} as the append expected: "
        "it changed since it was read; read it again and decide on what it holds now"
    )
