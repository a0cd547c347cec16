"""The agent's errors: `AgentError`, the root of what an agent raises, and `RunLimitError`.

They live apart from `kode.agent.agent` so that the modules the agent is made of can raise them
without importing the agent. It does not decide when they are raised.
"""

from __future__ import annotations

from kode.tools.errors import KodeError

__all__ = ["AgentError", "RunLimitError"]


class AgentError(KodeError):
    """An agent cannot be created or cannot continue (bad template tools, a failed model)."""


class RunLimitError(AgentError):
    """A run reached one of its template's `RunLimits`; the session can go on.

    The calls of the turn that would have passed the limit are answered without running, so
    the history stays valid: a later ``send()`` (or a resume) continues it, with the counts
    of a new run.
    """

    def __init__(self, message: str, *, limit: str, allowed: float, used: float) -> None:
        super().__init__(message)
        self.limit = limit
        """The limit's field in `RunLimits`: ``"tool_calls"``, ``"input_tokens"``, ..."""
        self.allowed = allowed
        """Its value."""
        self.used = used
        """What the run had used (for ``tool_calls``: with the calls it did not run)."""
