"""The plain call pipeline and the `ToolStart` events that make their arguments again.

A call of a turn with no hooks, no store, no tracing and a permission config that can only
allow it runs `_plain_call` instead of the whole `_Call` pipeline: these tests hold both to
the same events, records, results and history. A tool whose validation is pure
(`Tool.pure_validation`) gets a `ToolStart` that keeps the model's input instead of the
validated arguments, and validates it again when `input` is read.
"""

from __future__ import annotations

import copy
import enum
import pickle
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator
from support import make_agent

from kode import ToolContext, define_tool
from kode.agent import ToolStart
from kode.agent.hooks import AgentHooks
from kode.models import tool_use
from kode.registries import ToolRegistry
from kode.tools.declared import declare_tool
from kode.tools.results import ImageBlock, TextBlock, ToolResult, image_result
from kode.tools.validation import pure_schema

pytestmark = pytest.mark.anyio


class LineItem(BaseModel):
    sku: str
    quantity: int = 1


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Lenient(enum.Enum):
    RED = "red"

    @classmethod
    def _missing_(cls, value: object) -> Lenient:
        return cls.RED


@dataclass
class Point:
    x: int
    y: int = 0


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Checked(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def positive(cls, value: int) -> int:
        return abs(value)


class Hooked(BaseModel):
    n: int

    def model_post_init(self, context: Any) -> None:
        pass


class Built(BaseModel):
    n: int

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)


class Whole(BaseModel):
    n: int

    @model_validator(mode="before")
    @classmethod
    def wrap(cls, data: Any) -> Any:
        return data


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8ffff3f0005fe02fea7d6a4b60000000049454e44ae426082"
)


def _tool(fn: Any) -> Any:
    return define_tool(registry=None)(fn)


def test_data_types_validate_purely() -> None:
    def order(
        customer: str,
        items: list[LineItem],
        when: date | None = None,
        colour: Colour = Colour.RED,
        where: Point | None = None,
        tree: Tree | None = None,
        mode: Literal["a", "b"] = "a",
        tags: dict[str, list[int]] | None = None,
        anything: Any = None,
        limit: Annotated[int, Field(ge=1, le=9)] = 3,
    ) -> str:
        """Order.

        Args:
            customer: Who.
            items: What.
            when: When.
            colour: Colour.
            where: Where.
            tree: A tree.
            mode: Mode.
            tags: Tags.
            anything: Anything.
            limit: Limit.
        """
        return customer

    assert _tool(order).pure_validation


@pytest.mark.parametrize(
    "annotation",
    [
        Annotated[int, AfterValidator(lambda v: v)],
        Checked,
        Hooked,
        Built,
        Whole,
        Lenient,
        Path,  # (pydantic validates paths with a function)
        list[Checked],
        dict[str, Tree | Checked],
    ],
    ids=lambda a: getattr(a, "__name__", str(a)),
)
def test_code_in_validation_is_not_pure(annotation: Any) -> None:
    def call(value: Any) -> str:
        """Call.

        Args:
            value: A value.
        """
        return "x"

    call.__annotations__["value"] = annotation
    assert not _tool(call).pure_validation


def test_a_default_factory_is_not_pure() -> None:
    def call(token: str = Field(default_factory=lambda: uuid.uuid4().hex)) -> str:
        """Call.

        Args:
            token: A token.
        """
        return token

    assert not _tool(call).pure_validation


def test_a_schema_tool_and_unknown_shapes_are_not_pure() -> None:
    async def handler(arguments: dict[str, Any], ctx: Any) -> Any:
        return arguments

    declared = declare_tool(
        "declared",
        description="A declared tool.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        handler=handler,
    )
    assert not declared.pure_validation
    assert not pure_schema({"type": "something-new", "schema": {"type": "int"}})
    assert not pure_schema({"type": "list", "items_schema": {"type": "function-plain"}})
    assert pure_schema({"type": "list", "items_schema": {"type": "int"}, "metadata": {}})


async def test_a_pure_tool_s_start_keeps_the_input_and_shows_the_validated_arguments(
    reg: ToolRegistry,
) -> None:
    seen: list[Any] = []

    @define_tool(registry=reg, kind="read")
    async def place(customer: str, items: list[LineItem], express: bool = False) -> dict[str, Any]:
        """Place an order.

        Args:
            customer: Who.
            items: What.
            express: Fast.
        """
        seen.append(items)
        items.append(LineItem(sku="gift"))  # a tool that changes its argument
        return {"n": len(items)}

    raw = {"customer": "ada", "items": [{"sku": "b", "quantity": "2"}]}
    agent, _ = make_agent(reg, [[tool_use("place", raw, id="a")], "ok"])
    events: list[Any] = []
    await agent.send("go", on_event=events.append)
    [start] = [e for e in events if isinstance(e, ToolStart)]
    assert start._arguments is None and start._tool is place  # nothing validated kept
    # the arguments the call started with: defaults filled in, coerced, models as dicts
    assert start.input == {
        "customer": "ada",
        "items": [{"sku": "b", "quantity": 2}],
        "express": False,
    }
    assert start._tool is None and start.input is start.input  # made once
    again = ToolStart.replayed("b", place, {"customer": "bo", "items": []})
    for copied in (pickle.loads(pickle.dumps(again)), copy.deepcopy(again), copy.copy(again)):
        assert copied == again and copied._tool is None  # the JSON data, not the tool
        assert copied.input == {"customer": "bo", "items": [], "express": False}
    assert [len(items) for items in seen] == [2]
    assert raw == {"customer": "ada", "items": [{"sku": "b", "quantity": "2"}]}


async def test_an_impure_tool_s_start_shows_what_the_tool_got(reg: ToolRegistry) -> None:
    got: list[str] = []

    @define_tool(registry=reg, kind="read")
    async def stamp(token: str = Field(default_factory=lambda: uuid.uuid4().hex)) -> str:
        """Stamp.

        Args:
            token: A token.
        """
        got.append(token)
        return token

    agent, _ = make_agent(reg, [[tool_use("stamp", {}, id="a")], "ok"])
    events: list[Any] = []
    await agent.send("go", on_event=events.append)
    [start] = [e for e in events if isinstance(e, ToolStart)]
    assert start._arguments is not None
    assert start.input == {"token": got[0]}


def _shape(events: list[Any]) -> list[tuple[Any, ...]]:
    """The events of a run with what a run of the same script must repeat (no durations)."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        if event.type == "tool_start":
            out.append((event.type, event.call_id, event.name, event.input))
        elif event.type == "tool_end":
            out.append(
                (event.type, event.call_id, event.name, event.is_error, event.status, event.result)
            )
        elif event.type == "done":
            out.append((event.type, event.text, event.turns))
        elif event.type == "tool_progress":
            out.append((event.type, event.call_id, event.message))
        elif event.type != "tool_blocked_loop":  # (a loaded machine may report one)
            out.append((event.type,))
    return sorted(out, key=repr)  # (parallel calls end in the order they happen to)


@pytest.mark.parametrize("parallel", [False, True], ids=["one call", "parallel calls"])
async def test_the_plain_pipeline_ends_calls_as_the_whole_one(
    reg: ToolRegistry, parallel: bool
) -> None:
    """The same script with and without a hook that does nothing (which takes the whole
    pipeline): the same events, records, results and history."""

    @define_tool(registry=reg, kind="read", timeout=0.2)
    async def work(n: int, ctx: ToolContext) -> Any:
        """Work.

        Args:
            n: How much.
        """
        ctx.progress(f"working on {n}", 0.5)
        if n == 7:  # an image alone, then with a caption
            return image_result(PNG)
        if n == 8:
            return ToolResult(
                content=(TextBlock(text="a caption"), ImageBlock(data=PNG, media_type="image/png"))
            )
        if n < 0:
            raise ValueError("negative")
        if n > 100:
            await anyio.sleep(1)
        return {"n": n, "call": ctx.tool_call_id, "pad": "x" * (3 * n)}

    calls = [
        tool_use("work", {"n": 1}, id="ok"),
        tool_use("work", {"n": 50}, id="long"),
        tool_use("work", {"n": 7}, id="image"),
        tool_use("work", {"n": 8}, id="captioned"),
        tool_use("work", {"n": "x"}, id="invalid"),
        tool_use("work", {"n": -1}, id="raises"),
        tool_use("work", {"n": 1000}, id="slow"),
        tool_use("nothing", {}, id="unknown"),
        tool_use("work", {"n": 2, "extra": True}, id="extra"),
    ]
    script: list[Any] = [[c] for c in calls] + ["done"] if not parallel else [calls, "done"]
    runs = []
    for hooks in (None, AgentHooks(pre_tool_use=[lambda call, ctx: None])):
        agent, _ = make_agent(
            reg,
            script,
            max_result_chars=100,
            create={"hooks": hooks} if hooks else None,
            max_turns=20,
        )
        events: list[Any] = []
        await agent.send("go", on_event=events.append)
        records = [
            (
                r.id,
                r.status,
                r.error_type,
                r.result,
                r.started_at is not None,
                r.ended_at is not None,
            )
            for r in agent.session.records
        ]
        runs.append((_shape(events), records, agent.messages))
    assert runs[0] == runs[1]
    statuses = {r[0]: r[1] for r in runs[0][1]}
    assert statuses == {
        "ok": "done",
        "long": "done",
        "image": "done",
        "captioned": "done",
        "invalid": "failed",
        "raises": "failed",
        "slow": "failed",
        "unknown": "failed",
        "extra": "failed",
    }
    assert any(e[0] == "tool_progress" for e in runs[0][0])
    results = {r[0]: r[3] for r in runs[0][1]}
    assert "[output truncated" in results["long"].text
    assert [b.type for b in results["image"].content] == ["image"]
    assert [b.type for b in results["captioned"].content] == ["text", "image"]
