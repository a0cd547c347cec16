"""What ``bash_run`` shows a person: its command before it runs, its output after.

Before: the command and its directory (`CallDetails`, for an approval). After: the terminal
output, as the result's `Display`.
"""

from __future__ import annotations

from typing import Any

from kode.tools.invocation import CallDetails, Display

__all__ = ["describe_run", "terminal_display"]


def describe_run(arguments: dict[str, Any], ctx: Any) -> CallDetails:
    """The command and where it runs.

    Its pattern (what "always allow ``git status ...``" matches) is the command, trimmed.
    """
    command = str(arguments.get("command", "")).strip()
    cwd = arguments.get("cwd") or "."
    how = " in the background" if arguments.get("background") else ""
    return CallDetails(
        description=f"Run `{command}` in {cwd}{how}",
        locations=(str(cwd),),
        pattern=command,
    )


def terminal_display(command: str, output: str) -> Display:
    """A command's run as a terminal shows it: a prompt line, then its output."""
    return Display(kind="terminal", text=f"$ {command}\n{output}")
