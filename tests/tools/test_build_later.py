"""Tools defined under `building_later` (kode's built-ins) make their pydantic model on first use.

Every check of the function still runs at definition; the model, its validator and the JSON
Schema are made once, on the first call or the first read of `input_schema`, however many
threads ask at once, and come out the same as when made at definition.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

import kode.tools.schema as schema_module
from kode.registries import ToolRegistry
from kode.tools import Tool, ToolDefinitionError, define_tool
from kode.tools.define import building_later
from kode.tools.dialects import openai_strict_limit


class Order(BaseModel):
    title: str
    quantity: Annotated[int, Field(ge=1)] = 1


def place(order: Order, note: str = "", *, express: bool = False) -> dict[str, Any]:
    """Place an order.

    Args:
        order: What to order.
        note: A note for the shop.
        express: Ship it today.
    """
    return {"title": order.title, "quantity": order.quantity, "note": note, "express": express}


def _later(fn: Any, **options: Any) -> Tool[..., Any]:
    with building_later():
        return Tool.from_function(fn, **options)


def _count_models(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    real = schema_module.create_model

    def counting(name: str, **kwargs: Any) -> Any:
        made.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(schema_module, "create_model", counting)
    return made


def test_the_model_waits_for_the_first_use_and_comes_out_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = _count_models(monkeypatch)
    later = _later(place)
    assert made == []
    assert later.spec is not None and not later.spec.model_builder.built
    assert not later.schema_made
    now = Tool.from_function(place)
    assert made == ["place_arguments"]
    assert later.input_schema == now.input_schema
    assert later.schema_made
    assert made == ["place_arguments", "place_arguments"]
    assert later.schema("openai") == now.schema("openai")
    raw = '{"order": {"title": "dune", "quantity": 2}, "express": true}'
    assert anyio.run(later.run, raw) == anyio.run(now.run, raw)
    assert anyio.run(later.run, {"order": {"title": ""}, "bogus": 1}).is_error
    assert made == ["place_arguments", "place_arguments"]  # built once, kept


def test_the_first_call_builds_the_model_too(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _count_models(monkeypatch)
    later = _later(place)
    result = anyio.run(later.run, {"order": {"title": "dune"}})
    assert not result.is_error
    assert made == ["place_arguments"]
    assert later.input_schema["required"] == ["order"]
    assert made == ["place_arguments"]


def test_concurrent_first_calls_build_the_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _count_models(monkeypatch)
    later = _later(place)
    start = threading.Barrier(8)
    outcomes: list[Any] = []

    def first_call() -> None:
        start.wait()
        outcomes.append(later.prepare({"order": {"title": "dune"}, "note": "hi"}))

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == ["place_arguments"]
    assert len(outcomes) == 8
    assert all(o.arguments["note"] == "hi" for o in outcomes)


def test_concurrent_first_reads_of_the_schema_agree() -> None:
    later = _later(place)
    start = threading.Barrier(8)
    schemas: list[dict[str, Any]] = []

    def read() -> None:
        start.wait()
        schemas.append(later.input_schema)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(s is schemas[0] for s in schemas)


def test_a_bad_signature_still_fails_at_definition() -> None:
    def untyped(path, *names: str) -> str:  # type: ignore[no-untyped-def]
        """Read."""
        return ""

    with pytest.raises(ToolDefinitionError) as info, building_later():
        define_tool(untyped, registry=None)
    assert "parameter 'path' has no type annotation" in str(info.value)
    assert "parameter '*names' cannot be shown to a model" in str(info.value)

    def unresolved(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
        """Read."""
        return ""

    with pytest.raises(ToolDefinitionError, match="annotations cannot be resolved"):
        with building_later():
            define_tool(unresolved, registry=None)


def test_outside_building_later_a_type_pydantic_cannot_validate_fails_at_definition() -> None:
    def takes(lock: type(threading.Lock())) -> str:  # type: ignore[valid-type]
        """Use a lock."""
        return ""

    with pytest.raises(ToolDefinitionError, match="its parameters cannot be validated"):
        define_tool(takes, registry=None)


def test_building_later_ends_with_its_block() -> None:
    with building_later():
        pass
    now = Tool.from_function(place)
    assert now.spec is not None and now.spec.model_builder.built
    assert now.schema_made


def test_registering_a_tool_built_later_does_not_build_it(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _count_models(monkeypatch)
    registry = ToolRegistry()
    registry.register(_later(place))
    assert made == []
    assert registry.get("place").input_schema["required"] == ["order"]


def test_every_built_in_tool_builds_and_has_no_openai_strict_limit() -> None:
    # The registry skips its strict-mode check for tools built later: none of the built-ins
    # needs the warning it would give, and each one's model and schema can be made.
    import kode.builtin  # noqa: F401
    from kode.registries import registry

    built_in = [e.tool for e in registry.entries() if e.meta.source == "core" and e.tool]
    assert len(built_in) >= 15
    for tool in built_in:
        assert tool.spec is not None
        assert tool.spec.args_model.__pydantic_complete__, tool.name
        assert tool.input_schema["type"] == "object", tool.name
        assert openai_strict_limit(tool.input_schema) is None, tool.name
