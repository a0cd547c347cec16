"""Reading a shell command line for the runtime policy, without ever guessing.

This module owns `parse_shell`: it splits a command line into the simple commands of its
pipelines and ``;`` / ``&&`` / ``||`` / newline chains, and says why when it will not vouch
for the line. It does not decide what may run (`kode.builtin._shared._policy`) and never
runs anything.

Two readers must agree before a line is vouched for:

1. a strict lexer of its own, which accepts only a small, inert subset of bash: words made of
   plain characters, single quotes, double quotes without ``$``, backquote, backslash or
   ``!``, globs, the separators above, ``|&``, output to ``/dev/null``, descriptor duplication
   (``2>&1``) and input redirection (``< file``). Everything else — any ``$`` (parameters,
   ``${x@P}``, command and arithmetic substitution, ``$'...'``), backquotes, backslashes,
   braces, parentheses, ``~`` where bash expands it, ``!``, ``#``, ``&`` in the background,
   here-documents and here-strings, output to files, reserved words — is a *problem*;
2. `bashlex`, a real bash parser (the optional extra ``kode-sdk[shell]``): its syntax tree must
   hold only lists, pipelines, simple commands, plain words (no expansion parts), those
   operators and those redirections, and give the same words as the lexer. A line it cannot
   parse is a problem.

Without bashlex only the plainest lines are vouched for: unquoted words, the separators, no
redirections. A line longer than `MAX_PARSED_CHARS` is never vouched for.
"""

from __future__ import annotations

import importlib
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BASHLEX",
    "MAX_PARSED_CHARS",
    "ParsedCommand",
    "SimpleCommand",
    "Word",
    "load_parser",
    "parse_shell",
    "parser_loaded",
]

_NOT_LOADED: Any = object()
BASHLEX: Any = _NOT_LOADED
"""The bashlex module, or `None` when it is not installed (tests may set it to `None`).

Imported on the first line read, not with this module: bashlex builds its parser tables when
imported, which took a quarter of ``import kode.builtin``."""


def _load_bashlex() -> Any:
    """`BASHLEX`, imported on first use (the optional extra kode-sdk[shell])."""
    global BASHLEX
    if BASHLEX is _NOT_LOADED:
        try:  # bashlex ships no type information
            found: Any = importlib.import_module("bashlex")
        except ImportError:  # pragma: no cover - exercised by setting BASHLEX to None
            found = None
        if BASHLEX is _NOT_LOADED:  # not set meanwhile (the import may run in a thread)
            BASHLEX = found
    return BASHLEX


def load_parser() -> None:
    """Import bashlex now, if it is not yet imported.

    It builds its parser tables (a tenth of a second or more): a blocking step, for a worker
    thread, so that no event loop waits for it.
    """
    _load_bashlex()


def parser_loaded() -> bool:
    """Whether bashlex was imported (or found missing): reading a line then costs no import."""
    return BASHLEX is not _NOT_LOADED


MAX_PARSED_CHARS = 4_096
"""Longer command lines are not parsed, so never vouched for: they need approval. (bashlex
takes seconds on a line of 100,000 characters, and the check runs before every call.)"""

_PLAIN = frozenset(string.ascii_letters + string.digits + "_./:=,+%@^-")
_GLOB = frozenset("*?[]")
_BLANK = " \t"
_RESERVED = frozenset(
    "! [[ ]] { } case coproc do done elif else esac fi for function if in select then "
    "time until while".split()
)
_EXPANSION = {
    "$(": "uses command substitution ($(...))",
    "$((": "uses arithmetic expansion ($((...)))",
    "${": "uses parameter expansion (${...})",
    "$'": "uses ANSI-C quoting ($'...'), which can spell any character",
    '$"': 'uses locale quoting ($"...")',
}
_CHARACTERS = {
    "`": "uses command substitution (backquotes)",
    "\\": "uses a backslash escape",
    "(": "uses a subshell, a function definition or an extended glob (parentheses)",
    ")": "uses a subshell, a function definition or an extended glob (parentheses)",
    "{": "uses braces (brace expansion or a command group)",
    "}": "uses braces (brace expansion or a command group)",
    "!": "uses ! (history expansion or a negated pipeline)",
    "#": "uses # (a comment)",
    "~": "uses ~ (a home directory)",
}


@dataclass(kw_only=True, frozen=True, slots=True)
class Word:
    """One shell word after quote removal."""

    text: str
    """The word as the command receives it."""
    glob: bool = False
    """Whether it has an unquoted ``*``, ``?`` or ``[`` (bash may expand it to file names)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SimpleCommand:
    """One command of a pipeline or chain."""

    words: tuple[Word, ...]
    """The command name and its arguments."""
    inputs: tuple[Word, ...] = ()
    """Files redirected into it (``< file``)."""

    @property
    def texts(self) -> list[str]:
        """The words as plain strings."""
        return [w.text for w in self.words]


@dataclass(kw_only=True, frozen=True, slots=True)
class ParsedCommand:
    """What `parse_shell` read."""

    commands: tuple[SimpleCommand, ...] = ()
    """The simple commands, in order (empty when there is a problem)."""
    problem: str | None = None
    """Why the line is not vouched for, as a sentence fragment (``uses a backslash escape``)."""


class _Refused(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(kw_only=True, slots=True)
class _Lexer:
    text: str
    rich: bool  # quotes and redirections allowed (only when bashlex double-checks)
    at: int = 0
    commands: list[SimpleCommand] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    inputs: list[Word] = field(default_factory=list)
    chars: list[str] = field(default_factory=list)
    started: bool = False  # a word is open (even an empty quoted one)
    quoted: bool = False  # the open word has a quoted part
    glob: bool = False
    redirect: str | None = None  # "<" or ">": the next word is its target
    needs_command: bool = False  # after |, && or ||

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.text[index] if index < len(self.text) else ""

    def end_word(self) -> None:
        if not self.started:
            return
        word = Word(text="".join(self.chars), glob=self.glob)
        if self.redirect is None and not self.words and not self.quoted:
            if word.text in _RESERVED:
                raise _Refused(f"uses the reserved word {word.text!r}")
        self.chars, self.started, self.quoted, self.glob = [], False, False, False
        if self.redirect == ">":
            if word.text != "/dev/null":
                raise _Refused(f"redirects output to a file ({word.text})")
        elif self.redirect == "<":
            if word.glob:
                raise _Refused("redirects input from a glob")
            self.inputs.append(word)
        else:
            self.words.append(word)
        self.redirect = None

    def end_command(self, separator: str) -> None:
        self.end_word()
        if self.redirect is not None:
            raise _Refused("has a redirection without a target")
        if self.words:
            self.commands.append(SimpleCommand(words=tuple(self.words), inputs=tuple(self.inputs)))
            self.needs_command = separator in ("|", "|&", "&&", "||")
        elif self.inputs:
            raise _Refused("has a redirection without a command")
        elif separator == "\n" or (separator == "" and not self.needs_command):
            return  # a blank line, or the end after a complete command
        else:
            raise _Refused(f"has an empty command before {separator or 'the end'!r}")
        self.words, self.inputs = [], []

    def quote(self, mark: str) -> None:
        if not self.rich:
            raise _Refused("uses quotes, which only the optional bashlex parser can check")
        close = self.text.find(mark, self.at + 1)
        if close < 0:
            raise _Refused("has unbalanced quotes")
        inner = self.text[self.at + 1 : close]
        if mark == '"':
            for char, why in (
                ("$", "uses an expansion ($) inside double quotes"),
                ("`", "uses command substitution (backquotes)"),
                ("\\", "uses a backslash escape"),
                ("!", "uses ! (history expansion)"),
            ):
                if char in inner:
                    raise _Refused(why)
        self.chars.append(inner)
        self.started = self.quoted = True
        self.at = close + 1

    def redirection(self, char: str) -> None:
        if self.started and not self.quoted and self.chars and "".join(self.chars).isdigit():
            self.chars, self.started = [], False  # the descriptor of ``2>...``
        else:
            self.end_word()
        if self.redirect is not None:
            raise _Refused("has a redirection without a target")
        if not self.rich:
            raise _Refused("uses a redirection, which only the optional bashlex parser can check")
        nxt = self.peek(1)
        if char == "<" and nxt == "<":
            raise _Refused("uses a here-document or a here-string")
        if nxt == "(":
            raise _Refused("uses process substitution")
        if nxt in ("|", ">" if char == "<" else ""):
            raise _Refused("redirects to a file")
        if nxt == "&":
            self.at += 2
            while self.peek() in _BLANK and self.peek():
                self.at += 1
            start = self.at
            while self.peek().isdigit():
                self.at += 1
            if self.at == start and self.peek() == "-":
                self.at += 1
            if self.at == start or (self.peek() and self.peek() not in _BLANK + "\n;|&"):
                raise _Refused("redirects output to a file (>&)")
            return
        self.at += 2 if (char == ">" and nxt == ">") else 1
        self.redirect = char

    def dollar(self) -> None:
        for prefix in sorted(_EXPANSION, key=len, reverse=True):
            if self.text.startswith(prefix, self.at):
                raise _Refused(_EXPANSION[prefix])
        raise _Refused("expands a variable ($)")

    def run(self) -> tuple[SimpleCommand, ...]:
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in _BLANK:
                self.end_word()
            elif char in "\n;":
                self.end_word()
                if char == "\n" and self.needs_command and not self.words:
                    pass  # bash reads on to the next line after |, && or ||
                else:
                    self.end_command(char)
            elif char == "|":
                op = "||" if self.peek(1) == "|" else "|&" if self.peek(1) == "&" else "|"
                self.end_command(op)
                self.at += len(op)
                continue
            elif char == "&":
                if self.peek(1) == "&":
                    self.end_command("&&")
                    self.at += 2
                    continue
                if self.peek(1) == ">":
                    raise _Refused("redirects output to a file (&>)")
                raise _Refused("runs a command in the background (&)")
            elif char in "<>":
                self.redirection(char)
                continue
            elif char in "'\"":
                self.quote(char)
                continue
            elif char == "$":
                self.dollar()
            elif char == "~" and (not self.chars or self.chars[-1][-1:] in ("", "=", ":")):
                raise _Refused(_CHARACTERS["~"])
            elif char in _PLAIN or char in _GLOB or char == "~":
                self.chars.append(char)
                self.started = True
                self.glob = self.glob or char in "*?["
            elif char in _CHARACTERS:
                raise _Refused(_CHARACTERS[char])
            else:
                raise _Refused(f"uses the character {char!r}")
            self.at += 1
        self.end_command("")
        return tuple(self.commands)


def _bashlex_commands(command: str) -> list[tuple[list[str], list[str]]]:
    """The simple commands bashlex reads, or `_Refused` for anything but the inert subset."""
    try:
        trees = BASHLEX.parse(command)
    except Exception as exc:  # bashlex raises several kinds for what it cannot read
        raise _Refused(f"cannot be parsed ({type(exc).__name__})") from None
    found: list[tuple[list[str], list[str]]] = []

    def walk(nodes: Iterable[Any]) -> None:
        for node in nodes:
            kind = node.kind
            if kind in ("list", "pipeline"):
                walk(node.parts)
            elif kind == "operator":
                if node.op not in (";", "&&", "||", "\n"):
                    raise _Refused(f"uses the operator {node.op!r}")
            elif kind == "pipe":
                if node.pipe not in ("|", "|&"):
                    raise _Refused(f"uses the pipe {node.pipe!r}")
            elif kind == "command":
                words: list[str] = []
                inputs: list[str] = []
                for part in node.parts:
                    if part.kind == "word" and not getattr(part, "parts", None):
                        words.append(part.word)
                    elif part.kind == "redirect":
                        inputs.extend(_redirect_input(part))
                    else:
                        raise _Refused(f"uses {part.kind} ({part.kind} nodes are not inert)")
                found.append((words, inputs))
            else:
                raise _Refused(f"uses a {kind} construct")

    walk(trees)
    return found


def _redirect_input(node: Any) -> list[str]:
    target = node.output
    if node.type in (">&", "<&"):
        if isinstance(target, int) or target == "-":
            return []
    elif hasattr(target, "kind") and target.kind == "word" and not getattr(target, "parts", None):
        if node.type == "<":
            return [target.word]
        if node.type in (">", ">>") and target.word == "/dev/null":
            return []
    raise _Refused(f"uses the redirection {node.type!r}")


def parse_shell(command: str) -> ParsedCommand:
    """Read `command` as bash would, or say why it will not be vouched for.

    Args:
        command: The command line given to ``bash -c``.

    Returns:
        The simple commands, or a `ParsedCommand` whose ``problem`` says what was not
        understood (see this module's docstring for the accepted subset).
    """
    if len(command) > MAX_PARSED_CHARS:
        return ParsedCommand(
            problem=f"is longer than {MAX_PARSED_CHARS:,} characters, the most that is parsed"
        )
    rich = _load_bashlex() is not None
    try:
        commands = _Lexer(text=command, rich=rich).run()
        if rich:
            theirs = _bashlex_commands(command)
            ours = [(c.texts, [w.text for w in c.inputs]) for c in commands]
            if theirs != ours:
                raise _Refused("is read differently by the two shell parsers")
    except _Refused as refused:
        return ParsedCommand(problem=refused.problem)
    except RecursionError:
        return ParsedCommand(problem="is nested too deeply to parse")
    return ParsedCommand(commands=commands)
