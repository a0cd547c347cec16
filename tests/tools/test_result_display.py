"""How a ToolResult shows itself: a short repr, and markdown in a notebook."""

from __future__ import annotations

from kode import ToolResult, error_result, image_result, json_result, text_result
from kode.tools.display import MARKDOWN_IMAGE_BYTES, MARKDOWN_TEXT_CHARS, REPR_TEXT_CHARS
from kode.tools.results import TextBlock

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def test_repr_shows_the_outcome_the_text_and_what_is_set() -> None:
    assert repr(text_result("done")) == "ToolResult(text='done')"
    assert repr(text_result("done", details={"files": 2})) == (
        "ToolResult(text='done', details={'files': 2})"
    )
    assert repr(error_result("Locked.", type="permission_denied")) == (
        "ToolResult(error='permission_denied', text='Locked.')"
    )
    pending = ToolResult(content=(TextBlock(text="waiting"),), pending=True, metadata={"a": 1})
    assert repr(pending) == "ToolResult(pending, text='waiting', metadata={'a': 1})"
    assert repr(image_result(PNG, caption="chart")).startswith(
        "ToolResult(content=[<image/png image, 16 bytes>, 'chart'], details="
    )


def test_repr_cuts_long_text_and_details() -> None:
    shown = repr(json_result({"items": list(range(10_000))}))
    assert len(shown) < REPR_TEXT_CHARS + 200
    assert "…'" in shown and "details={'items': [0, 1, 2, 3, 4, 5, ...]}" in shown


def test_markdown_shows_text_images_and_errors() -> None:
    assert text_result("a\nb")._repr_markdown_() == "**✓ result**\n\n```text\na\nb\n```"
    error = error_result("no such file", type="file_not_found")._repr_markdown_()
    assert error.startswith("**✗ error** `file_not_found`")
    image = image_result(PNG)._repr_markdown_()
    assert "![image/png](data:image/png;base64,iVBORw0KGgo" in image
    big = image_result(PNG + b"\x00" * MARKDOWN_IMAGE_BYTES)._repr_markdown_()
    assert "bytes (not shown)" in big and "base64" not in big
    long = text_result("x" * (MARKDOWN_TEXT_CHARS + 10))._repr_markdown_()
    assert "… (10 more characters)" in long
    fenced = text_result("```python\ncode\n```")._repr_markdown_()
    assert fenced.startswith("**✓ result**\n\n````text\n```python")
