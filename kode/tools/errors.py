"""The root of every exception kode raises, the tools' own, and the error kinds of a result.

This module owns `KodeError`, the tools' exceptions and `ToolErrorType`. Each layer defines
its exceptions next to what raises them, all below `KodeError`, and `kode` exports every one.
It does not decide how an error becomes a `tool_result`; `kode.tools.results` does that.

Hierarchy (docs/errors.md has it too; tests/test_errors.py checks both against the classes)::

    KodeError
    ├── AgentError               an agent cannot be made or cannot go on (kode.agent)
    │   └── RunLimitError        a run reached a limit of its template's (tool calls, tokens, cost)
    ├── DepsSpecError            a module:factory deps spec gives no deps (also a ValueError)
    ├── DiscoveryError           a discovery command failed or printed no declarations
    ├── MCPConnectionError       an MCP server could not be started or reached (kode.mcp)
    ├── ModelError               a provider failed (kode.models)
    ├── PolicyError              a tool policy is malformed (also a ValueError)
    ├── RuleError                a permission rule or rules file is malformed (also a ValueError)
    ├── ScriptError              a file of scripted turns is invalid (also a ValueError)
    ├── SessionError             a session store refused an operation (kode.sessions)
    │   ├── SchemaVersionError   the database's schema is newer than this kode knows
    │   ├── SessionConflictError another process wrote the session since it was read
    │   ├── SessionExistsError   a session by that id exists already
    │   ├── SessionLeaseError    another owner holds the session's lease
    │   ├── SessionNotFoundError no session by that id (also a KeyError)
    │   ├── SessionRecordError   a record cannot follow the records before it
    │   ├── StoreError           the database itself failed
    │   └── StoreURLError        a store URL kode cannot open (also a ValueError)
    ├── SkillError               a skill is malformed or not available (also a ValueError)
    ├── TemplateError            an agent template is malformed or unknown (also a ValueError)
    ├── ToolDefinitionError      a function cannot be a tool (raised at decoration time)
    ├── ToolError                raised by a tool on purpose; becomes an error result
    │   └── ToolRetry            asks the model to call the tool again (a retry budget applies)
    └── ToolNotFoundError        a registry has no tool by that name (also a KeyError)
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "KodeError",
    "ToolDefinitionError",
    "ToolError",
    "ToolErrorType",
    "ToolRetry",
    "ToolNotFoundError",
]


class ToolErrorType(StrEnum):
    """Why a tool call ended in an error result.

    The value is a stable, machine-readable string carried by `ToolResult.error_type`; the
    message next to it is written for the model.
    """

    INVALID_TOOL_PARAMS = "invalid_tool_params"
    """The model's arguments did not match the tool's input schema."""
    TOOL_NOT_REGISTERED = "tool_not_registered"
    """No tool by that name is available."""
    POLICY_VIOLATION = "policy_violation"
    """A tool policy does not allow this tool here."""
    PERMISSION_DENIED = "permission_denied"
    """A permission check, an approver or a hook refused the call."""
    TIMEOUT = "timeout"
    """The tool did not finish within its `timeout`."""
    CANCELLED = "cancelled"
    """The call was cancelled before it finished."""
    EXECUTION_FAILED = "execution_failed"
    """The tool raised an exception it did not mean to raise."""
    FILE_NOT_FOUND = "file_not_found"
    """A file the tool needs does not exist."""
    PATH_NOT_IN_WORKSPACE = "path_not_in_workspace"
    """A path resolves outside the workspace the tool may touch."""
    INVALID_RESULT = "invalid_result"
    """The tool returned a value that cannot be shown to a model."""
    TOOL_ERROR = "tool_error"
    """The tool raised `ToolError` without naming a more specific type."""
    RETRY = "retry"
    """The tool raised `ToolRetry`: the model should call it again, as its message says."""


class KodeError(Exception):
    """The root of every exception kode raises."""


class ToolDefinitionError(KodeError, TypeError):
    """A function cannot be turned into a tool.

    Raised by `define_tool` at decoration time. The message names the function by its
    `__qualname__` and lists every problem found, separated by ``; ``.
    """

    def __init__(self, qualname: str, problems: list[str]) -> None:
        self.qualname = qualname
        """The `__qualname__` of the function (or the tool name) at fault."""
        self.problems = list(problems)
        """Each problem, as one sentence fragment."""
        super().__init__(f"{qualname}: {'; '.join(self.problems)}")


class ToolNotFoundError(KodeError, KeyError):
    """A registry has no tool by the requested name."""

    def __init__(self, name: str, available: list[str], suggestions: list[str]) -> None:
        self.name = name
        """The name that was asked for."""
        self.available = available
        """Every name the registry holds, sorted."""
        self.suggestions = suggestions
        """Registered names close to `name`, best first."""
        hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"No tool named {name!r} is registered.{hint}")

    def __str__(self) -> str:
        # KeyError.__str__ would repr() the message; keep it readable.
        return str(self.args[0])


class ToolError(KodeError):
    """Raise inside a tool to end the call with an error result the model can act on.

    Example:
        ```python
        from kode import ToolError, ToolErrorType

        def open_ticket(ticket_id: int) -> str:
            raise ToolError(
                f"Ticket {ticket_id} does not exist; list tickets first.",
                type=ToolErrorType.FILE_NOT_FOUND,
            )
        ```
    """

    def __init__(
        self,
        message: str,
        *,
        type: ToolErrorType | str = ToolErrorType.TOOL_ERROR,
        details: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """The text shown to the model."""
        self.type = ToolErrorType(type)
        """The machine-readable kind of error."""
        self.details = details
        """Structured data kept on the result's `details` (never shown to the model)."""


class ToolRetry(ToolError):
    """Raise inside a tool to ask the model to call it again, with what to change.

    The call ends with an error result of type ``retry`` carrying `message`, as `ToolError`
    does; an agent also counts it against the tool's retry budget
    (``define_tool(retries=...)``, 1 by default): a tool that asks for more retries than that
    in one run ends the run with an `AgentError` (its call is answered, so the session goes on
    at the next ``send``).

    Example:
        ```python
        from datetime import date

        from kode import ToolRetry, define_tool


        @define_tool(retries=2)
        def book_room(day: str) -> str:
            '''Book the meeting room for a day, given as YYYY-MM-DD.'''
            try:
                booked = date.fromisoformat(day)
            except ValueError:
                raise ToolRetry(f"{day!r} is not a date: write it as YYYY-MM-DD.") from None
            return f"Booked for {booked:%A %d %B}."


        print(book_room.run_sync({"day": "next tuesday"}).text)
        ```
    """

    def __init__(self, message: str, *, details: object = None) -> None:
        super().__init__(message, type=ToolErrorType.RETRY, details=details)
