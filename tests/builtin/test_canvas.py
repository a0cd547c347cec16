"""canvas: shapes and text drawn with Pillow, checked pixel by pixel in the returned PNG."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kode.builtin.media import MAX_CANVAS_SIDE, MAX_SHAPES, canvas
from kode.extras import install_hint
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ImageBlock, ToolResult
from kode.tools.workspace import FilePool, Workspace

Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def draw(ctx: ToolContext, **args: Any) -> ToolResult:
    return await canvas.run(args, ctx)


def png_of(result: ToolResult) -> Any:
    assert result.error_type is None, result.text
    blocks = [b for b in result.content if isinstance(b, ImageBlock)]
    assert len(blocks) == 1 and blocks[0].media_type == "image/png"
    assert blocks[0].data.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(blocks[0].data)).convert("RGB")


async def test_shapes_land_where_they_were_drawn(ctx: ToolContext, ws: Path) -> None:
    result = await draw(
        ctx,
        width=200,
        height=100,
        background="#ffffff",
        shapes=[
            {"type": "rect", "x": 10, "y": 10, "width": 40, "height": 30, "fill": "red"},
            {"type": "circle", "cx": 150, "cy": 50, "radius": 20, "fill": "rgb(0, 0, 255)"},
            {"type": "ellipse", "x": 60, "y": 60, "width": 60, "height": 30, "fill": "#00ff00"},
            {"type": "line", "points": [[0, 95], [199, 95]], "color": "black", "line_width": 3},
            # drawn last, over the rectangle's corner
            {"type": "rect", "x": 45, "y": 35, "width": 10, "height": 10, "fill": "yellow"},
        ],
    )
    img = png_of(result)
    assert img.size == (200, 100)
    assert img.getpixel((20, 20)) == (255, 0, 0)
    assert img.getpixel((9, 9)) == (255, 255, 255)  # just outside the rectangle
    assert img.getpixel((50, 40)) == (255, 255, 0)  # the later rectangle is on top
    assert img.getpixel((150, 50)) == (0, 0, 255)
    assert img.getpixel((150 + 19, 50 + 19)) == (255, 255, 255)  # the circle's box corner
    assert img.getpixel((90, 75)) == (0, 255, 0)
    assert img.getpixel((61, 61)) == (255, 255, 255)  # the ellipse's box corner
    assert img.getpixel((100, 95)) == (0, 0, 0)
    assert result.text == "Canvas 200x100, 5 shapes."
    assert os.listdir(ws) == []  # nothing written
    approval = canvas.requires_approval
    assert callable(approval)
    assert approval({"width": 1, "height": 1, "shapes": []}) is False
    assert approval({"width": 1, "height": 1, "shapes": [], "save_to": "a.png"}) is None
    assert canvas.kind.is_mutating


async def test_text_is_drawn_in_its_color(ctx: ToolContext) -> None:
    img = png_of(
        await draw(
            ctx,
            width=120,
            height=40,
            shapes=[{"type": "text", "x": 5, "y": 5, "text": "Hello", "color": "red", "size": 24}],
        )
    )
    reds = [
        (x, y)
        for x in range(120)
        for y in range(40)
        if (p := img.getpixel((x, y)))[0] > 200 and p[1] < 80 and p[2] < 80
    ]
    assert len(reds) > 30
    assert min(x for x, _ in reds) >= 5 and min(y for _, y in reds) >= 5
    assert max(x for x, _ in reds) > 40  # five letters at size 24 are wider than 40 px


async def test_save_to_writes_a_new_png_in_the_workspace(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    shapes = [{"type": "rect", "x": 0, "y": 0, "width": 4, "height": 4, "fill": "blue"}]
    result = await draw(ctx, width=8, height=8, shapes=shapes, save_to="out/pic.png")
    assert result.text == "Canvas 8x8, 1 shape, saved to out/pic.png."
    saved = Image.open(ws / "out" / "pic.png").convert("RGB")
    assert saved.getpixel((1, 1)) == (0, 0, 255) and saved.getpixel((6, 6)) == (255, 255, 255)

    again = await draw(ctx, width=8, height=8, shapes=shapes, save_to="out/pic.png")
    assert again.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "exists already" in again.text

    outside = await draw(ctx, width=8, height=8, shapes=shapes, save_to="../escape.png")
    assert outside.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE
    assert not (tmp_path / "escape.png").exists()

    not_png = await draw(ctx, width=8, height=8, shapes=shapes, save_to="pic.jpg")
    assert not_png.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert ".png" in not_png.text


async def test_bad_input_says_what_would_be_right(ctx: ToolContext) -> None:
    color = await draw(
        ctx,
        width=10,
        height=10,
        shapes=[
            {"type": "circle", "cx": 1, "cy": 1, "radius": 1},
            {"type": "line", "points": [[0, 0], [1, 1]], "color": "notacolor"},
        ],
    )
    assert color.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "shape 2 (line): 'notacolor' is not a color" in color.text

    big = await draw(ctx, width=MAX_CANVAS_SIDE + 1, height=10, shapes=[])
    assert big.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "4096" in big.text

    many = [{"type": "circle", "cx": 1, "cy": 1, "radius": 1}] * (MAX_SHAPES + 1)
    too_many = await draw(ctx, width=10, height=10, shapes=many)
    assert too_many.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "1000" in too_many.text

    unknown = await draw(ctx, width=10, height=10, shapes=[{"type": "star", "x": 1}])
    assert unknown.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "rect" in unknown.text


async def test_without_pillow_the_result_says_how_to_install_it(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    result = await draw(ctx, width=8, height=8, shapes=[])
    assert result.error_type is ToolErrorType.EXECUTION_FAILED
    assert result.text.endswith(
        f"canvas needs Pillow, which is not installed: {install_hint('canvas')}."
    )
