"""Exec safety for the runtime tools: which commands run, which ask first, which never run.

This module owns `RuntimePolicy` (a ``security`` level, an ``ask`` level, the safe-commands
list, the block-list and the limits), the command parser that splits a command line into the
simple commands of its pipelines and ``&&`` / ``||`` / ``;`` chains, and `check_command`, the
one decision every ``bash_run`` goes through. It also owns where the policy comes from (a
context variable, a process-wide default, or an agent's ``services["runtime_policy"]``). It does
not start processes (`kode.builtin._processes`) and does not define tools
(`kode.builtin.runtime`).

The decision for one command, in order:

1. a block-list pattern matches → refused, whatever the levels say;
2. ``security="deny"`` → refused;
3. ``ask="always"`` → ask;
4. a simple command that is not on the safe list (a *miss*) → ``ask="on_miss"``: ask;
   ``ask="off"``: refused under ``security="allowlist"``, run under ``security="full"``;
5. otherwise → run.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_BLOCKED",
    "DEFAULT_SAFE_COMMANDS",
    "AskLevel",
    "BlockRule",
    "CommandCheck",
    "RuntimePolicy",
    "SecurityLevel",
    "ambient_runtime_policy",
    "check_command",
    "parse_command",
    "runtime_policy_for",
    "set_default_runtime_policy",
    "using_runtime_policy",
]

SecurityLevel = Literal["deny", "allowlist", "full"]
"""``deny``: no command runs; ``allowlist``: only safe commands (and approved misses);
``full``: any command not on the block-list."""

AskLevel = Literal["off", "on_miss", "always"]
"""``off``: never ask; ``on_miss``: ask for commands not on the safe list; ``always``: ask for
every command."""


@dataclass(kw_only=True, frozen=True, slots=True)
class BlockRule:
    """A regular expression for commands that are refused before anything runs.

    The pattern is searched (`re.search`) in the command as written and in its normalised form
    (the shell words joined by single spaces, quotes removed), so ``rm -rf "/"`` is caught like
    ``rm -rf /``.
    """

    pattern: str
    """The regular expression."""
    reason: str
    """Why such commands are refused, in a few words (shown to the model)."""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    """The compiled pattern."""

    def __post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"block-list pattern {self.pattern!r} is invalid: {exc}") from None
        object.__setattr__(self, "regex", compiled)


_END = r"""(?=$|[\s;&|)"'])"""
_SYSTEM_DIRS = "bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|sbin|srv|sys|usr|var"
_ROOTS = rf"""(?:/|/\*|~|~/\*?|\$HOME/?\*?|\$\{{HOME\}}/?\*?|/(?:{_SYSTEM_DIRS})/?\*?)"""
_DISKS = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/)"

DEFAULT_BLOCKED: tuple[BlockRule, ...] = (
    BlockRule(
        pattern=rf"""\brm(?=[^;&|\n]*\s-(?:[a-zA-Z]*[rR][a-zA-Z]*|-recursive)\b)"""
        rf"""[^;&|\n]*\s["']?{_ROOTS}["']?{_END}""",
        reason="recursively deletes the root, a home or a system directory",
    ),
    BlockRule(pattern=r"--no-preserve-root", reason="disables rm's protection of /"),
    BlockRule(
        pattern=r"\b(?:curl|wget|fetch)\b[^;&\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?"
        r"(?:(?:ba|da|z|k|c|tc|fi)?sh|python[0-9.]*|perl|ruby|node)\b",
        reason="pipes a download into a shell or an interpreter",
    ),
    BlockRule(
        pattern=r"""\b(?:(?:ba|da|z|k)?sh|source|\.)\s[^;&|\n]*(?:\$\(|`|<\()\s*(?:curl|wget)\b""",
        reason="runs a downloaded script",
    ),
    BlockRule(
        pattern=r"(?P<f>[\w:.]+)\s*\(\s*\)\s*\{[^}]*(?P=f)\s*\|\s*(?P=f)\s*&",
        reason="is a fork bomb",
    ),
    BlockRule(pattern=r"\b(?:mkfs(?:\.\w+)?|mke2fs|wipefs)\b", reason="formats a disk"),
    BlockRule(pattern=rf"\bdd\b[^;&|\n]*\bof=[\"']?{_DISKS}", reason="writes raw data onto a disk"),
    BlockRule(pattern=rf">\s*[\"']?{_DISKS}", reason="writes raw data onto a disk"),
    BlockRule(pattern=rf"\bshred\b[^;&|\n]*{_DISKS}", reason="wipes a disk"),
    BlockRule(
        pattern=rf"""\b(?:chmod|chown|chgrp)(?=[^;&|\n]*\s-[a-zA-Z]*R)[^;&|\n]*\s["']?/["']?{_END}""",
        reason="recursively changes the permissions of /",
    ),
    BlockRule(
        pattern=r"(?:^|[;&|(]\s*|\bsudo\s+)(?:shutdown|reboot|halt|poweroff)\b"
        r"|(?:^|[;&|(]\s*|\bsudo\s+)init\s+[06]\b",
        reason="shuts the machine down",
    ),
)
"""The default block-list: the obviously destructive."""

DEFAULT_SAFE_COMMANDS: tuple[str, ...] = (
    "basename",
    "cat",
    "cut",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "false",
    "fgrep",
    "file",
    "git --version",
    "git diff",
    "git log",
    "git rev-parse",
    "git show",
    "git status",
    "grep",
    "head",
    "id",
    "ls",
    "nl",
    "node --version",
    "node -v",
    "printf",
    "pwd",
    "python --version",
    "python -V",
    "python3 --version",
    "python3 -V",
    "realpath",
    "rg",
    "sort",
    "stat",
    "tail",
    "tr",
    "tree",
    "true",
    "uname",
    "wc",
    "which",
    "whoami",
)
"""Commands that only read: they run without asking under ``ask="on_miss"``.

An entry is a command name, optionally followed by fixed words (``git status``). An entry whose
last word is an option (``python -V``) matches only exactly; the others accept any further
arguments, except the options in `RISKY_OPTIONS`. A command named by a path (``./ls``) never
matches.
"""

RISKY_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "git": ("--output", "--ext-diff", "--textconv", "--exec-path"),
    "rg": ("--pre",),
    "sort": ("--output", "-o", "--compress-program"),
}
"""Options that make an otherwise safe command write files or run programs.

Long options also match their abbreviations (``--out``), short ones inside clusters (``-ro``).
For these commands an argument the shell could expand (a glob, ``$``, ``~``, braces) is a miss
too: a file named ``--pre=evil`` must not sneak in through ``*``. A policy may pass its own
mapping.
"""


@dataclass(kw_only=True, frozen=True, slots=True)
class RuntimePolicy:
    """What the runtime tools may run, and when the agent's approver is asked.

    Where a ``bash_run`` call finds its policy, first match wins:

    1. ``ctx.services["runtime_policy"]`` — one agent's policy
       (``agent.services["runtime_policy"] = RuntimePolicy(...)`` after `Agent.create`);
    2. `using_runtime_policy` — a ``with`` block around ``agent.send(...)`` (a context variable);
    3. `set_default_runtime_policy` — the process-wide default, else ``RuntimePolicy()``.

    The approval check runs before the tool and cannot see ``ctx.services``: it uses (2) or
    (3). A policy in services still decides what runs (block-list, ``security``), but a command
    it would ask about that the approval check did not ask about is refused (fail closed), so
    set ``ask`` through (2) or (3) when it matters.

    Example:
        ```python
        from kode.builtin.runtime import RuntimePolicy, set_default_runtime_policy

        trusted = RuntimePolicy(security="full", ask="off", default_timeout=60)
        previous = set_default_runtime_policy(trusted)
        set_default_runtime_policy(previous)
        ```
    """

    security: SecurityLevel = "allowlist"
    """``deny``, ``allowlist`` or ``full`` (see `SecurityLevel`)."""
    ask: AskLevel = "on_miss"
    """``off``, ``on_miss`` or ``always`` (see `AskLevel`)."""
    safe_commands: tuple[str, ...] = DEFAULT_SAFE_COMMANDS
    """Commands that only read (see `DEFAULT_SAFE_COMMANDS` for the matching rules)."""
    risky_options: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(RISKY_OPTIONS)
    )
    """Options that make a safe command a miss (see `RISKY_OPTIONS`)."""
    blocked: tuple[BlockRule, ...] = DEFAULT_BLOCKED
    """Patterns of commands that never run (add to `DEFAULT_BLOCKED`, or replace it)."""
    default_timeout: float = 120.0
    """Seconds a foreground command may run when the call gives no ``timeout``."""
    max_timeout: float = 600.0
    """The largest ``timeout`` a call may ask for; a larger one is lowered to it."""
    max_output_chars: int = 30_000
    """Characters of output a result shows; the rest is cut, with a marker in the middle."""
    max_background: int = 16
    """Background shells one agent may have at once."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.security not in ("deny", "allowlist", "full"):
            problems.append(f"security must be deny, allowlist or full, not {self.security!r}")
        if self.ask not in ("off", "on_miss", "always"):
            problems.append(f"ask must be off, on_miss or always, not {self.ask!r}")
        if isinstance(self.safe_commands, str):
            problems.append("safe_commands must be a sequence of commands, not a string")
        if not 0 < self.default_timeout <= self.max_timeout:
            problems.append("timeouts must satisfy 0 < default_timeout <= max_timeout")
        if self.max_output_chars < 200:
            problems.append("max_output_chars must be at least 200")
        if self.max_background < 0:
            problems.append("max_background must not be negative")
        if problems:
            raise ValueError("invalid RuntimePolicy: " + "; ".join(problems))
        object.__setattr__(self, "safe_commands", tuple(self.safe_commands))
        object.__setattr__(self, "blocked", tuple(self.blocked))


# --- where the policy comes from --------------------------------------------------------------

_default_policy = RuntimePolicy()
_scoped: contextvars.ContextVar[RuntimePolicy | None] = contextvars.ContextVar(
    "kode_runtime_policy", default=None
)


def set_default_runtime_policy(policy: RuntimePolicy) -> RuntimePolicy:
    """Make `policy` the process-wide default; return the previous default."""
    global _default_policy
    if not isinstance(policy, RuntimePolicy):
        raise TypeError(f"expected a RuntimePolicy, got {type(policy).__name__}")
    previous, _default_policy = _default_policy, policy
    return previous


@contextlib.contextmanager
def using_runtime_policy(policy: RuntimePolicy) -> Iterator[RuntimePolicy]:
    """Use `policy` for the runtime tools called inside this block (and tasks it starts).

    Example:
        ```python
        from kode.builtin.runtime import RuntimePolicy, using_runtime_policy

        with using_runtime_policy(RuntimePolicy(ask="always")):
            ...  # await agent.send("..."): every command asks the approver first
        ```
    """
    if not isinstance(policy, RuntimePolicy):
        raise TypeError(f"expected a RuntimePolicy, got {type(policy).__name__}")
    token = _scoped.set(policy)
    try:
        yield policy
    finally:
        _scoped.reset(token)


def ambient_runtime_policy() -> RuntimePolicy:
    """The policy of the current ``using_runtime_policy`` block, else the default."""
    return _scoped.get() or _default_policy


def runtime_policy_for(services: Mapping[str, Any]) -> RuntimePolicy:
    """The policy a call with these agent services uses (see `RuntimePolicy`).

    Raises:
        TypeError: ``services["runtime_policy"]`` is set to something else.
    """
    found = services.get("runtime_policy")
    if found is None:
        return ambient_runtime_policy()
    if not isinstance(found, RuntimePolicy):
        raise TypeError(
            f"services['runtime_policy'] must be a RuntimePolicy, got {type(found).__name__}"
        )
    return found


# --- parsing ------------------------------------------------------------------------------------

_OPERATOR_CHARS = "();<>|&\n"
_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)\"""", re.DOTALL)
_ESCAPED_OPERATOR = re.compile(r"\\[();<>|&\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_EXPANDABLE = re.compile(r"[*?\[$`{]|^~|=~")


def _tokens(command: str) -> list[str] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash would refuse it too
        return None


def parse_command(command: str) -> list[list[str]] | None:
    """The simple commands of `command` (each a list of words), or `None`.

    Pipelines, ``&&``, ``||``, ``;``, ``&`` and newlines separate commands; redirections to
    ``/dev/null`` and between descriptors (``2>&1``) and input redirections are dropped. `None`
    means the command uses something this parser will not vouch for: command or process
    substitution, subshells, here-documents, output redirected to a file, an operator character
    that is quoted or escaped on its own, or unbalanced quotes.
    """
    if any(s in command for s in ("`", "$(", "<(", ">(")):
        return None
    if _ESCAPED_OPERATOR.search(command):
        return None
    for match in _QUOTED.finditer(command):
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        if inner and all(c in _OPERATOR_CHARS for c in inner):
            return None  # shlex would hand it back as a bare operator
    tokens = _tokens(command)
    if tokens is None:
        return None
    commands: list[list[str]] = []
    current: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "" or any(c not in _OPERATOR_CHARS for c in token):
            current.append(token)
            continue
        if "(" in token or ")" in token:
            return None
        if "<" in token or ">" in token:
            if "<<" in token or set(token) - set("<>&|"):
                return None
            target = tokens[index] if index < len(tokens) else ""
            index += 1
            if current and current[-1].isdigit():
                current.pop()  # the descriptor of ``2>...``
            if token.endswith("&") and len(token) > 1:  # >& and <&: descriptor duplication
                if not (target.isdigit() or target == "-"):
                    return None
            elif ">" in token and target != "/dev/null":
                return None
            continue
        if current:  # a separator: |, ||, &&, ;, &, |&, newline
            commands.append(current)
        current = []
    if current:
        commands.append(current)
    return commands


def _uses_option(argument: str, option: str) -> bool:
    if option.startswith("--"):
        if not argument.startswith("--") or len(argument) < 3:
            return False
        return option.startswith(argument.split("=", 1)[0])  # abbreviations count
    return (
        argument.startswith("-") and not argument.startswith("--") and option[1:2] in argument[1:]
    )


def _is_safe(words: list[str], policy: RuntimePolicy) -> bool:
    if not words or "/" in words[0] or _ASSIGNMENT.match(words[0]):
        return False
    risky = policy.risky_options.get(words[0], ())
    for entry in policy.safe_commands:
        fixed = entry.split()
        if words[: len(fixed)] != fixed:
            continue
        if fixed[-1].startswith("-") and len(words) != len(fixed):
            continue
        rest = words[len(fixed) :]
        if risky and any(_EXPANDABLE.search(arg) for arg in rest):
            return False
        if any(_uses_option(arg, option) for arg in rest for option in risky):
            return False
        return True
    return False


# --- the decision --------------------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True, slots=True)
class CommandCheck:
    """What a policy decided for one command."""

    action: Literal["run", "ask", "refuse"]
    """Run it, ask the approver first, or refuse it."""
    reason: str
    """Why, as a sentence fragment for the model."""
    misses: tuple[str, ...] = ()
    """The simple commands that are not on the safe list."""
    blocked_by: BlockRule | None = None
    """The block-list rule that matched, if one did."""


def _blocked(command: str, policy: RuntimePolicy) -> BlockRule | None:
    tokens = _tokens(command)
    forms = [command] if tokens is None else [command, " ".join(tokens)]
    for rule in policy.blocked:
        if any(rule.regex.search(form) for form in forms):
            return rule
    return None


def check_command(policy: RuntimePolicy, command: str) -> CommandCheck:
    """Decide `command` by the rules in this module's docstring."""
    rule = _blocked(command, policy)
    if rule is not None:
        return CommandCheck(
            action="refuse", reason=f"it {rule.reason} (block-list)", blocked_by=rule
        )
    if policy.security == "deny":
        return CommandCheck(action="refuse", reason="running commands is disabled (security=deny)")
    parsed = parse_command(command)
    if parsed is None:
        misses: tuple[str, ...] = (command.strip(),)
    else:
        misses = tuple(" ".join(words) for words in parsed if not _is_safe(words, policy))
    if policy.ask == "always":
        return CommandCheck(action="ask", reason="every command needs approval", misses=misses)
    if not misses:
        return CommandCheck(action="run", reason="only safe commands")
    if policy.ask == "on_miss":
        return CommandCheck(
            action="ask", reason="it runs commands outside the safe list", misses=misses
        )
    if policy.security == "allowlist":
        shown = "; ".join(m if len(m) <= 80 else m[:77] + "..." for m in misses[:3])
        return CommandCheck(
            action="refuse",
            reason=f"only commands on the safe list may run (security=allowlist), and these "
            f"are not: {shown}",
            misses=misses,
        )
    return CommandCheck(action="run", reason="security=full", misses=misses)
