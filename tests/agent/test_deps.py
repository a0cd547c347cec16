"""The deps a template's tools require are checked by Agent.create, not at the first call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

import pytest
from support import make_agent

from kode import ToolContext, define_tool
from kode.agent import AgentError
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio


@dataclass
class Settings:
    greeting: str


@dataclass
class LoudSettings(Settings):
    volume: int = 11


class HasGreeting(Protocol):
    greeting: str


class SettingsDict(TypedDict):
    greeting: str


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def greet(name: str, ctx: ToolContext[Settings]) -> str:
        """Greet someone."""
        return f"{ctx.deps.greeting} {name}"

    @define_tool(registry=reg, kind="read")
    def maybe_greet(name: str, ctx: ToolContext[Settings | None]) -> str:
        """Greet someone, with or without settings."""
        return f"{ctx.deps.greeting if ctx.deps else 'hi'} {name}"

    @define_tool(registry=reg, kind="read")
    def by_protocol(ctx: ToolContext[HasGreeting]) -> str:
        """Deps typed by a protocol that cannot be checked at run time."""
        return ctx.deps.greeting

    @define_tool(registry=reg, kind="read")
    def by_typed_dict(ctx: ToolContext[SettingsDict]) -> str:
        """Deps typed by a TypedDict."""
        return ctx.deps["greeting"]

    @define_tool(registry=reg, kind="read")
    def by_generic(ctx: ToolContext[list[str]]) -> str:
        """Deps typed by a generic alias: checked as a list."""
        return ",".join(ctx.deps)

    @define_tool(registry=reg, kind="read")
    def by_union(ctx: ToolContext[Settings | list[str]]) -> str:
        """Deps typed by a union."""
        return "ok"

    return reg


def create(reg: ToolRegistry, tools: list[str], deps: Any = None) -> Any:
    return make_agent(reg, ["ok"], tools=tools, create={"deps": deps})[0]


def test_missing_deps_are_refused_at_create_naming_tool_and_type(tools: ToolRegistry) -> None:
    with pytest.raises(AgentError) as caught:
        create(tools, ["greet", "maybe_greet"])
    assert str(caught.value) == (
        "agent template 't': tool 'greet' needs deps of type Settings (its context is "
        "ToolContext[Settings]), and none were given. Pass the deps its tools need with "
        "Agent.create(deps=...) (kode run: --deps module:factory)."
    )


def test_deps_of_another_type_are_refused_at_create(tools: ToolRegistry) -> None:
    with pytest.raises(AgentError) as caught:
        create(tools, ["greet"], deps={"greeting": "hello"})
    message = str(caught.value)
    assert "tool 'greet' needs deps of type Settings" in message
    assert "but the deps given are of type dict ({'greeting': 'hello'})" in message


def test_every_tool_with_a_problem_is_named(tools: ToolRegistry) -> None:
    with pytest.raises(AgentError) as caught:
        create(tools, ["greet", "by_generic", "by_union"], deps=42)
    message = str(caught.value)
    assert "tool 'greet' needs deps of type Settings" in message
    assert "tool 'by_generic' needs deps of type list[str]" in message
    assert "tool 'by_union' needs deps of type Settings | list[str] (its context" in message
    assert message.count("but the deps given are of type int (42)") == 3


@pytest.mark.parametrize(
    ("tools_listed", "deps"),
    [
        (["greet"], Settings(greeting="hello")),
        (["greet"], LoudSettings(greeting="HELLO")),  # a subclass is a Settings
        (["maybe_greet"], None),  # optional deps
        (["by_protocol"], {"anything": "goes"}),  # a protocol cannot be checked: trusted
        (["by_typed_dict"], {"greeting": "hello"}),
        (["by_generic"], ["a", "b"]),
        (["by_union"], ["a"]),
        (["by_union"], Settings(greeting="hello")),
    ],
)
def test_deps_that_fit_are_accepted(
    tools: ToolRegistry, tools_listed: list[str], deps: Any
) -> None:
    agent = create(tools, tools_listed, deps=deps)
    assert agent.deps is deps


async def test_an_agent_made_with_the_right_deps_runs_the_tool(tools: ToolRegistry) -> None:
    from kode.models import tool_use

    agent, _ = make_agent(
        tools,
        [[tool_use("greet", {"name": "Ada"})], "done"],
        tools=["greet"],
        create={"deps": Settings(greeting="bonjour")},
    )
    await agent.send("go")
    assert agent.messages[2].content[0].text == "bonjour Ada"  # type: ignore[union-attr]
