"""Attacks a hostile model made with tools it may call without approval, through a real agent.

Each test is a chain that once ran code or read files outside the workspace with the default
`RuntimePolicy`, permission mode ``auto`` and no approver: a git directory written with
``fs_write`` and then used by a "safe" git command (a diff driver, textconv, alternates and
``commondir`` reaching another repository), and a symlink out of the workspace read through by
a "safe" command. Nothing here is mocked: real files, real git, real processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry
from kode.builtin._shared._workspace_files import GIT_DIR_REASON, in_git_dir
from kode.builtin.fs import fs_read, fs_write
from kode.builtin.runtime import RuntimePolicy, bash_run, set_default_runtime_policy
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

SECRET = "TOP-SECRET-4d1c"


@pytest.fixture(autouse=True)
def default_policy() -> Iterator[None]:
    """Every test runs with the shipped default policy (allowlist, ask on miss)."""
    previous = set_default_runtime_policy(RuntimePolicy())
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A repository outside the workspace with a secret in two commits."""
    repo = tmp_path / "outside"
    repo.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.name", "kode")
    git("config", "user.email", "kode@example.invalid")
    (repo / "secret.txt").write_text(f"{SECRET} one\n")
    git("add", "secret.txt")
    git("commit", "-qm", "first")
    (repo / "secret.txt").write_text(f"{SECRET} two\n")
    git("commit", "-qam", "second")
    return repo


def head_of(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def evil_program(tmp_path: Path, ws: Path) -> str:
    """A program leaving one marker in the workspace and one outside it; its command line.

    It lives in the workspace, as if a model had written it, so that the sandbox (which hides
    the rest of /tmp) does not stop it: what must stop it is that git never runs it.
    """
    program = ws / "evil.sh"
    program.write_text(f'#!/bin/sh\ntouch "{ws}/marker.inside" "{tmp_path}/marker.outside"\n')
    program.chmod(0o755)
    return f"sh {program}"


def markers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.rglob("marker.*"))


def bare_repository_files(driver: str, *, alternates: str = "", head: str = "") -> dict[str, str]:
    """The files of a bare repository whose config makes every diff run `driver`."""
    files = {
        "sub/HEAD": "ref: refs/heads/main\n",
        "sub/config": (
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
            f'[diff "x"]\n\tcommand = {driver}\n\ttextconv = {driver}\n'
        ),
        "sub/info/attributes": "* diff=x\n",
        "sub/objects/info/packs": "\n",
        "sub/refs/tags/keep": "",
        "sub/a": "a\n",
        "sub/b": "b\n",
    }
    if alternates:
        files["sub/objects/info/alternates"] = alternates + "\n"
    if head:
        files["sub/refs/heads/main"] = head + "\n"
    return files


def make_agent(ws: Path, turns: list[Any]) -> tuple[Agent, ScriptedModel]:
    """An agent with fs_read, fs_write and bash_run, mode auto, and no approver."""
    reg = ToolRegistry("test")
    for made in (fs_read, fs_write, bash_run):
        reg.register(made, source="core")
    model = ScriptedModel(turns)
    agent = Agent.create(
        AgentTemplate(id="hostile", tools=["fs_read", "fs_write", "bash_run"]),
        model=model,
        registry=reg,
        workspace=ws,
    )
    return agent, model


def results(model: ScriptedModel, request: int) -> list[ToolResultContent]:
    last = model.requests[request].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultContent)]


def first_line_of(path: str) -> str:
    with open(path) as file:
        return file.readline().rstrip("\n")


def write_on_disk(root: Path, files: dict[str, str]) -> None:
    """Files made as an approved command would have made them (not through the tools)."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def test_a_git_directory_written_with_fs_write_needs_approval(
    tmp_path: Path, ws: Path
) -> None:
    files = bare_repository_files(evil_program(tmp_path, ws))
    writes = [tool_use("fs_write", {"path": name, "content": text}) for name, text in files.items()]
    diff = tool_use("bash_run", {"command": "git diff --no-index a b", "cwd": "sub"})
    agent, model = make_agent(ws, [writes, [diff], "done"])
    async with agent:
        await agent.send("go")
    written = results(model, 1)
    refused = [r for r in written if r.is_error]
    assert refused, [r.text for r in written]
    assert all("git directory" in r.text and "nobody can give it" in r.text for r in refused)
    assert markers(tmp_path) == []


@pytest.mark.parametrize(
    "command", ["git diff --no-index a b", "git log -p", "git show HEAD", "git diff HEAD~1 HEAD"]
)
async def test_git_in_a_forged_repository_runs_no_driver(
    tmp_path: Path, ws: Path, outside: Path, command: str
) -> None:
    objects = outside / ".git" / "objects"
    files = bare_repository_files(
        evil_program(tmp_path, ws), alternates=str(objects), head=head_of(outside)
    )
    write_on_disk(ws, files)
    agent, model = make_agent(ws, [[tool_use("bash_run", {"command": command, "cwd": "sub"})], "."])
    async with agent:
        await agent.send("go")
    (result,) = results(model, 1)
    assert markers(tmp_path) == [], result.text
    assert SECRET not in result.text


async def test_commondir_pointing_at_another_repository_reads_nothing(
    ws: Path, outside: Path
) -> None:
    write_on_disk(ws, {"c/HEAD": "ref: refs/heads/main\n", "c/commondir": f"{outside}/.git\n"})
    turns = [[tool_use("bash_run", {"command": c, "cwd": "c"}) for c in ("git log -p", "git show")]]
    agent, model = make_agent(ws, [*turns, "."])
    async with agent:
        await agent.send("go")
    for result in results(model, 1):
        assert SECRET not in result.text


async def test_commondir_written_with_fs_write_needs_approval(ws: Path, outside: Path) -> None:
    writes = [
        tool_use("fs_write", {"path": "c/commondir", "content": f"{outside}/.git\n"}),
        tool_use("fs_write", {"path": "c/HEAD", "content": "ref: refs/heads/main\n"}),
    ]
    agent, model = make_agent(ws, [writes, "."])
    async with agent:
        await agent.send("go")
    first, second = results(model, 1)
    assert not first.is_error
    assert second.is_error and "git directory" in second.text
    assert not (ws / "c" / "HEAD").exists()


async def test_a_symlink_out_of_the_workspace_is_not_read_through(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "secret.txt").write_text(f"{SECRET}\n")
    (ws / "outlink").symlink_to(tmp_path)  # as the diff driver above once made it
    command = "head -3 outlink/secret.txt"
    agent, model = make_agent(ws, [[tool_use("bash_run", {"command": command})], "."])
    async with agent:
        await agent.send("go")
    (result,) = results(model, 1)
    assert SECRET not in result.text
    assert result.is_error and "outside the workspace" in result.text


@pytest.mark.skipif(not os.access("/etc/shadow", os.R_OK), reason="/etc/shadow is not readable")
async def test_a_symlink_to_the_root_does_not_reveal_etc_shadow(ws: Path) -> None:
    (ws / "rootlink").symlink_to("/")
    first_line = first_line_of("/etc/shadow")
    agent, model = make_agent(
        ws, [[tool_use("bash_run", {"command": "head -3 rootlink/etc/shadow"})], "."]
    )
    async with agent:
        await agent.send("go")
    (result,) = results(model, 1)
    assert first_line not in result.text


@pytest.mark.parametrize(
    ("existing", "written", "asks"),
    [
        ((), "sub/HEAD", False),  # a HEAD alone is not a repository yet
        (("sub/HEAD",), "sub/objects/x", True),
        (("sub/HEAD",), "sub/refs/heads/main", True),
        (("sub/HEAD",), "sub/commondir", True),
        (("sub/objects/x",), "sub/HEAD", True),
        (("sub/commondir",), "sub/HEAD", True),
        (("sub/refs/x",), "sub/head", True),  # case-insensitive file systems
        (("sub/HEAD", "sub/objects/x"), "sub/config", True),
        (("sub/HEAD", "sub/objects/x"), "sub/deep/er/file", True),
        (("HEAD", "refs/x"), "notes.txt", True),  # the workspace itself
        (("sub/objects/x",), "sub/notes.txt", False),
        (("src/HEADER.h",), "src/objects.c", False),
    ],
)
def test_writing_into_a_git_directory_asks(
    ws: Path, existing: tuple[str, ...], written: str, asks: bool
) -> None:
    write_on_disk(ws, dict.fromkeys(existing, ""))
    ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=ws))
    assert in_git_dir({"path": written}, ctx) == (GIT_DIR_REASON if asks else None)


@pytest.mark.parametrize("command", ["git status", "git diff", "git log -p", "git show"])
async def test_drivers_and_filters_a_model_can_write_run_nothing(
    tmp_path: Path, ws: Path, command: str
) -> None:
    """The repository's config includes a file of the working tree (some projects do): a
    model writes it with fs_write, no approval needed, and names a diff driver, a textconv
    and a filter in it; the "safe" git commands run none of them."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.name", "kode")
    git("config", "user.email", "kode@example.invalid")
    git("config", "include.path", "../project.gitconfig")
    (ws / "notes.txt").write_text("one\n")
    git("add", "notes.txt")
    git("commit", "-qm", "first")
    (ws / "notes.txt").write_text("eno\n")  # the same size: git status must read it (clean)
    evil = evil_program(tmp_path, ws)
    included = (
        f'[diff "x"]\n\tcommand = {evil}\n\ttextconv = {evil}\n'
        f'[filter "x"]\n\tclean = {evil}\n\tsmudge = {evil}\n\tprocess = {evil}\n'
    )
    writes = [
        tool_use("fs_write", {"path": "project.gitconfig", "content": included}),
        tool_use("fs_write", {"path": ".gitattributes", "content": "* diff=x filter=x\n"}),
    ]
    agent, model = make_agent(ws, [writes, [tool_use("bash_run", {"command": command})], "."])
    async with agent:
        await agent.send("go")
    assert not any(r.is_error for r in results(model, 1))
    (result,) = results(model, 2)
    assert not result.is_error, result.text
    assert markers(tmp_path) == [], result.text
