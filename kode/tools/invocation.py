"""What a call says about itself to the person asked to approve it, and what it shows them after.

`CallDetails` is what a tool's describe function (``@my_tool.describe``) makes of one call's
arguments: a sentence saying what the call will do, the paths it touches, a unified diff of
the change it would make, and the text an "always for calls like this" answer is matched
against (a shell command, for ``bash_run``). The function runs only when a call needs
approval, so a tool pays nothing for it on calls that run without asking.

`Display` is the part of a `ToolResult` meant for people (a diff, a todo list, a command's
output): events and ``kode run`` show it; it never reaches the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CallDetails", "DescribeFunc", "Display"]


@dataclass(kw_only=True, frozen=True, slots=True)
class CallDetails:
    """What one call will do, for the person deciding whether it may.

    Example:
        ```python
        from kode.tools.invocation import CallDetails

        details = CallDetails(description="Run `git status` in repo/", pattern="git status")
        ```
    """

    description: str = ""
    """One line saying what the call does (``Write 120 lines to src/app.py``)."""
    locations: tuple[str, ...] = ()
    """The paths the call reads or changes, as the workspace shows them."""
    diff: str = ""
    """A unified diff of the change the call would make (empty: none to show)."""
    pattern: str | None = None
    """The text an "always allow calls starting with ..." answer is matched against (a
    command for ``bash_run``); `None`: the tool offers no such answer."""


DescribeFunc = Callable[[dict[str, Any], Any], CallDetails]
"""A tool's describe function: the validated arguments and the call's `ToolContext` (or
`None` outside a call) in, `CallDetails` out."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Display:
    """What a result shows a person, beside the content the model gets.

    Example:
        ```python
        from kode.tools.invocation import Display

        shown = Display(kind="terminal", text="README.md")
        ```
    """

    kind: Literal["text", "diff", "todos", "terminal"]
    """How to show it: plain text, a unified diff, a todo list, a terminal's output."""
    text: str
    """The text to show (for ``todos``, one line per item)."""
    data: Any = None
    """Structured data behind it, as JSON data (the items of a todo list)."""
