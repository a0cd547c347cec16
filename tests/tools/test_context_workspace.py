"""`ToolContext(workspace=...)`: a path is taken as the workspace root, anything else refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kode.builtin.fs  # noqa: F401 - registers the fs tools
from kode.registries import registry
from kode.testing import assert_ok
from kode.tools.context import ToolContext
from kode.tools.workspace import FilePool, Workspace


class _PathLike:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return str(self.path)


@pytest.mark.parametrize("as_given", [Path, str, _PathLike], ids=["Path", "str", "PathLike"])
def test_a_path_becomes_the_workspace_root(tmp_path: Path, as_given: type) -> None:
    ctx = ToolContext(workspace=as_given(tmp_path))
    assert isinstance(ctx.workspace, Workspace)
    assert ctx.workspace.root == tmp_path.resolve()
    assert ctx.resolve_path("notes/a.txt") == tmp_path.resolve() / "notes" / "a.txt"
    assert ctx.for_call(tool_name="x").workspace == ctx.workspace


def test_a_workspace_is_kept_as_it_is(tmp_path: Path) -> None:
    workspace = Workspace(root=tmp_path)
    assert ToolContext(workspace=workspace).workspace is workspace
    assert ToolContext().workspace is None


@pytest.mark.anyio
async def test_fs_tools_work_with_a_path_workspace(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, files=FilePool())
    assert_ok(await registry.get("fs_write").run({"path": "a.txt", "content": "hello"}, ctx))
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert_ok(await registry.get("fs_read").run({"path": "a.txt"}, ctx), contains="hello")


@pytest.mark.parametrize("wrong", [42, b"/tmp", ["/tmp"], {"root": "/tmp"}])
def test_anything_else_is_a_type_error(wrong: object) -> None:
    with pytest.raises(TypeError) as caught:
        ToolContext(workspace=wrong)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "workspace must be a Workspace, a path (str or os.PathLike) or None" in message
    assert type(wrong).__name__ in message


def test_a_bytes_path_like_is_a_type_error() -> None:
    class BytesPath:
        def __fspath__(self) -> bytes:
            return os.fsencode("/tmp")

    with pytest.raises(TypeError, match="workspace must be a Workspace, a path"):
        ToolContext(workspace=BytesPath())  # type: ignore[arg-type]
