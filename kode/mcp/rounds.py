"""A served tool that asks, on the 2026-07-28 protocol: ``input_required`` results and retries.

On the 2026-07-28 protocol a server cannot send the client requests of its own: a tool that
needs an answer returns an ``input_required`` result carrying the question
(``inputRequests``) and an opaque ``requestState``, and the client calls the tool again with
its answers (``inputResponses``) and that state. This module turns a kode tool's
``ctx.elicit`` and ``ctx.sample`` into that exchange for `kode.mcp.server.ToolServer`:

- a round runs the tool from its start; each question it asks is answered from the answers
  the earlier rounds collected, in order, and the first one without an answer stops the run
  (its cancel scope is cancelled) and becomes this round's ``input_required`` result;
- the answers travel in ``requestState``, which the SDK's `RequestStateBoundary` seals
  (AES-256-GCM under a key of the server's, bound to the tool's name, its arguments, the
  server's name, the authenticated client when there is one, and a lifetime), so what comes
  back is what this server sent: a forged or altered state is refused before the tool runs;
- a question asked again is recognised by its digest: a tool that asks something else when
  run again (it is not deterministic up to its questions) gets a `ToolError` saying so.

So the tool runs once per answer, and what it does before a question is done again on each
round: a tool that asks should ask before it acts (docs/mcp.md, Limits).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.server.request_state import compact_json
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["CURRENT_ROUNDS", "MAX_QUESTIONS", "Asker", "Rounds"]

ResultT = TypeVar("ResultT", bound=types.Result)


class Asker(Protocol):
    """Where a served call's questions go on 2026-07-28: `Rounds`, or a task's questions."""

    async def ask(
        self,
        request: types.ElicitRequest | types.CreateMessageRequest,
        result_type: type[ResultT],
    ) -> ResultT:
        """The client's answer to `request`."""
        ...


MAX_QUESTIONS = 32
"""The most questions (``ctx.elicit`` and ``ctx.sample``) one served call may ask on 2026-07-28."""

CURRENT_ROUNDS: contextvars.ContextVar[Asker | None]
CURRENT_ROUNDS = contextvars.ContextVar("kode_mcp_current_rounds", default=None)
"""Where the questions of the 2026-07-28 call served in this task go (set by `ToolServer`):
its `Rounds`, or, for a call run as a task, the task's questions."""

_STATE_VERSION = 1


def _digest(request: types.ElicitRequest | types.CreateMessageRequest) -> str:
    """What identifies a question across runs (a URL elicitation's fresh id left out)."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    params = data.get("params") or {}
    params.pop("elicitationId", None)
    params.pop("_meta", None)
    return hashlib.sha256(compact_json(data, sort_keys=True).encode()).hexdigest()[:32]


def _bad_retry(text: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=text)


@dataclass(kw_only=True, slots=True)
class _Answer:
    digest: str
    result: dict[str, Any]


@dataclass(kw_only=True, slots=True)
class Rounds:
    """One round of a served call on 2026-07-28: the answers so far, and a question to ask."""

    tool_name: str
    answers: list[_Answer] = field(default_factory=list)
    asked: tuple[str, types.ElicitRequest | types.CreateMessageRequest] | None = None
    scope: anyio.CancelScope | None = None
    _position: int = 0

    @classmethod
    def resume(cls, params: types.CallToolRequestParams) -> Rounds:
        """The round a ``tools/call`` starts: its state (already verified) and its answers.

        Raises:
            MCPError: the state is not one of this module's, or the answer it waits for is
                missing or malformed (``-32602``).
        """
        rounds = cls(tool_name=params.name)
        state = params.request_state
        if state is None:
            return rounds
        try:
            decoded = json.loads(state)
            if decoded.get("v") != _STATE_VERSION:
                raise ValueError("version")
            rounds.answers = [_Answer(digest=a["d"], result=a["r"]) for a in decoded["answers"]]
            key, digest = decoded["asked"]["key"], decoded["asked"]["d"]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _bad_retry(
                "The requestState of this tools/call is not one this server made; retry the "
                "call without it to start again."
            ) from None
        response = (params.input_responses or {}).get(key)
        if response is None:
            raise _bad_retry(
                f"The retried tools/call of '{params.name}' has no inputResponses[{key!r}]: "
                "answer the input request the server sent, with the same key."
            )
        rounds.answers.append(
            _Answer(
                digest=digest,
                result=response.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
        )
        return rounds

    async def ask(
        self,
        request: types.ElicitRequest | types.CreateMessageRequest,
        result_type: type[ResultT],
    ) -> ResultT:
        """The answer to `request`: from an earlier round, or stop this run and ask the client.

        Raises:
            ToolError: the tool asked something else than when it was run for the earlier
                answers, asked more than `MAX_QUESTIONS` questions, or the answer is malformed.
        """
        digest = _digest(request)
        position = self._position
        self._position += 1
        if position < len(self.answers):
            answer = self.answers[position]
            if answer.digest != digest:
                raise ToolError(
                    f"Tool '{self.tool_name}' asked another question when run again for the "
                    "client's answers: on the 2026-07-28 protocol a served tool that asks runs "
                    "again from its start for each answer, so it must ask the same questions in "
                    "the same order.",
                    type=ToolErrorType.EXECUTION_FAILED,
                )
            try:
                return result_type.model_validate(answer.result, by_name=False)
            except ValidationError as exc:
                raise ToolError(
                    f"The MCP client's answer is not a valid {result_type.__name__}: {exc}",
                    type=ToolErrorType.EXECUTION_FAILED,
                ) from None
        if position >= MAX_QUESTIONS:
            raise ToolError(
                f"Tool '{self.tool_name}' asked more than {MAX_QUESTIONS} questions in one call; "
                "a served call on the 2026-07-28 protocol may ask at most that many.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        self.asked = (f"q{position}", request)
        assert self.scope is not None, "ToolServer sets the call's scope before it runs"
        self.scope.cancel()  # the run stops here; the round's result is the question
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    def input_required(self) -> types.InputRequiredResult:
        """This round's result: the question asked, and the answers so far as the state."""
        assert self.asked is not None
        key, request = self.asked
        state = {
            "v": _STATE_VERSION,
            "answers": [{"d": a.digest, "r": a.result} for a in self.answers],
            "asked": {"key": key, "d": _digest(request)},
        }
        return types.InputRequiredResult(
            input_requests={key: request}, request_state=compact_json(state)
        )
