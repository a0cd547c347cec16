"""`store_from`: a `Store` from a URL (or a store, passed through).

| URL | store |
|---|---|
| ``memory://`` | `MemoryStore` |
| ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` | `SQLiteStore` on that file |
| ``sqlite:///:memory:`` | `SQLiteStore` in memory |
| ``postgresql://user:password@host:port/database`` (or ``postgres://``) | `PostgresStore` |

SQLite URLs take ``?synchronous=FULL`` and ``?busy_timeout=<seconds>``; PostgreSQL URLs are
handed to libpq as they are (``?sslmode=require``, ...). No connection is made until the
store is first used.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from kode.sessions._sql import SQLStore
from kode.sessions.errors import StoreURLError
from kode.sessions.memory import MemoryStore
from kode.sessions.store import Store

__all__ = ["store_from"]

_OWN = (MemoryStore, SQLStore)

_FORMS = (
    "memory://, sqlite:///relative/path.db, sqlite:////absolute/path.db, sqlite:///:memory: "
    "or postgresql://user:password@host:port/database"
)


def store_from(target: Store | str) -> Store:
    """The store a URL names, or `target` itself when it is a store already.

    Example:
        ```python
        from kode.sessions import SQLiteStore, store_from

        store = store_from("sqlite:///:memory:")
        assert isinstance(store, SQLiteStore)
        ```

    Raises:
        StoreURLError: the URL names no store kode has (the message lists the forms), or
            its options are wrong.
        ImportError: a ``postgresql://`` URL without psycopg installed (the message says
            what to install).
        TypeError: `target` is neither a store nor a string.
    """
    if not isinstance(target, str):
        # kode's own stores first: a runtime Protocol check looks up every method (about
        # 20 us), and an agent made with a store makes this check each time.
        if isinstance(target, _OWN) or isinstance(target, Store):
            return target
        raise TypeError(f"a store must be a Store or a URL string, got {type(target).__name__}")
    url = target.strip()
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise StoreURLError(f"{target!r} is not a store URL; use {_FORMS}")
    if scheme == "memory":
        if rest not in ("", "/"):
            raise StoreURLError(f"a memory store URL is just 'memory://', got {target!r}")
        return MemoryStore()
    if scheme == "sqlite":
        return _sqlite(target, rest)
    if scheme in ("postgresql", "postgres"):
        from kode.sessions.postgres import PostgresStore

        if not rest.strip("/"):
            raise StoreURLError(f"{target!r} names no PostgreSQL server; use {_FORMS}")
        return PostgresStore(url)
    hint = ""
    if scheme.startswith(("postgresql+", "postgres+")):
        hint = " (drop the driver name: postgresql://...)"
    elif scheme.startswith("sqlite+"):
        hint = " (drop the driver name: sqlite:///...)"
    raise StoreURLError(f"no store for {scheme!r} URLs{hint}; use {_FORMS}")


def _sqlite(target: str, rest: str) -> Store:
    from kode.sessions.sqlite import SQLiteStore

    if not rest.startswith("/"):
        raise StoreURLError(
            f"{target!r}: a SQLite URL has three slashes before a relative path "
            "(sqlite:///data/sessions.db) and four before an absolute one "
            "(sqlite:////var/lib/app/sessions.db)"
        )
    path, _, query = rest[1:].partition("?")
    if not path:
        raise StoreURLError(
            f"{target!r} names no file; use sqlite:///path.db or sqlite:///:memory:"
        )
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key == "synchronous":
            if value.upper() not in ("NORMAL", "FULL"):
                raise StoreURLError(
                    f"{target!r}: synchronous must be NORMAL or FULL, got {value!r}"
                )
            options["synchronous"] = value.upper()
        elif key == "busy_timeout":
            try:
                options["busy_timeout"] = float(value)
            except ValueError:
                raise StoreURLError(
                    f"{target!r}: busy_timeout must be a number of seconds, got {value!r}"
                ) from None
        else:
            raise StoreURLError(
                f"{target!r}: unknown option {key!r}; SQLite URLs take synchronous= and "
                "busy_timeout="
            )
    return SQLiteStore(path, **options)
