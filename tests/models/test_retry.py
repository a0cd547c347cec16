"""When a failed request is retried and how long the model waits first (kode.models._retry)."""

from __future__ import annotations

import email.utils
import time

import pytest

from kode.models import ModelError
from kode.models._retry import MAX_RETRY_AFTER, retry_after, retry_event, worth_retrying


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, {}, True),
        (408, {}, True),
        (409, {}, True),
        (500, {}, True),
        (503, {}, True),
        (529, {}, True),
        (None, {}, True),  # no response: the connection failed or timed out
        (400, {}, False),
        (401, {}, False),
        (404, {}, False),
        (500, {"x-should-retry": "false"}, False),
        (400, {"x-should-retry": "true"}, True),
        (429, {"x-should-retry": "maybe"}, True),
    ],
)
def test_worth_retrying(status: int | None, headers: dict[str, str], expected: bool) -> None:
    assert worth_retrying(status, headers) is expected


def test_retry_after_in_milliseconds_wins() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25


def test_retry_after_in_seconds_and_as_a_date() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    waited = retry_after({"retry-after": later})
    assert waited is not None and 28 <= waited <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after({"retry-after": past}) == 0.0


def test_no_or_unreadable_retry_after() -> None:
    assert retry_after(None) is None
    assert retry_after({}) is None
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({"retry-after-ms": "x", "retry-after": "2"}) == 2.0


def error(*, retryable: bool = True, after: float | None = None) -> ModelError:
    return ModelError("busy", status_code=503, retryable=retryable, retry_after=after)


def test_the_servers_wait_is_used() -> None:
    event = retry_event(error(after=1.5), 0, 2)
    assert event is not None
    assert (event.attempt, event.max_retries, event.delay, event.message) == (1, 2, 1.5, "busy")


def test_backoff_doubles_with_jitter() -> None:
    delays = []
    for done in range(6):
        event = retry_event(error(), done, 10)
        assert event is not None
        delays.append(event.delay)
    for done, delay in enumerate(delays):
        full = min(0.5 * 2**done, 8.0)
        assert 0.75 * full <= delay <= full


def test_no_retry_when_not_worth_it_out_of_retries_or_asked_to_wait_too_long() -> None:
    assert retry_event(error(retryable=False), 0, 2) is None
    assert retry_event(error(), 2, 2) is None
    assert retry_event(error(after=MAX_RETRY_AFTER + 1), 0, 2) is None
