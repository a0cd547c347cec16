"""``kode run`` asks about a file write with its description and diff, takes "always for
this tool", and shows each result's display; ``kode tools check --explain`` names the rule
deciding a call. Real ``python -m kode`` subprocesses over kode's built-in file tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def kode(*args: str, cwd: Path, answers: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    return subprocess.run(
        [sys.executable, "-m", "kode", *args],
        input=answers,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_a_diff_approval_answered_always_for_the_tool(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('old')\n", encoding="utf-8")
    (tmp_path / "agent.json").write_text(
        json.dumps(
            {"id": "t", "tools": ["fs_read", "fs_write"], "permission": {"mode": "approval"}}
        ),
        encoding="utf-8",
    )
    write = {"name": "fs_write", "input": {"path": "app.py", "content": "print('new')\nx = 1\n"}}
    again = {"name": "fs_write", "input": {"path": "notes.md", "content": "hi\n"}}
    (tmp_path / "turns.json").write_text(
        json.dumps([[{"name": "fs_read", "input": {"path": "app.py"}}], [write], [again], "Done."]),
        encoding="utf-8",
    )
    out = kode(
        "run", "agent.json", "Update app.py", "--builtin", "--workspace", "ws",
        "--model", "scripted:turns.json", cwd=tmp_path, answers="a\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    asked = [i for i, line in enumerate(lines) if "needs approval" in line]
    assert len(asked) == 1, out.stdout  # the second write is covered by "always"
    start = asked[0]
    assert lines[start] == "fs_write needs approval: kind edit needs approval (mode approval)"
    assert lines[start + 1 : start + 8] == [
        "  Write 2 lines to app.py",
        "    --- a/app.py",
        "    +++ b/app.py",
        "    @@ -1 +1,2 @@",
        "    -print('old')",
        "    +print('new')",
        "    +x = 1",
    ]
    assert lines[start + 8].startswith("Allow? [y]es once, [a]lways for fs_write, [e]dit")
    done = [line for line in lines if line.startswith("  ✓ fs_write")]
    assert len(done) == 2
    assert "    +hi" in lines  # the second write's display: its diff against no file
    assert (ws / "app.py").read_text() == "print('new')\nx = 1\n"
    assert (ws / "notes.md").read_text() == "hi\n"


def test_a_denial_with_a_note_reaches_the_model(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["fs_write"], "permission": {"mode": "approval"}}),
        encoding="utf-8",
    )
    write = {"name": "fs_write", "input": {"path": "x.txt", "content": "x"}}
    (tmp_path / "turns.json").write_text(json.dumps([[write], "Ok."]), encoding="utf-8")
    out = kode(
        "run", "agent.json", "Write", "--builtin", "--workspace", ".",
        "--model", "scripted:turns.json", cwd=tmp_path, answers="n not in this repo\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "✗ fs_write" in out.stdout
    assert "Note from the user: not in this repo" in out.stdout
    assert not (tmp_path / "x.txt").exists()


def test_an_edited_input_is_checked_and_asked_again_until_valid(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["fs_write"], "permission": {"mode": "approval"}}),
        encoding="utf-8",
    )
    write = {"name": "fs_write", "input": {"path": "x.txt", "content": "x"}}
    (tmp_path / "turns.json").write_text(json.dumps([[write], "Ok."]), encoding="utf-8")
    answers = 'e [1]\ne {"path": "y.txt"}\ne {"path": "y.txt", "content": "edited"}\n'
    out = kode(
        "run", "agent.json", "Write", "--builtin", "--workspace", ".",
        "--model", "scripted:turns.json", cwd=tmp_path, answers=answers,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "  e takes the new input as a JSON object" in out.stdout
    assert "not valid for fs_write, and the call still waits" in out.stdout
    assert "'content' is required but missing" in out.stdout
    assert out.stdout.count("Allow? ") == 3
    assert not (tmp_path / "x.txt").exists()
    assert (tmp_path / "y.txt").read_text() == "edited"


def test_check_explain_names_the_rule_that_decides(tmp_path: Path) -> None:
    (tmp_path / "rules.toml").write_text(
        '[[rule]]\nname = "no-push"\ntool = "bash_run"\nargs = { command = "^git push" }\n'
        'decision = "deny"\nreason = "pushing is for people"\n\n'
        '[[rule]]\nname = "ask-git"\ntool = "bash_run"\nargs = { command = "^git" }\n'
        'decision = "ask"\n',
        encoding="utf-8",
    )
    push = kode(
        "tools", "check", "--builtin", "--rules", "project=rules.toml",
        "--explain", "bash_run", '{"command": "git push origin main"}', cwd=tmp_path,
    )  # fmt: skip
    assert push.returncode == 0, push.stderr
    assert push.stdout.splitlines() == [
        "bash_run: deny",
        "  decided by: rule 'no-push' (project)",
        "  reason: pushing is for people",
    ]
    status = kode(
        "tools", "check", "--builtin", "--rules", "project=rules.toml",
        "--explain", "bash_run", '{"command": "git status"}', cwd=tmp_path,
    )  # fmt: skip
    assert status.stdout.splitlines() == [
        "bash_run: ask",
        "  decided by: rule 'ask-git' (project)",
        "  reason: ask by rule 'ask-git' (project)",
        "  the request says: Run `git status` in .",
        "  its pattern (for 'always'): git status",
    ]
    plain = kode(
        "tools", "check", "--builtin", "--explain", "fs_read", '{"path": "a"}', cwd=tmp_path
    )
    assert plain.stdout.splitlines()[:2] == ["fs_read: allow", "  decided by: mode auto"]
    bad = kode("tools", "check", "--builtin", "--rules", "team=x.toml", "--explain", "fs_read",
               cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2
    assert "give TIER=FILE, with TIER one of defaults, user, project, admin" in bad.stderr


def test_the_time_waiting_for_approval_is_not_the_tools(tmp_path: Path) -> None:
    # The answer comes 1.5 s after the prompt; the write itself takes milliseconds.
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["fs_write"], "permission": {"mode": "approval"}}),
        encoding="utf-8",
    )
    write = {"name": "fs_write", "input": {"path": "a.txt", "content": "a\n"}}
    (tmp_path / "turns.json").write_text(json.dumps([[write], "Done."]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kode", "run", "agent.json", "Write", "--builtin",
         "--workspace", "ws", "--model", "scripted:turns.json"],
        cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    seen = ""
    while "Allow?" not in seen:
        char = proc.stdout.read(1)
        assert char, seen
        seen += char
    time.sleep(1.5)
    out, err = proc.communicate("y\n", timeout=120)
    assert proc.returncode == 0, err
    [done] = [line for line in out.splitlines() if line.startswith("  ✓ fs_write")]
    took = float(done.split("(", 1)[1].split(" s)", 1)[0])
    assert took < 1.0, done
