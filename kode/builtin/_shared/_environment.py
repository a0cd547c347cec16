"""The environment a ``bash_run`` command gets: scrubbed of secrets, with git defused.

This module owns `command_environment`: the variables a command sees. It does not pass the
kode process's environment through (API keys and tokens live there): it keeps an allowlist of
harmless variables (`BASE_VARIABLES`), adds those the `RuntimePolicy` allows by name
(``env_allow``) and the values it sets (``env``), and forces git settings that keep a
repository's own ``.git/config`` from running programs (`GIT_OVERRIDES`). A command that runs
without a person's approval (*confined*) gets more: git refuses repositories it would have to
guess are bare (``safe.bareRepository=explicit``, so a directory a model built to look like a
repository is never used), and every ``git`` that bash runs is a function (`GIT_GUARD`) that
turns off diff drivers and textconv for ``diff``, ``log`` and ``show`` and the filters a
repository's own config defines. A command of a traced run gets the run's trace context
(``TRACEPARENT``, ``TRACESTATE``). It does not start processes
(`kode.builtin._shared._processes`).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence

from kode.tracing import trace_headers

__all__ = [
    "BASE_VARIABLES",
    "CONFINED_GIT_OVERRIDES",
    "GIT_GUARD",
    "GIT_OVERRIDES",
    "command_environment",
]

BASE_VARIABLES: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
)
"""Variables of the kode process a command always gets (``*`` matches any characters)."""

# git cannot unset diff.external from the environment (an empty value is run as a program), so
# it is replaced by plain `diff -u` in git's layout; git runs it as `sh -c 'VALUE "$@"' VALUE
# path old-file old-hex old-mode new-file new-hex new-mode`, and fails the diff on exit > 0.
_PLAIN_DIFF = (
    'sh -c \'echo "diff --git a/$0 b/$0"; '
    'diff -u --label "a/$0" --label "b/$0" "$1" "$4"; [ $? -le 1 ]\''
)

GIT_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", ""),
    ("diff.external", _PLAIN_DIFF),
    ("sequence.editor", "true"),
    ("credential.helper", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("protocol.ext.allow", "never"),
)
"""git settings forced on every command (``GIT_CONFIG_COUNT``), so that a repository's
``.git/config`` cannot make ``git status``, ``git diff`` or ``git commit`` run a program (an
fsmonitor, hooks, an external diff, a pager, an editor, a credential helper, a signing
program). Settings given this way win over every configuration file."""

CONFINED_GIT_OVERRIDES: tuple[tuple[str, str], ...] = (("safe.bareRepository", "explicit"),)
"""git settings added for confined commands: a repository must be a ``.git`` directory (or a
``.git`` file, or named by ``--git-dir``); a directory that merely holds ``HEAD``, ``objects``
and ``refs`` (a bare repository, or ``HEAD`` with a ``commondir`` pointing at another
repository) is refused, so its config, attributes and alternates are never read."""

# bash imports a function from a variable named BASH_FUNC_<name>%% (what `export -f` writes),
# in every bash the command starts. `command git config` lists the filters of the repository's
# own config (scope local or worktree, includes followed); each is emptied and made optional
# through GIT_CONFIG_* (which keeps names with any character intact), then the real git runs,
# with --no-ext-diff --no-textconv for the commands that diff.
GIT_GUARD = r"""() { (
  n=${GIT_CONFIG_COUNT:-0}
  while IFS= read -r -d '' scope && IFS= read -r -d '' key; do
    case $scope in local|worktree)
      export "GIT_CONFIG_KEY_$n=$key" "GIT_CONFIG_VALUE_$n="; n=$((n+1))
      export "GIT_CONFIG_KEY_$n=${key%.*}.required" "GIT_CONFIG_VALUE_$n=false"; n=$((n+1));;
    esac
  done < <(command git config -z --show-scope --name-only \
    --get-regexp '^filter\..+\.(clean|smudge|process)$' 2>/dev/null)
  export GIT_CONFIG_COUNT=$n
  case $1 in
    diff|log|show) exec git "$1" --no-ext-diff --no-textconv "${@:2}";;
  esac
  exec git "$@"
) }"""
"""The ``git`` function confined commands get (the value of ``BASH_FUNC_git%%``)."""

_GIT_VARIABLES: dict[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


def _allowed(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def command_environment(
    *,
    allow: Sequence[str] = (),
    values: Mapping[str, str] | None = None,
    source: Mapping[str, str] | None = None,
    tag: tuple[str, str] | None = None,
    confined: bool = False,
) -> dict[str, str]:
    """The environment of one command.

    Args:
        allow: More variable names to pass through from `source` (``*`` matches any
            characters, e.g. ``"AWS_REGION"``, ``"MYAPP_*"``).
        values: Variables to set, whatever `source` has.
        source: The environment to take variables from (default: `os.environ`).
        tag: A ``(name, value)`` pair marking the command's processes.
        confined: The command runs without a person's approval: add
            `CONFINED_GIT_OVERRIDES` and the `GIT_GUARD` function.

    Raises:
        ValueError: a name in `allow` or `values` is not a variable name, or a value is not
            a string.
    """
    source = os.environ if source is None else source
    values = {} if values is None else values
    problems: list[str] = []
    if isinstance(allow, str):  # would be read letter by letter
        problems.append(f"env_allow must be a sequence of names, e.g. ({allow!r},), not a string")
        allow = ()
    problems += [
        f"env_allow entry {name!r} is not a variable name (letters, digits and _, with an "
        "optional trailing *)"
        for name in allow
        if not isinstance(name, str) or not _NAME.fullmatch(name)
    ]
    for name, value in values.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith("*"):
            problems.append(f"env name {name!r} is not a variable name")
        elif not isinstance(value, str):
            problems.append(f"env value of {name} must be a string, not {type(value).__name__}")
    if problems:
        raise ValueError("invalid RuntimePolicy: " + "; ".join(problems))
    patterns = (*BASE_VARIABLES, *allow)
    env = {name: value for name, value in source.items() if _allowed(name, patterns)}
    env.update(values)
    env.update(_GIT_VARIABLES)
    overrides = (*GIT_OVERRIDES, *CONFINED_GIT_OVERRIDES) if confined else GIT_OVERRIDES
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    if confined:
        env["BASH_FUNC_git%%"] = GIT_GUARD
    if tag is not None:
        env[tag[0]] = tag[1]
    # A traced run's command continues its trace (TRACEPARENT, as OpenTelemetry's
    # environment carriers name it); without tracing there is nothing to add.
    for name, value in trace_headers().items():
        env[name.upper()] = value
    env.setdefault("PATH", os.defpath)
    # A relative or empty PATH entry (".", "bin", "") finds commands in the working directory,
    # which is the workspace a model writes to: a file named "ls" there would run instead.
    entries = [p for p in env["PATH"].split(os.pathsep) if os.path.isabs(p)]
    env["PATH"] = os.pathsep.join(entries) or os.defpath
    return env
