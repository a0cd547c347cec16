"""Limits on one run of an agent: tool calls, tokens and a cost budget.

This module owns `RunLimits` (a template's limits, with `TokenPrices` for the cost budget)
and the two checks a run makes: before each model request after the first
(`RunLimits.spent`: tokens and cost so far) and before a turn's calls run
(`RunLimits.calls_over`), each making the `RunLimitError` that ends the run. It does not count
usage (the run adds up what the model reports) and does not end the run (`kode.agent.run`
answers the calls it does not run, and stops).

A run is one ``send()`` (or ``stream()``): the counts start again at the next one, so a session
that a limit stopped goes on when it is sent a prompt again, or resumed in another process.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kode.agent.errors import RunLimitError
from kode.models.messages import Usage

__all__ = ["RunLimits", "TokenPrices"]


class TokenPrices(BaseModel):
    """What a model's tokens cost, per million, in the currency of the budget."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    """The price of a million input (prompt) tokens."""
    output: float = Field(ge=0)
    """The price of a million output (completion) tokens."""

    def cost(self, usage: Usage) -> float:
        """What `usage` costs."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / 1e6


class RunLimits(BaseModel):
    """Limits on one run (one ``send()``): reaching one ends the run with a `RunLimitError`.

    Tokens are counted as the provider reports them, after each model response, so a run
    stops before the request that would start past a limit: the response that crossed it
    has been paid for. None is set by default (``max_turns`` still bounds a run).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool_calls: int | None = Field(default=None, ge=0)
    """The most tool calls one run runs. A turn whose calls would pass it runs none of them."""
    input_tokens: int | None = Field(default=None, ge=1)
    """The most input (prompt) tokens one run's requests may have used."""
    output_tokens: int | None = Field(default=None, ge=1)
    """The most output tokens one run's responses may have used."""
    total_tokens: int | None = Field(default=None, ge=1)
    """The most input and output tokens together."""
    cost: float | None = Field(default=None, gt=0)
    """A budget for one run, in the currency of `prices` (which it needs)."""
    prices: TokenPrices | None = None
    """What the model's tokens cost, for `cost`."""

    @model_validator(mode="after")
    def _cost_has_prices(self) -> RunLimits:
        if self.cost is not None and self.prices is None:
            raise ValueError(
                "a cost budget needs the model's prices: give prices={'input': ..., "
                "'output': ...} per million tokens"
            )
        return self

    @property
    def counts_tokens(self) -> bool:
        """Whether any limit is on tokens or cost (checked before each later request)."""
        return (
            self.input_tokens is not None
            or self.output_tokens is not None
            or self.total_tokens is not None
            or self.cost is not None
        )

    def spent(self, used: Usage) -> RunLimitError | None:
        """The error for the first token or cost limit `used` has reached, if any."""
        checks: list[tuple[str, float | None, float, str]] = [
            ("input_tokens", self.input_tokens, used.input_tokens, "input tokens"),
            ("output_tokens", self.output_tokens, used.output_tokens, "output tokens"),
            ("total_tokens", self.total_tokens, used.input_tokens + used.output_tokens, "tokens"),
        ]
        if self.cost is not None and self.prices is not None:
            checks.append(("cost", self.cost, self.prices.cost(used), "of cost"))
        for name, allowed, amount, what in checks:
            if allowed is not None and amount >= allowed:
                shown = f"{allowed:g}" if name == "cost" else f"{int(allowed):,}"
                spent = f"{amount:.4g}" if name == "cost" else f"{int(amount):,}"
                return RunLimitError(
                    f"the run reached its limit of {shown} {what} ({spent} used) before its "
                    f"next model request; raise limits.{name} in the template if the task "
                    "needs more, or send again to go on",
                    limit=name,
                    allowed=allowed,
                    used=amount,
                )
        return None

    def calls_over(self, ran: int, calls: int) -> RunLimitError | None:
        """The error when `calls` more calls would take a run that ran `ran` past its limit."""
        if self.tool_calls is None or ran + calls <= self.tool_calls:
            return None
        return RunLimitError(
            f"the run reached its limit of {self.tool_calls:,} tool "
            f"call{'' if self.tool_calls == 1 else 's'}: it ran {ran:,} and "
            f"the model asked for {calls:,} more, which did not run; raise limits.tool_calls "
            "in the template if the task needs more, or send again to go on",
            limit="tool_calls",
            allowed=self.tool_calls,
            used=ran + calls,
        )
