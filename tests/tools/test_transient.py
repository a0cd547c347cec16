"""define_tool(transient=...): an idempotent tool's call runs again after a transient failure,
with a growing wait, up to transient_retries more times; other tools are refused."""

from __future__ import annotations

import itertools
import time

import pytest

from kode import ToolDefinitionError, define_tool
from kode.tools import transient


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transient, "BACKOFF_FIRST", 0.01)
    monkeypatch.setattr(transient, "BACKOFF_CAP", 0.04)


def test_a_sync_tool_runs_again_until_it_succeeds(isolated_registry: object) -> None:
    attempts: list[float] = []

    @define_tool(idempotent=True, transient=(ConnectionError,), transient_retries=3)
    def fetch_rate(currency: str) -> float:
        """Fetch an exchange rate.

        Args:
            currency: The currency.
        """
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ConnectionError("connection reset by peer")
        return 1.08

    result = fetch_rate.run_sync({"currency": "EUR"})
    assert not result.is_error and result.text == "1.08"
    assert len(attempts) == 3
    waits = [b - a for a, b in itertools.pairwise(attempts)]
    assert waits[0] >= 0.01 and waits[1] >= 0.02  # it waited, longer each time
    attempts.clear()
    with pytest.raises(ConnectionError):  # calling the tool calls the function once, unchanged
        fetch_rate("EUR")
    assert len(attempts) == 1


def test_an_async_tool_gives_up_after_its_retries(isolated_registry: object) -> None:
    attempts = 0

    @define_tool(idempotent=True, transient=(TimeoutError,), transient_retries=2)
    async def ping_host(host: str) -> str:
        """Ping a host.

        Args:
            host: The host.
        """
        nonlocal attempts
        attempts += 1
        raise TimeoutError(f"{host} did not answer")

    result = ping_host.run_sync({"host": "db"})
    assert attempts == 3  # the first attempt and two more
    assert result.is_error and result.error_type == "execution_failed"
    assert "TimeoutError: db did not answer" in result.text


def test_other_exceptions_are_not_retried(isolated_registry: object) -> None:
    attempts = 0

    @define_tool(idempotent=True, transient=(ConnectionError,))
    def parse(text: str) -> int:
        """Parse a number.

        Args:
            text: The text.
        """
        nonlocal attempts
        attempts += 1
        return int(text)

    assert parse.run_sync({"text": "x"}).is_error
    assert attempts == 1


def test_the_timeout_covers_every_attempt(
    isolated_registry: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transient, "BACKOFF_FIRST", 0.2)
    monkeypatch.setattr(transient, "BACKOFF_CAP", 0.2)
    attempts = 0

    @define_tool(idempotent=True, transient=(ConnectionError,), transient_retries=50, timeout=0.5)
    async def flaky() -> str:
        """Fail every time."""
        nonlocal attempts
        attempts += 1
        raise ConnectionError("down")

    result = flaky.run_sync({})
    assert result.error_type == "timeout"
    assert 1 <= attempts <= 4


def test_only_idempotent_threaded_tools_may_retry(isolated_registry: object) -> None:
    with pytest.raises(ToolDefinitionError, match="only an idempotent tool may have it"):

        @define_tool(transient=(ConnectionError,))
        def send_mail(to: str) -> str:
            """Send a mail.

            Args:
                to: Who.
            """
            return to

    with pytest.raises(ToolDefinitionError, match="must run in a worker thread"):

        @define_tool(idempotent=True, transient=(ConnectionError,), run_in_thread=False)
        def inline(x: int) -> int:
            """Inline.

            Args:
                x: X.
            """
            return x

    with pytest.raises(ToolDefinitionError, match="not exception classes"):

        @define_tool(idempotent=True, transient=("ConnectionError",))  # type: ignore[arg-type]
        def named(x: int) -> int:
            """Named.

            Args:
                x: X.
            """
            return x

    with pytest.raises(ToolDefinitionError, match="transient_retries=0 is not a count from 1"):

        @define_tool(idempotent=True, transient=(ConnectionError,), transient_retries=0)
        def never(x: int) -> int:
            """Never.

            Args:
                x: X.
            """
            return x
