"""apply_patch: the envelope and unified diffs, all files or none, fuzzy context, clear refusals."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kode.builtin.fs import apply_patch, fs_edit, fs_read
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

APP = """import sys


def greet(name):
    print("Hi", name)


def main():
    greet(sys.argv[1])
    return 0
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def patch(ctx: ToolContext, text: str) -> ToolResult:
    return await apply_patch.run({"patch": text}, ctx)


async def seen(ctx: ToolContext, ws: Path, name: str, content: str | bytes) -> Path:
    """A file with `content` that the agent has read."""
    f = ws / name
    f.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content)
    result = await fs_read.run({"path": name}, ctx)
    assert not result.is_error, result.text
    return f


def tree(ws: Path) -> dict[str, str]:
    """Every file below `ws` (temporary files included) and its content."""
    return {
        str(p.relative_to(ws)): p.read_text()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _describe_call(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    assert apply_patch.describer is not None
    return apply_patch.describer(arguments, ctx)


def refused(result: ToolResult, kind: ToolErrorType = ToolErrorType.TOOL_ERROR) -> str:
    assert result.is_error, result.text
    assert result.error_type is kind, (result.error_type, result.text)
    assert result.text.endswith("No file was changed."), result.text
    return result.text


async def test_adds_updates_moves_and_deletes_in_one_call(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "app.py", APP)
    await seen(ctx, ws, "old.txt", "bye\n")
    (ws / "app.py").chmod(0o754)
    result = await patch(
        ctx,
        """*** Begin Patch
*** Update File: app.py
*** Move to: src/main.py
@@ def greet(name):
-    print("Hi", name)
+    print("Hello", name)
*** Add File: notes/todo.txt
+first
+second
*** Delete File: old.txt
*** End Patch
""",
    )
    assert not result.is_error, result.text
    assert result.text.splitlines() == [
        "Applied the patch (3 files):",
        "R app.py -> src/main.py (+1 -1)",
        "A notes/todo.txt (2 lines)",
        "D old.txt",
    ]
    assert tree(ws) == {
        "notes/todo.txt": "first\nsecond\n",
        "src/main.py": APP.replace('"Hi"', '"Hello"'),
    }
    assert stat.S_IMODE((ws / "src/main.py").stat().st_mode) == 0o754  # the mode moved too
    assert result.display is not None and result.display.kind == "diff"
    assert "--- a/app.py\n+++ b/src/main.py" in result.display.text
    assert '+    print("Hello", name)' in result.display.text
    assert "--- a/old.txt\n+++ /dev/null" in result.display.text
    # What the patch wrote counts as read: the next edit needs no fs_read first.
    edited = await fs_edit.run(
        {"path": "src/main.py", "old_string": "return 0", "new_string": "return 1"}, ctx
    )
    assert not edited.is_error, edited.text


async def test_a_hunk_that_fails_leaves_every_file_as_it_was(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "a.txt", "one\ntwo\n")
    await seen(ctx, ws, "b.txt", "three\nfour\n")
    before = tree(ws)
    text = refused(
        await patch(
            ctx,
            """*** Begin Patch
*** Update File: a.txt
@@
-one
+ONE
*** Add File: new/dir/c.txt
+c
*** Update File: b.txt
@@
 three
-five
+FIVE
*** End Patch""",
        )
    )
    assert text.startswith("'b.txt', hunk 1 of 1 does not apply")
    assert tree(ws) == before  # a.txt unchanged, c.txt not made
    assert not (ws / "new").exists()


async def test_a_failed_rename_puts_everything_back(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seen(ctx, ws, "a.txt", "one\n")
    await seen(ctx, ws, "b.txt", "two\n")
    await seen(ctx, ws, "gone.txt", "three\n")
    before = tree(ws)
    real_rename = os.rename
    calls: list[str] = []

    def failing_rename(src: Any, dst: Any, **kw: Any) -> None:
        calls.append(str(src))
        if len(calls) == 5:  # three moved aside, one new file placed, then the disk fails
            raise OSError(28, "No space left on device")
        real_rename(src, dst, **kw)

    monkeypatch.setattr(os, "rename", failing_rename)
    text = refused(
        await patch(
            ctx,
            """*** Begin Patch
*** Update File: a.txt
-one
+ONE
*** Update File: b.txt
-two
+TWO
*** Add File: deep/new/c.txt
+c
*** Delete File: gone.txt
*** End Patch""",
        )
    )
    monkeypatch.undo()
    assert "No space left on device" in text and "put back as it was" in text
    assert len(calls) >= 5
    assert tree(ws) == before  # no temporary or moved-aside file is left either
    assert not (ws / "deep").exists()


async def test_context_is_matched_ignoring_whitespace_and_the_result_says_so(
    ctx: ToolContext, ws: Path
) -> None:
    f = await seen(ctx, ws, "app.py", "def f():   \n\tx = 1\n\treturn x\n")
    result = await patch(
        ctx,
        """*** Begin Patch
*** Update File: app.py
@@
 def f():
-    x = 1
+    x = 2
     return x
*** End Patch""",
    )
    assert not result.is_error, result.text
    assert f.read_text() == "def f():   \n    x = 2\n\treturn x\n"
    assert result.details is not None
    assert result.details["fuzzy"] == [
        "hunk 1 of 'app.py' matched ignoring whitespace around lines at line 1"
    ]
    assert "(Note: hunk 1 of 'app.py' matched ignoring whitespace around lines" in result.text


async def test_trailing_whitespace_only_is_the_second_pass(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "a.txt", "alpha  \nbeta\n")
    result = await patch(
        ctx, "*** Begin Patch\n*** Update File: a.txt\n alpha\n-beta\n+BETA\n*** End Patch"
    )
    assert not result.is_error, result.text
    assert f.read_text() == "alpha  \nBETA\n"
    assert "ignoring whitespace at line ends" in result.text


async def test_a_failing_hunk_is_reported_with_the_nearest_lines(
    ctx: ToolContext, ws: Path
) -> None:
    await seen(ctx, ws, "app.py", APP)
    text = refused(
        await patch(
            ctx,
            """*** Begin Patch
*** Update File: app.py
@@
 import sys
+import os
@@ def main():
-    greet(sys.argv[2])
-    return 0
+    return 1
*** End Patch""",
        )
    )
    lines = text.splitlines()
    assert lines[0] == (
        "'app.py', hunk 2 of 2 does not apply: these lines (the hunk's context and '-' lines) "
        "are not in the file after line 8:"
    )
    assert "      |     greet(sys.argv[2])" in lines
    assert "The nearest lines in the file (from line 9, 1 of 2 alike, whitespace aside):" in lines
    assert "     9|     greet(sys.argv[1])" in lines and "    10|     return 0" in lines
    assert "Read the file again (fs_read)" in text
    assert (ws / "app.py").read_text() == APP


async def test_a_missing_at_at_line_is_reported(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "app.py", APP)
    text = refused(
        await patch(
            ctx, "*** Begin Patch\n*** Update File: app.py\n@@ def nope():\n-x\n+y\n*** End Patch"
        )
    )
    assert text.startswith(
        "'app.py', hunk 1 of 1 does not apply: the line '@@ def nope():' names are not in the file"
    )


async def test_paths_outside_the_workspace_are_refused(
    ctx: ToolContext, ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    victim = outside / "victim.txt"
    victim.write_text("keep\n")
    await seen(ctx, ws, "a.txt", "one\n")
    for text in (
        f"*** Begin Patch\n*** Add File: {outside}/new.txt\n+x\n*** End Patch",
        f"*** Begin Patch\n*** Delete File: ../{outside.name}/victim.txt\n*** End Patch",
        f"*** Begin Patch\n*** Update File: a.txt\n*** Move to: {victim}\n*** End Patch",
        f"--- a/a.txt\n+++ b/../{outside.name}/x.txt\n@@ -1 +1 @@\n-one\n+two\n",
    ):
        (ws / "link").unlink(missing_ok=True)
        message = refused(await patch(ctx, text), ToolErrorType.PATH_NOT_IN_WORKSPACE)
        assert "outside the workspace" in message
    # Through a symlink too.
    (ws / "link").symlink_to(outside)
    refused(
        await patch(ctx, "*** Begin Patch\n*** Add File: link/evil.txt\n+x\n*** End Patch"),
        ToolErrorType.PATH_NOT_IN_WORKSPACE,
    )
    assert victim.read_text() == "keep\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (ws / "a.txt").read_text() == "one\n"


async def test_the_stale_write_guard_of_the_other_file_tools(ctx: ToolContext, ws: Path) -> None:
    (ws / "unread.txt").write_text("x\n")
    text = refused(
        await patch(ctx, "*** Begin Patch\n*** Update File: unread.txt\n-x\n+y\n*** End Patch"),
        ToolErrorType.PERMISSION_DENIED,
    )
    assert "has not been read" in text
    refused(
        await patch(ctx, "*** Begin Patch\n*** Delete File: unread.txt\n*** End Patch"),
        ToolErrorType.PERMISSION_DENIED,
    )
    refused(  # an Add over an existing file replaces it: it must have been read too
        await patch(ctx, "*** Begin Patch\n*** Add File: unread.txt\n+z\n*** End Patch"),
        ToolErrorType.PERMISSION_DENIED,
    )
    f = await seen(ctx, ws, "read.txt", "a\n")
    f.write_text("a\nchanged by someone else\n")
    text = refused(
        await patch(ctx, "*** Begin Patch\n*** Update File: read.txt\n-a\n+b\n*** End Patch"),
        ToolErrorType.PERMISSION_DENIED,
    )
    assert "changed on disk since it was last read" in text
    assert (ws / "unread.txt").read_text() == "x\n"


async def test_a_unified_diff_with_new_deleted_and_renamed_files(
    ctx: ToolContext, ws: Path
) -> None:
    await seen(ctx, ws, "lib/a.py", "x = 1\nprint(x)\nx = 1\nprint(x)\n")
    await seen(ctx, ws, "gone.py", "bye\n")
    await seen(ctx, ws, "old_name.py", "keep\n")
    result = await patch(
        ctx,
        """diff --git a/lib/a.py b/lib/a.py
index 3b18e51..a3c3c2f 100644
--- a/lib/a.py
+++ b/lib/a.py
@@ -3,2 +3,2 @@
-x = 1
+x = 2
 print(x)
diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+hello
+world
\\ No newline at end of file
diff --git a/gone.py b/gone.py
deleted file mode 100644
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old_name.py b/new_name.py
similarity index 100%
rename from old_name.py
rename to new_name.py
""",
    )
    assert not result.is_error, result.text
    # The hunk's line number picks the second of two identical places.
    assert tree(ws) == {
        "lib/a.py": "x = 1\nprint(x)\nx = 2\nprint(x)\n",
        "new.py": "hello\nworld",
        "new_name.py": "keep\n",
    }


async def test_crlf_files_keep_their_line_ends(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "win.txt", b"one\r\ntwo\r\n")
    result = await patch(
        ctx, "*** Begin Patch\n*** Update File: win.txt\n one\n-two\n+TWO\n*** End Patch"
    )
    assert not result.is_error, result.text
    assert f.read_bytes() == b"one\r\nTWO\r\n"


async def test_end_of_file_anchor_and_insertion_after_a_header(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "a.txt", "x\ny\nx\n")
    result = await patch(
        ctx,
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+last\n*** End of File\n*** End Patch",
    )
    assert not result.is_error, result.text
    assert f.read_text() == "x\ny\nlast\n"
    result = await patch(
        ctx, "*** Begin Patch\n*** Update File: a.txt\n@@ y\n+after y\n*** End Patch"
    )
    assert not result.is_error, result.text
    assert f.read_text() == "x\ny\nafter y\nlast\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "The patch is empty"),
        ("hello", "does not start with '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", "no '*** End Patch' line"),
        ("*** Begin Patch\n*** Frobnicate: a\n*** End Patch", "is not a file header"),
        ("*** Begin Patch\n*** Update File: a\n*** End Patch", "has no hunks"),
        ("*** Begin Patch\n*** Update File: a\n@@\n~x\n*** End Patch", "does not start with ' '"),
        ("--- a/x\n+++ b/x\n@@ bad @@\n-a\n", "is not a hunk header"),
        ("*** Begin Patch\n*** End Patch", "changes no file"),
    ],
)
async def test_malformed_patches_say_what_is_expected(
    ctx: ToolContext, text: str, says: str
) -> None:
    message = refused(await patch(ctx, text), ToolErrorType.INVALID_TOOL_PARAMS)
    assert says in message


async def test_a_file_named_twice_is_refused(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "a.txt", "x\n")
    text = refused(
        await patch(
            ctx,
            "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n*** Delete File: ./a.txt\n"
            "*** End Patch",
        ),
        ToolErrorType.INVALID_TOOL_PARAMS,
    )
    assert "appears twice in the patch" in text


async def test_git_directories_ask_for_approval_and_the_diff_is_described(
    ctx: ToolContext, ws: Path
) -> None:
    await seen(ctx, ws, "a.txt", "one\n")
    approval = apply_patch.requires_approval
    assert callable(approval)
    into_git = "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch"
    assert "inside .git" in approval({"patch": into_git}, ctx)
    moved = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .git/config\n*** End Patch"
    assert "inside .git" in approval({"patch": moved}, ctx)
    plain = "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch"
    assert approval({"patch": plain}, ctx) is None
    details = _describe_call({"patch": plain}, ctx)
    assert details is not None
    assert details.description == "Apply a patch: update a.txt"
    assert details.locations == ("a.txt",)
    assert "-one\n+two" in details.diff
    failing = _describe_call({"patch": plain.replace("-one", "-nope")}, ctx)
    assert failing is not None and "it will fail" in failing.description
    assert (ws / "a.txt").read_text() == "one\n"  # describing writes nothing


async def test_a_fenced_or_here_document_patch_is_unwrapped(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "a.txt", "one\n")
    fenced = "```diff\n*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch\n```\n"
    assert not (await patch(ctx, fenced)).is_error
    heredoc = (
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n-two\n+three\n"
        "*** End Patch\nEOF"
    )
    result = await patch(ctx, heredoc)
    assert not result.is_error, result.text
    assert f.read_text() == "three\n"


async def test_unified_names_that_differ_update_the_file_there_unless_git_says_rename(
    ctx: ToolContext, ws: Path
) -> None:
    await seen(ctx, ws, "conf.py", "debug = False\n")
    # diff -u conf.py.orig conf.py: the file there is updated, nothing is moved or made.
    result = await patch(
        ctx, "--- conf.py.orig\n+++ conf.py\n@@ -1 +1 @@\n-debug = False\n+debug = True\n"
    )
    assert not result.is_error, result.text
    assert tree(ws) == {"conf.py": "debug = True\n"}
    # git's rename headers move it, with its hunk.
    result = await patch(
        ctx,
        "diff --git a/conf.py b/settings.py\nsimilarity index 80%\nrename from conf.py\n"
        "rename to settings.py\n--- a/conf.py\n+++ b/settings.py\n@@ -1 +1 @@\n"
        "-debug = True\n+debug = 1\n",
    )
    assert not result.is_error, result.text
    assert tree(ws) == {"settings.py": "debug = 1\n"}


async def test_a_hunk_with_no_line_in_the_file_shows_the_most_similar(
    ctx: ToolContext, ws: Path
) -> None:
    await seen(ctx, ws, "app.py", APP)
    text = refused(
        await patch(
            ctx,
            '*** Begin Patch\n*** Update File: app.py\n-    print("Hey", name)\n'
            '+    print("Hello", name)\n*** End Patch',
        )
    )
    lines = text.splitlines()
    assert "No line of it is in the file; the most similar lines (from line 5):" in lines
    assert '     5|     print("Hi", name)' in lines


async def test_an_agent_asks_with_the_patch_s_diff_and_writes_only_when_allowed(
    ws: Path,
) -> None:
    from kode import Agent, AgentTemplate, ToolRegistry
    from kode.agent import ApprovalDecision, ApprovalRequest
    from kode.models import ScriptedModel, tool_use

    (ws / "a.txt").write_text("one\n")
    reg = ToolRegistry("test")
    for made in (fs_read, apply_patch):
        reg.register(made, source="core")
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="deny" if len(asked) == 1 else "allow")

    text = "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch"
    model = ScriptedModel(
        [
            [tool_use("fs_read", {"path": "a.txt"})],
            [tool_use("apply_patch", {"patch": text})],
            [tool_use("apply_patch", {"input": text})],  # Codex's parameter name works too
            "done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="t", tools=["group:fs"], permission={"mode": "approval"}),
        model=model,
        registry=reg,
        approver=approver,
        workspace=ws,
    )
    await agent.send("patch it")
    assert [r.tool_name for r in asked] == ["apply_patch", "apply_patch"]
    assert asked[0].description == "Apply a patch: update a.txt"
    assert asked[0].locations == ("a.txt",)
    assert "--- a/a.txt\n+++ b/a.txt" in asked[0].diff and "-one\n+two" in asked[0].diff
    assert (ws / "a.txt").read_text() == "two\n"  # denied once, then allowed
