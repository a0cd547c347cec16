"""Repositories a hostile model builds with the writing tools, then a person's plain ``git status``.

The model has ``apply_patch``, ``fs_write``, ``canvas`` and ``image_generate``, mode ``auto`` and
no approver. It writes the pieces of a bare repository whose config names an fsmonitor command
and points its work tree at the workspace: in one patch, in several calls, or with images saved
where ``objects`` and ``refs`` must be. Whatever the order, the call that would make the
directory a repository asks for approval (and is refused here), and a real ``git status`` run
in the directory afterwards, as a person would, runs nothing. `git_dir_reason` itself is
checked against the trees git takes for repositories (``is_git_directory`` in ``setup.c``).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.builtin._shared._git_dirs import GIT_DIR_REASON, GIT_WRITE_REASON, git_dir_reason
from kode.builtin.fs import apply_patch, fs_read, fs_write
from kode.builtin.media import IMAGES, GeneratedImage, canvas, image_generate
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def fsmonitor_config(tmp_path: Path) -> str:
    """A repository config whose fsmonitor command leaves a marker, work tree one level up."""
    return (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
        f"\tfsmonitor = touch {tmp_path}/marker.fsmonitor; echo\n"
    )


REPOSITORY = {
    "sub/HEAD": "ref: refs/heads/main\n",
    "sub/objects/info/packs": "\n",
    "sub/refs/tags/keep": "\n",
}


def envelope(files: dict[str, str]) -> str:
    sections = [
        f"*** Add File: {name}\n" + "".join(f"+{line}\n" for line in text.splitlines())
        for name, text in files.items()
    ]
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch"


def unified(files: dict[str, str]) -> str:
    sections = []
    for name, text in files.items():
        lines = text.splitlines()
        body = "".join(f"+{line}\n" for line in lines)
        sections.append(f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n{body}")
    return "".join(sections)


def person_runs_git_status(tmp_path: Path, where: Path) -> subprocess.CompletedProcess[str]:
    """``git status`` as a person would run it in `where`, with no configuration of their own."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(tmp_path),
    }
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        ["git", "status"], cwd=where, env=env, capture_output=True, text=True, timeout=60
    )


def fsmonitor_ran(tmp_path: Path) -> bool:
    return (tmp_path / "marker.fsmonitor").exists()


def pngs(root: Path) -> list[Path]:
    return sorted(root.rglob("*.png"))


class OneImage:
    name = "Local"

    async def generate(self, prompt: str, *, size: str, count: int) -> list[GeneratedImage]:
        from PIL import Image

        out = io.BytesIO()
        Image.new("RGB", (2, 2), "blue").save(out, format="PNG")
        return [GeneratedImage(data=out.getvalue())] * count


def make_agent(ws: Path, turns: list[Any], *, approver: Any = None) -> tuple[Agent, ScriptedModel]:
    """An agent with the writing tools, mode auto, and (by default) no approver."""
    reg = ToolRegistry("test")
    names = ["apply_patch", "fs_read", "fs_write", "canvas", "image_generate"]
    for made in (apply_patch, fs_read, fs_write, canvas, image_generate):
        reg.register(made, source="core")
    model = ScriptedModel(turns)
    agent = Agent.create(
        AgentTemplate(id="hostile", tools=names),
        model=model,
        registry=reg,
        workspace=ws,
        approver=approver,
    )
    IMAGES.set(agent.services, OneImage())
    return agent, model


def results(model: ScriptedModel, request: int) -> list[ToolResultContent]:
    last = model.requests[request].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultContent)]


def refused_for_git(result: ToolResultContent) -> bool:
    return result.is_error and "git directory" in result.text and "nobody can give" in result.text


@pytest.mark.parametrize("form", [envelope, unified], ids=["envelope", "unified"])
async def test_one_patch_building_a_repository_is_refused(
    tmp_path: Path, ws: Path, form: Any
) -> None:
    files = {**REPOSITORY, "sub/config": fsmonitor_config(tmp_path)}
    agent, model = make_agent(ws, [[tool_use("apply_patch", {"patch": form(files)})], "."])
    async with agent:
        await agent.send("go")
    (result,) = results(model, 1)
    assert refused_for_git(result), result.text
    assert not (ws / "sub").exists()
    person_runs_git_status(tmp_path, ws / "sub")
    assert not fsmonitor_ran(tmp_path)


async def test_a_move_that_completes_a_repository_in_one_patch_is_refused(
    tmp_path: Path, ws: Path
) -> None:
    """HEAD arrives as a move's destination, beside directories the same patch makes."""
    (ws / "head.txt").write_text("ref: refs/heads/main\n")
    patch = "*** Begin Patch\n*** Update File: head.txt\n*** Move to: sub/HEAD\n" + envelope(
        {"sub/objects/info/packs": "\n", "sub/refs/tags/keep": "\n"}
        | {"sub/config": fsmonitor_config(tmp_path)}
    ).removeprefix("*** Begin Patch\n")
    read = tool_use("fs_read", {"path": "head.txt"})
    agent, model = make_agent(ws, [[read], [tool_use("apply_patch", {"patch": patch})], "."])
    async with agent:
        await agent.send("go")
    (result,) = results(model, 2)
    assert refused_for_git(result), result.text
    assert (ws / "head.txt").exists() and not (ws / "sub").exists()
    person_runs_git_status(tmp_path, ws / "sub")
    assert not fsmonitor_ran(tmp_path)


async def test_images_saved_as_the_last_pieces_of_a_repository_are_refused(
    tmp_path: Path, ws: Path
) -> None:
    """config and HEAD need no approval alone; the images that would make objects/ and refs/
    beside them ask, one call at a time."""
    square = {"width": 2, "height": 2, "shapes": []}
    turns = [
        [tool_use("fs_write", {"path": "sub/config", "content": fsmonitor_config(tmp_path)})],
        [tool_use("fs_write", {"path": "sub/HEAD", "content": REPOSITORY["sub/HEAD"]})],
        [tool_use("canvas", {**square, "save_to": "sub/objects/a.png"})],
        [tool_use("canvas", {**square, "save_to": "sub/refs/a.png"})],
        ".",
    ]
    agent, model = make_agent(ws, turns)
    async with agent:
        await agent.send("go")
    assert [r.is_error for n in (1, 2) for r in results(model, n)] == [False, False]
    for n in (3, 4):
        (result,) = results(model, n)
        assert refused_for_git(result), result.text
    assert not (ws / "sub" / "objects").exists() and not (ws / "sub" / "refs").exists()
    person_runs_git_status(tmp_path, ws / "sub")
    assert not fsmonitor_ran(tmp_path)


async def test_patches_and_writes_over_several_calls_ask_at_the_last_piece(
    tmp_path: Path, ws: Path
) -> None:
    turns = [
        [tool_use("fs_write", {"path": "sub/config", "content": fsmonitor_config(tmp_path)})],
        [tool_use("apply_patch", {"patch": envelope({"sub/objects/info/packs": "\n"})})],
        [tool_use("apply_patch", {"patch": envelope({"sub/refs/tags/keep": "\n"})})],
        [tool_use("apply_patch", {"patch": envelope({"sub/HEAD": REPOSITORY["sub/HEAD"]})})],
        [tool_use("fs_write", {"path": "sub/HEAD", "content": REPOSITORY["sub/HEAD"]})],
        ".",
    ]
    agent, model = make_agent(ws, turns)
    async with agent:
        await agent.send("go")
    assert [r.is_error for n in (1, 2, 3) for r in results(model, n)] == [False] * 3
    for n in (4, 5):
        (result,) = results(model, n)
        assert refused_for_git(result), result.text
    assert not (ws / "sub" / "HEAD").exists()
    person_runs_git_status(tmp_path, ws / "sub")
    assert not fsmonitor_ran(tmp_path)


@pytest.mark.parametrize(
    ("save_to", "reason"),
    [(".git/hooks/x.png", GIT_WRITE_REASON), ("sub/objects/x.png", GIT_DIR_REASON)],
)
async def test_saving_images_into_a_git_directory_takes_fs_write_s_approval(
    ws: Path, save_to: str, reason: str
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "HEAD").write_text("ref: refs/heads/main\n")
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="deny")

    calls = [
        tool_use("canvas", {"width": 2, "height": 2, "shapes": [], "save_to": save_to}),
        tool_use("image_generate", {"prompt": "blue", "save_to": save_to}),
        tool_use("image_generate", {"prompt": "blue", "count": 2, "save_to": save_to}),
        tool_use("fs_write", {"path": save_to, "content": "x"}),
    ]
    agent, _ = make_agent(ws, [[c] for c in calls] + ["."], approver=deny)
    async with agent:
        await agent.send("go")
    assert [(r.tool_name, r.reason) for r in asked] == [
        (name, reason) for name in ("canvas", "image_generate", "image_generate", "fs_write")
    ]
    assert pngs(ws) == []


@pytest.mark.parametrize(
    ("on_disk", "written", "reason"),
    [
        ((), ["sub/HEAD", "sub/objects/x", "sub/refs/x"], GIT_DIR_REASON),
        ((), ["sub/HEAD", "sub/objects/x"], GIT_DIR_REASON),  # one piece before git would
        ((), ["sub/HEAD", "sub/commondir"], GIT_DIR_REASON),
        ((), ["sub/notes.txt", "sub/HEAD", "sub/refs/heads/main"], GIT_DIR_REASON),
        ((), ["a/b/HEAD", "a/b/objects/pack/p"], GIT_DIR_REASON),
        ((), ["HEAD", "objects/x"], GIT_DIR_REASON),  # the workspace itself
        (("sub/objects/x",), ["sub/refs/x", "sub/HEAD"], GIT_DIR_REASON),
        (("sub/HEAD",), ["sub/refs/x", "other.txt"], GIT_DIR_REASON),
        ((), ["sub/HEAD", "other/objects/x"], None),  # HEAD and objects in different places
        ((), ["sub/HEAD", "sub/notes.txt"], None),
        ((), ["src/HEADER.h", "src/objects.c", "src/refs.c"], None),
        ((), ["a/.git/config"], GIT_WRITE_REASON),
        ((), ["a/.GIT./config"], GIT_WRITE_REASON),  # what Windows takes for .git
        ((), ["a/.g\u200cit/config"], GIT_WRITE_REASON),  # what HFS+ takes for .git
        ((), ["a/GIT~1/config"], GIT_WRITE_REASON),  # the short name NTFS gives .git
        ((), ["a/.gitignore", "a/.github/x"], None),
    ],
)
def test_the_tree_a_call_leaves_is_judged(
    ws: Path, on_disk: tuple[str, ...], written: list[str], reason: str | None
) -> None:
    for name in on_disk:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=ws))
    assert git_dir_reason(written, ctx) == reason
    if reason is not None and len(written) > 1 and not on_disk:
        assert all(git_dir_reason([one], ctx) != GIT_DIR_REASON for one in written)
