"""image_generate with the real openai client against a loopback server speaking the OpenAI
images API (``POST /v1/images/generations``, answers in ``b64_json``)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from loopback_http import import_threads

from kode import Agent, AgentTemplate, ToolRegistry
from kode.builtin.media import IMAGES, GeneratedImage, OpenAIImages, image_generate
from kode.extras import install_hint
from kode.models import ScriptedModel, tool_use
from kode.testing.images import FakeImagesServer
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ImageBlock
from kode.tools.workspace import FilePool, Workspace

pytest.importorskip("openai")
Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.anyio


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(out, format="PNG")
    return out.getvalue()


RED, BLUE = png((255, 0, 0)), png((0, 0, 255))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def ctx_for(ws: Path, provider: Any) -> ToolContext:
    services: dict[str, Any] = {}
    if provider is not None:
        IMAGES.set(services, provider)
    return ToolContext(workspace=Workspace(root=ws), files=FilePool(), services=services)


def pixels(block: ImageBlock) -> Any:
    return Image.open(io.BytesIO(block.data)).convert("RGB").getpixel((1, 1))


async def test_an_image_from_the_openai_images_api(ws: Path) -> None:
    with FakeImagesServer(images=[RED], revised="A red square, flat.") as fake:
        provider = OpenAIImages(base_url=fake.base_url, api_key="test-key")
        result = await image_generate.run(
            {"prompt": "a red square", "size": "1024x1024"}, ctx_for(ws, provider)
        )
    assert result.error_type is None, result.text
    [(path, headers, body)] = fake.requests
    assert path == "/v1/images/generations"
    assert headers["authorization"] == "Bearer test-key"
    assert body == {"model": "gpt-image-1", "prompt": "a red square", "size": "1024x1024", "n": 1}
    [image] = [b for b in result.content if isinstance(b, ImageBlock)]
    assert image.media_type == "image/png" and pixels(image) == (255, 0, 0)
    assert result.text == (
        "Generated 1 image from OpenAI.\nPrompt as the provider revised it: A red square, flat."
    )
    assert os.listdir(ws) == []


async def test_base_url_and_key_come_from_the_environment(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeImagesServer(images=[RED, BLUE]) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        # No provider set: the default OpenAIImages, configured by the environment.
        result = await image_generate.run(
            {"prompt": "two squares", "count": 2, "save_to": "art/sq.png"}, ctx_for(ws, None)
        )
    assert result.error_type is None, result.text
    assert fake.requests[0][1]["authorization"] == "Bearer env-key"
    blocks = [b for b in result.content if isinstance(b, ImageBlock)]
    assert [pixels(b) for b in blocks] == [(255, 0, 0), (0, 0, 255)]
    assert (ws / "art" / "sq-1.png").read_bytes() == RED
    assert (ws / "art" / "sq-2.png").read_bytes() == BLUE
    assert result.text == "Generated 2 images from OpenAI, saved to art/sq-1.png, art/sq-2.png."


async def test_refusals_and_errors_say_why(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeImagesServer(status=400) as fake:
        provider = OpenAIImages(base_url=fake.base_url, api_key="k")
        refused = await image_generate.run({"prompt": "x"}, ctx_for(ws, provider))
        outside = await image_generate.run(
            {"prompt": "x", "save_to": "../out.png"}, ctx_for(ws, provider)
        )
        bad_suffix = await image_generate.run(
            {"prompt": "x", "save_to": "out.gif"}, ctx_for(ws, provider)
        )
        bad_size = await image_generate.run({"prompt": "x", "size": "big"}, ctx_for(ws, provider))
        (ws / "taken.png").write_bytes(b"mine")
        taken = await image_generate.run(
            {"prompt": "x", "save_to": "taken.png"}, ctx_for(ws, provider)
        )
    assert refused.error_type is ToolErrorType.EXECUTION_FAILED
    assert refused.text.endswith(
        "OpenAI refused the image request (HTTP 400): Your prompt was rejected."
    )
    # a path outside the workspace, a wrong suffix or size: refused before any request
    assert outside.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE
    assert bad_suffix.error_type is ToolErrorType.INVALID_TOOL_PARAMS and ".webp" in bad_suffix.text
    assert bad_size.error_type is ToolErrorType.INVALID_TOOL_PARAMS and "size" in bad_size.text
    assert taken.error_type is ToolErrorType.INVALID_TOOL_PARAMS and "exists" in taken.text
    assert (ws / "taken.png").read_bytes() == b"mine"
    assert len(fake.requests) == 1

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    no_key = await image_generate.run({"prompt": "x"}, ctx_for(ws, OpenAIImages()))
    assert no_key.error_type is ToolErrorType.EXECUTION_FAILED
    assert "OPENAI_API_KEY" in no_key.text


async def test_save_to_outside_the_workspace_writes_nothing(ws: Path, tmp_path: Path) -> None:
    with FakeImagesServer(images=[RED]) as fake:
        provider = OpenAIImages(base_url=fake.base_url, api_key="k")
        result = await image_generate.run(
            {"prompt": "x", "save_to": "../out.png"}, ctx_for(ws, provider)
        )
    assert result.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE
    assert not (tmp_path / "out.png").exists()


class OneColour:
    name = "Local"

    async def generate(self, prompt: str, *, size: str, count: int) -> list[GeneratedImage]:
        return [GeneratedImage(data=BLUE)] * count


async def test_saving_asks_for_approval_in_an_agent(ws: Path) -> None:
    approval = image_generate.requires_approval
    assert callable(approval)
    assert approval({"prompt": "x"}) is None
    assert "pic.png" in str(approval({"prompt": "x", "save_to": "pic.png"}))

    from kode.agent import ApprovalDecision, ApprovalRequest

    registry = ToolRegistry("test")
    registry.register(image_generate, source="core")
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="deny")

    model = ScriptedModel(
        [
            [tool_use("image_generate", {"prompt": "blue"})],
            [tool_use("image_generate", {"prompt": "blue", "save_to": "pic.png"})],
            "done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="t", tools=["group:media"]),
        model=model,
        registry=registry,
        approver=deny,
        workspace=ws,
    )
    IMAGES.set(agent.services, OneColour())
    await agent.send("make it")
    assert [r.tool_name for r in asked] == ["image_generate"]  # only the call that saves
    assert not (ws / "pic.png").exists()


async def test_without_openai_the_result_says_how_to_install_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    result = await image_generate.run({"prompt": "x"}, ctx_for(ws, OpenAIImages(api_key="k")))
    assert result.error_type is ToolErrorType.EXECUTION_FAILED
    assert install_hint("openai") in result.text


def test_the_first_image_imports_openai_outside_the_event_loop() -> None:
    """openai is imported on the first request, in a worker thread, so the loop's other tasks
    do not wait for it: a fresh process records which thread imports it."""
    script = """
from kode.builtin.media import OpenAIImages
from kode.testing.images import FakeImagesServer
assert "openai" not in sys.modules
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cff01f0005000201a5d7d8ab0000000049454e44ae426082"
)
with FakeImagesServer(images=[PIXEL]) as server:
    provider = OpenAIImages(base_url=server.base_url, api_key="-")
    (image,) = anyio.run(lambda: provider.generate("a dot", size="auto", count=1))
assert image.data == PIXEL
print(importers)
"""
    assert import_threads("openai", script) == "[False]"
