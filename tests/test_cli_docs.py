"""docs/cli.md's transcripts are what the commands print: each `$ kode ...` line is run.

The page's files are the ones it shows: a fenced block named by the sentence before it ("saved
as `weather.py`", "With `forecaster.toml`:"), by a first-line comment (`# app_deps.py`) or by a
`$ cat NAME` in a transcript. Every ```text block that starts with `$ ` is a transcript: its
commands run in order with bash, in a folder holding the files shown (and the checkout's
`examples/`, as from its root), with `kode` on the PATH, and what each prints (stdout and
stderr) must equal the lines after it. Three things are read loosely: a line `...` stands for
any lines, durations (`(0.01 s)`) for any, and an answer typed at an approval prompt (`...(n
NOTE: say why): a`) is sent on stdin, since a terminal would show it. The few commands that
cannot run here are listed in `NOT_RUN`, each with the reason.

To rewrite the transcripts from what the commands print now, run

    KODE_DOCS_UPDATE=1 python -m pytest tests/test_cli_docs.py

and review the diff (put back any `...` you want to keep).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_docs import Block, parse_blocks

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
UPDATE = os.environ.get("KODE_DOCS_UPDATE") == "1"

NOT_RUN = {
    "kode worker -m agents.py --db postgresql://": "needs a PostgreSQL server at db.internal",
    "kode mcp serve app_tools.py": "serves until it is stopped (tests/mcp run kode mcp serve)",
    "kode schedules ": "needs a DBOS system database a worker made (tests/durable/test_cron.py)",
    "kode tools check --helpers": "prints this machine's paths (tests/test_cli_check.py runs it)",
}
"""Commands shown but not run, by their beginning, with why."""

NOT_SHOWN = {"nothere.toml": "a file that does not exist, on purpose"}
"""Files a command names that the page does not show, with why."""

_NAMED = re.compile(r"`([\w./-]+\.(?:py|toml|json))`[^`]*$")
_DURATION = re.compile(r"\((\d+\.\d+) s\)")
_PROMPT_ANSWER = re.compile(r"^(?P<prompt>Allow\? .*\): )(?P<answer>\S.*)$")


@dataclass
class Command:
    line: int
    """Index of the `$ ` line in the page."""
    text: str
    expected: list[str]


def _transcript(block: Block) -> list[Command]:
    commands: list[Command] = []
    for offset, line in enumerate(block.code.rstrip("\n").split("\n")):
        if line.startswith("$ "):
            commands.append(Command(block.start + offset, line[2:], []))
        elif commands:
            commands[-1].expected.append(line)
    for command in commands:  # the blank line before the next command is not output
        while command.expected and not command.expected[-1].strip():
            command.expected.pop()
    return commands


def _is_transcript(block: Block) -> bool:
    return block.language == "text" and block.code.lstrip("\n").startswith("$ ")


def _file_name(block: Block, lines: list[str]) -> str | None:
    first = block.code.split("\n", 1)[0]
    if m := re.fullmatch(r"#\s*([\w./-]+\.py)\s*", first):
        return m[1]
    before = block.start - 2  # the line above the opening fence
    while before >= 0 and not lines[before].strip():
        before -= 1
    m = _NAMED.search(lines[before]) if before >= 0 else None
    return m[1] if m else None


def _pages_steps() -> tuple[list[Block], dict[str, str]]:
    """The page's transcript blocks, and every file it shows by name."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    files: dict[str, str] = {}
    twice: list[str] = []
    steps = []

    def shown(name: str, text: str) -> None:
        if files.get(name, text) != text:
            twice.append(name)
        files[name] = text

    for block in parse_blocks(lines):
        if _is_transcript(block):
            steps.append(block)
            for command in _transcript(block):
                if command.text.startswith("cat "):
                    shown(command.text[4:].strip(), "\n".join(command.expected) + "\n")
        elif block.language in ("python", "toml", "json") and not block.is_output:
            name = _file_name(block, lines)
            if name:
                shown(name, block.code)
    assert not twice, f"docs/cli.md shows different files under one name: {twice}"
    return steps, files


STEPS, FILES = _pages_steps()


def _kode_on_path(folder: Path) -> str:
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "kode"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kode "$@"\n')
    shim.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


def _env(folder: Path) -> dict[str, str]:
    drop = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "KODE_", "DBOS_", "OTEL_", "PYTEST_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PATH=_kode_on_path(folder),
        COLUMNS="80",
        KODE_HOME=str(folder / ".kode-home"),
        HOME=str(folder / ".home"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
    )
    return env


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, `...` standing for any lines and durations for any."""
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line.strip() == "..." else re.escape(_loose(line)) + r"\n"
        for line in expected
    )
    return re.fullmatch(pattern, "".join(_loose(ln) + "\n" for ln in actual)) is not None


def _loose(line: str) -> str:
    return _DURATION.sub("(N s)", line.rstrip())


def _run(command: Command, folder: Path, env: dict[str, str]) -> list[str]:
    answers = [m["answer"] for ln in command.expected if (m := _PROMPT_ANSWER.match(ln))]
    proc = subprocess.run(
        ["bash", "-c", "exec 2>&1\n" + command.text],
        cwd=folder,
        env=env,
        input="".join(a + "\n" for a in answers),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out, at = proc.stdout, 0
    for answer in answers:  # a terminal shows what was typed, and the line it ends
        m = re.compile(r"Allow\? [^\n]*?\): \n?").search(out, at)
        if m is None:
            break
        shown = m[0].rstrip("\n") + answer + "\n"
        out = out[: m.start()] + shown + out[m.end() :]
        at = m.start() + len(shown)
    return out.rstrip("\n").split("\n") if out.strip() else []


def _skip_reason(command: Command) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.text.startswith(start)), None)


@pytest.mark.parametrize("block", STEPS, ids=[f"cli.md:{b.start}" for b in STEPS])
def test_cli_transcript(block: Block, tmp_path: Path) -> None:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")  # as from a checkout's root
    env = _env(tmp_path)
    commands = _transcript(block)
    if all(_skip_reason(c) for c in commands):
        pytest.skip("; ".join(sorted({str(_skip_reason(c)) for c in commands})))
    wrong: list[tuple[Command, list[str]]] = []
    for command in commands:
        if command.text.startswith("cat ") or _skip_reason(command):
            continue
        actual = _run(command, tmp_path, env)
        if not _matches(command.expected, actual):
            wrong.append((command, actual))
    if wrong and UPDATE:
        _rewrite(wrong)
    assert not wrong, "docs/cli.md shows what the commands no longer print:\n\n" + "\n\n".join(
        f"line {c.line + 1}: $ {c.text}\nthe page shows:\n"
        + "\n".join(c.expected)
        + "\n\nit printed:\n"
        + "\n".join(actual)
        for c, actual in wrong
    )


def _rewrite(wrong: list[tuple[Command, list[str]]]) -> None:
    """Put what the commands printed under them, found by their text (lines may have moved)."""
    lines = PAGE.read_text(encoding="utf-8").split("\n")
    current = [c for b in parse_blocks(lines) if _is_transcript(b) for c in _transcript(b)]
    for command, actual in wrong:
        now = next(c for c in current if c.text == command.text and c.expected == command.expected)
        start = now.line + 1
        lines[start : start + len(now.expected)] = actual
        shift = len(actual) - len(now.expected)
        for c in current:
            if c.line > now.line:
                c.line += shift
        now.expected = actual
    PAGE.write_text("\n".join(lines), encoding="utf-8")


def test_every_file_a_command_names_is_shown() -> None:
    """A transcript's command names only files the page shows."""
    missing = []
    for block in STEPS:
        for command in _transcript(block):
            if command.text.startswith("cat ") or _skip_reason(command):
                continue
            for word in shlex.split(command.text.split(";")[0]):
                word = word.removeprefix("scripted:")
                is_file = re.fullmatch(r"[\w./-]+\.(?:py|toml|json)", word)
                if is_file and word not in FILES and word not in NOT_SHOWN:
                    missing.append(f"line {command.line + 1}: {word}")
    assert not missing, "files used by docs/cli.md's commands but never shown:\n" + "\n".join(
        missing
    )
