"""Built-in image tools (``group:media``): ``canvas`` draws, ``image_generate`` asks a model.

``canvas`` draws shapes and text into a PNG; ``image_generate`` asks a provider for images from
a prompt.

``canvas`` needs Pillow, the optional ``kode-sdk[canvas]`` dependency; this module imports
without it, and the tool answers with an error result saying how to install it. A canvas is at
most 4,096 x 4,096 pixels with at most 1,000 shapes, and a text at most 2,000 characters. The
image is returned to the model; with ``save_to`` it is also written, as a new ``.png`` file
inside the workspace (an existing file is never overwritten). Drawing alone needs no approval;
saving is decided by kind (``edit``), like any file write, and saving inside ``.git`` or a
git directory (or making one) asks for approval, as ``fs_write`` does.

``image_generate`` asks an `ImageProvider` (``IMAGES.set(agent.services, provider)``; default
`OpenAIImages`, the OpenAI images API through the ``openai`` SDK, ``kode-sdk[openai]``, with
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``) for 1 to 4 images; its kind is ``fetch``, and with
``save_to`` (new files in the workspace) it always asks for approval, with the reason
``fs_write`` gives when the files would land in a git directory or make one.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from kode.builtin._shared._git_dirs import git_dir_reason
from kode.builtin._shared._workspace_files import target
from kode.builtin.media._images import GeneratedImage, ImageProvider, OpenAIImages
from kode.builtin.media._save import save_image
from kode.extras import install_hint
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ContentBlock, ImageBlock, TextBlock, ToolResult, image_result
from kode.tools.services import ServiceKey

__all__ = [
    "MAX_CANVAS_SIDE",
    "MAX_SHAPES",
    "MAX_TEXT_CHARS",
    "IMAGES",
    "MAX_IMAGE_PROMPT_CHARS",
    "Circle",
    "Ellipse",
    "GeneratedImage",
    "ImageProvider",
    "Line",
    "OpenAIImages",
    "Rect",
    "Text",
    "canvas",
    "image_generate",
]

MAX_CANVAS_SIDE = 4096
"""The widest and tallest canvas, in pixels."""

MAX_SHAPES = 1000
"""The most shapes one canvas call draws."""

MAX_TEXT_CHARS = 2000
"""The longest text one ``text`` shape draws."""

_COORD = Field(ge=-4 * MAX_CANVAS_SIDE, le=4 * MAX_CANVAS_SIDE)
Coord = Annotated[int, _COORD]
Width = Annotated[int, Field(ge=1, le=256)]
Color = Annotated[str, Field(min_length=1, max_length=64)]


class _Shape(BaseModel):
    # Built on the tool's first use, like the tools' own models: importing the module builds
    # no pydantic validator (tests/builtin/test_import_cost.py).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Rect(_Shape):
    """A rectangle: top-left corner, size, fill and outline."""

    type: Literal["rect"] = "rect"
    x: Coord
    y: Coord
    width: Annotated[int, Field(ge=1, le=4 * MAX_CANVAS_SIDE)]
    height: Annotated[int, Field(ge=1, le=4 * MAX_CANVAS_SIDE)]
    fill: Color | None = None
    outline: Color | None = None
    line_width: Width = 1


class Ellipse(Rect):
    """An ellipse inside the box of its top-left corner and size."""

    type: Literal["ellipse"] = "ellipse"  # type: ignore[assignment]


class Circle(_Shape):
    """A circle: centre, radius, fill and outline."""

    type: Literal["circle"] = "circle"
    cx: Coord
    cy: Coord
    radius: Annotated[int, Field(ge=1, le=4 * MAX_CANVAS_SIDE)]
    fill: Color | None = None
    outline: Color | None = None
    line_width: Width = 1


class Line(_Shape):
    """A line through two or more points ``[[x, y], ...]``."""

    type: Literal["line"] = "line"
    points: Annotated[list[tuple[Coord, Coord]], Field(min_length=2, max_length=1000)]
    color: Color = "black"
    line_width: Width = 1


class Text(_Shape):
    """Text whose top-left corner is at ``x``, ``y``."""

    type: Literal["text"] = "text"
    x: Coord
    y: Coord
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
    color: Color = "black"
    size: Annotated[int, Field(ge=4, le=512)] = 16


Shape = Annotated[Rect | Ellipse | Circle | Line | Text, Field(discriminator="type")]


def _pillow() -> Any:
    try:
        from PIL import Image, ImageColor, ImageDraw, ImageFont
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "PIL":
            raise
        raise ToolError(
            f"canvas needs Pillow, which is not installed: {install_hint('canvas')}.",
            type=ToolErrorType.EXECUTION_FAILED,
            details={"missing": "PIL"},
        ) from None
    return Image, ImageColor, ImageDraw, ImageFont


def _color(color_module: Any, value: str | None, where: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        rgb: tuple[int, ...] = color_module.getrgb(value)
    except ValueError:
        raise ToolError(
            f"{where}: '{value}' is not a color; use a name ('red'), '#rrggbb', '#rrggbbaa' "
            "or 'rgb(255, 0, 0)'.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"color": value},
        ) from None
    return rgb if len(rgb) == 4 else (*rgb, 255)


def _draw(
    width: int, height: int, background: str, shapes: list[Rect | Ellipse | Circle | Line | Text]
) -> bytes:
    import io

    image_mod, color_mod, draw_mod, font_mod = _pillow()
    back = _color(color_mod, background, "background")
    image = image_mod.new("RGBA", (width, height), back)
    draw = draw_mod.Draw(image)
    fonts: dict[int, Any] = {}
    for n, shape in enumerate(shapes, 1):
        where = f"shape {n} ({shape.type})"
        if isinstance(shape, Rect):  # also Ellipse
            box = [shape.x, shape.y, shape.x + shape.width - 1, shape.y + shape.height - 1]
            fill = _color(color_mod, shape.fill, where)
            outline = _color(color_mod, shape.outline, where)
            if fill is None and outline is None:
                outline = (0, 0, 0, 255)
            method = draw.ellipse if isinstance(shape, Ellipse) else draw.rectangle
            method(box, fill=fill, outline=outline, width=shape.line_width)
        elif isinstance(shape, Circle):
            r = shape.radius
            fill = _color(color_mod, shape.fill, where)
            outline = _color(color_mod, shape.outline, where)
            if fill is None and outline is None:
                outline = (0, 0, 0, 255)
            draw.ellipse(
                [shape.cx - r, shape.cy - r, shape.cx + r, shape.cy + r],
                fill=fill,
                outline=outline,
                width=shape.line_width,
            )
        elif isinstance(shape, Line):
            draw.line(
                [tuple(p) for p in shape.points],
                fill=_color(color_mod, shape.color, where),
                width=shape.line_width,
            )
        else:
            font = fonts.get(shape.size)
            if font is None:
                font = fonts[shape.size] = font_mod.load_default(size=shape.size)
            draw.text(
                (shape.x, shape.y),
                shape.text,
                fill=_color(color_mod, shape.color, where),
                font=font,
            )
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


def _saves(arguments: dict[str, Any], ctx: ToolContext[Any] | None = None) -> bool | str | None:
    """Drawing alone needs no approval; saving a file is decided by kind (``edit``).

    Saving into a git directory, or making one, asks as ``fs_write`` does.
    """
    save_to = arguments.get("save_to")
    if not save_to:
        return False
    return git_dir_reason([str(save_to)], ctx)


@define_tool(kind="edit", groups=["group:media"], aliases=["draw"], requires_approval=_saves)
def canvas(
    width: Annotated[int, Field(ge=1, le=MAX_CANVAS_SIDE)],
    height: Annotated[int, Field(ge=1, le=MAX_CANVAS_SIDE)],
    shapes: Annotated[list[Shape], Field(max_length=MAX_SHAPES)],
    ctx: ToolContext,
    background: Color = "white",
    save_to: str | None = None,
) -> ToolResult:
    """Draw rectangles, ellipses, circles, lines and text on a canvas and return it as a PNG.

    Shapes are drawn in order, later ones over earlier ones; (0, 0) is the top-left corner and
    coordinates are pixels (parts outside the canvas are cut off). Colors are names ("red"),
    "#rrggbb", "#rrggbbaa" or "rgb(r, g, b)". At most 4096 x 4096 pixels and 1000 shapes.

    Args:
        width: The canvas width in pixels (1 to 4096).
        height: The canvas height in pixels (1 to 4096).
        shapes: What to draw, each an object with a "type": "rect" (x, y, width, height,
            fill, outline, line_width), "ellipse" (the same box), "circle" (cx, cy, radius,
            fill, outline, line_width), "line" (points [[x, y], ...], color, line_width) or
            "text" (x, y, text, color, size).
        background: The canvas color (default white).
        save_to: Also write the PNG to this new file in the workspace (must end in .png).
        ctx: Injected by kode (not shown to the model).
    """
    if save_to is not None and not save_to.lower().endswith(".png"):
        raise ToolError(
            f"save_to '{save_to}' must name a .png file (the canvas is saved as PNG).",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"save_to": save_to},
        )
    png = _draw(width, height, background, list(shapes))
    caption = f"Canvas {width}x{height}, {len(shapes)} shape{'s' if len(shapes) != 1 else ''}"
    if save_to is not None:
        shown = save_image(ctx, save_to, png)
        caption += f", saved to {shown}"
    result = image_result(png, media_type="image/png", caption=caption + ".")
    return result


MAX_IMAGE_PROMPT_CHARS = 4000
"""The longest prompt ``image_generate`` sends."""

IMAGES: ServiceKey[ImageProvider] = ServiceKey(
    "images", ImageProvider, doc="kode.builtin.media.ImageProvider"
)
"""Where ``image_generate`` finds its provider: ``IMAGES.set(agent.services, OpenAIImages())``."""

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


def _provider(ctx: ToolContext[Any]) -> ImageProvider:
    try:
        provider = IMAGES.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None
    return provider if provider is not None else OpenAIImages()


def _numbered(path: str, n: int, count: int) -> str:
    if count == 1:
        return path
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}-{n}{dot}{suffix}"


def _check_new(ctx: ToolContext[Any], save_to: str, count: int) -> None:
    for n in range(1, count + 1):
        where = target(ctx, _numbered(save_to, n, count))
        if os.path.lexists(where.path):
            raise ToolError(
                f"'{where.shown}' exists already; images are saved only as new files. "
                "Choose another name for save_to.",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
                details={"path": str(where.path), "reason": "exists"},
            )


def _generate_approval(
    arguments: dict[str, Any], ctx: ToolContext[Any] | None = None
) -> bool | str | None:
    """Saving writes files, so it asks; without ``save_to`` the agent decides by kind.

    Saving into a git directory, or making one, gives the reason ``fs_write`` gives.
    """
    save_to = arguments.get("save_to")
    if not save_to:
        return None
    count = arguments.get("count", 1)
    count = count if isinstance(count, int) and 1 <= count <= 4 else 4
    paths = [_numbered(str(save_to), n, count) for n in range(1, count + 1)]
    git = git_dir_reason(paths, ctx)
    return git or f"writes the generated image to '{save_to}' in the workspace"


@define_tool(
    kind="fetch",
    groups=["group:media"],
    aliases=["generate_image"],
    requires_approval=_generate_approval,
)
async def image_generate(
    prompt: Annotated[str, Field(min_length=1, max_length=MAX_IMAGE_PROMPT_CHARS)],
    ctx: ToolContext,
    size: Annotated[str, Field(pattern=r"^(auto|[1-9][0-9]{1,4}x[1-9][0-9]{1,4})$")] = "auto",
    count: Annotated[int, Field(ge=1, le=4)] = 1,
    save_to: str | None = None,
) -> ToolResult:
    """Generate an image from a text prompt and return it (an image model such as OpenAI's).

    Describe what to show in the prompt: subject, style, composition, colors. The images are
    returned to you; with save_to they are also written as new files in the workspace.

    Args:
        prompt: What the image should show (at most 4000 characters).
        size: "WIDTHxHEIGHT" as the model supports it (e.g. "1024x1024", "1536x1024") or
            "auto" (default).
        count: How many images to make (1 to 4).
        save_to: Also write the image to this new file in the workspace (.png, .jpg, .jpeg or
            .webp); with count > 1 the files are numbered (name-1.png, name-2.png, ...).
        ctx: Injected by kode (not shown to the model).
    """
    if save_to is not None and not save_to.lower().endswith(_IMAGE_SUFFIXES):
        raise ToolError(
            f"save_to '{save_to}' must name an image file ending in .png, .jpg, .jpeg or .webp.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"save_to": save_to},
        )
    if save_to is not None:  # refused before a (paid) request, not after
        await anyio.to_thread.run_sync(_check_new, ctx, save_to, count)
    provider = _provider(ctx)
    images = await provider.generate(prompt, size=size, count=count)
    if not images:
        raise ToolError(
            f"{provider.name} returned no image for the prompt; try rewording it.",
            type=ToolErrorType.EXECUTION_FAILED,
        )
    blocks: list[ContentBlock] = []
    saved: list[str] = []
    for n, image in enumerate(images, 1):
        try:
            kind = image_result(image.data).details or {}
        except ValueError:
            raise ToolError(
                f"{provider.name} returned {len(image.data)} bytes that are not a PNG, JPEG, "
                "GIF or WebP image.",
                type=ToolErrorType.EXECUTION_FAILED,
            ) from None
        blocks.append(ImageBlock(data=image.data, media_type=str(kind.get("media_type"))))
        if save_to is not None:
            path = _numbered(save_to, n, len(images))
            saved.append(await anyio.to_thread.run_sync(save_image, ctx, path, image.data))
    what = f"{len(images)} image{'s' if len(images) != 1 else ''} from {provider.name}"
    lines = [f"Generated {what}" + (f", saved to {', '.join(saved)}." if saved else ".")]
    revised = [i.revised_prompt for i in images if i.revised_prompt]
    if revised:
        lines.append(f"Prompt as the provider revised it: {revised[0]}")
    blocks.append(TextBlock(text="\n".join(lines)))
    return ToolResult(
        content=tuple(blocks),
        details={"provider": provider.name, "images": len(images), "saved": saved},
    )
