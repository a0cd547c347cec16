"""When a failed provider request is worth retrying, and how long to wait first.

This module owns the reading of a failed response (its status and its ``retry-after`` /
``x-should-retry`` headers) into `ModelError.retryable` and `ModelError.retry_after`, and the
choice of the wait before each retry. It sends nothing: the provider models retry, and yield a
`ModelRetry` event before each retry.

The rules, the same for every provider:

- ``x-should-retry: true`` / ``false`` (sent by OpenAI and Anthropic) decides when present;
- otherwise 408, 409, 429 and every 5xx status are worth retrying, and so are a connection
  that failed or timed out; nothing else is;
- the wait is the server's ``retry-after-ms`` or ``retry-after`` (seconds, or an HTTP date)
  when it sends one, else 0.5 s doubled at each retry up to 8 s, less up to a quarter at random
  so that many clients do not retry at the same instant;
- a server asking for more than `MAX_RETRY_AFTER` seconds is not waited for: the error is
  raised at once.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

from kode.models.base import ModelError, ModelRetry

__all__ = ["MAX_RETRY_AFTER", "retry_after", "retry_event", "worth_retrying"]

MAX_RETRY_AFTER = 60.0
"""The longest ``retry-after`` a model waits; a longer one fails at once."""

_INITIAL_BACKOFF = 0.5
_MAX_BACKOFF = 8.0
_RETRY_STATUSES = frozenset({408, 409, 429})


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except Exception:  # an unusual headers object: treat as absent
        return None
    return value if isinstance(value, str) else None


def worth_retrying(status: int | None, headers: Mapping[str, str] | None) -> bool:
    """Whether a request that failed with `status` (`None`: no response) may succeed if retried."""
    said = (_header(headers, "x-should-retry") or "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    if status is None:
        return True
    return status in _RETRY_STATUSES or status >= 500


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The seconds the server asks to wait (``retry-after-ms``, ``retry-after``), if it says."""
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    if when is None:
        return None
    return max(email.utils.mktime_tz(when) - time.time(), 0.0)


def retry_event(error: ModelError, retries_done: int, max_retries: int) -> ModelRetry | None:
    """The `ModelRetry` to make after `error`, or `None` when it must be raised instead.

    Args:
        error: The failure.
        retries_done: How many retries were already made for this request.
        max_retries: The most retries allowed.
    """
    if not error.retryable or retries_done >= max_retries:
        return None
    if error.retry_after is not None:
        if error.retry_after > MAX_RETRY_AFTER:
            return None
        delay = error.retry_after
    else:
        backoff = min(_INITIAL_BACKOFF * 2**retries_done, _MAX_BACKOFF)
        delay = backoff * (1 - 0.25 * random.random())
    return ModelRetry(attempt=retries_done + 1, max_retries=max_retries, delay=delay, error=error)
