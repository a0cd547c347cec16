"""Factories: tools that exist only in some contexts; a failing factory never breaks the others."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kode import ToolNotFoundError, ToolRegistry, define_tool, registry
from kode.registries import (
    Diagnostic,
    Exclusion,
    ToolFactoryContext,
    ToolSource,
    tool_factory,
)


def _tool(name: str, answer: str = "", **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return answer or name

    return define_tool(fn, name=name, registry=None, **options)


def _static(tools: ToolRegistry, name: str) -> None:
    tools.register(_tool(name))


def test_the_context_carries_everything_a_factory_decides_by(tmp_path: Path) -> None:
    seen: list[ToolFactoryContext] = []
    tools = ToolRegistry()

    @tool_factory(registry=tools, names=["probe"])
    def probe(ctx: ToolFactoryContext) -> Any:
        seen.append(ctx)
        return _tool("probe")

    deps = object()
    ctx = ToolFactoryContext(
        config={"region": "eu"},
        workspace_dir=tmp_path,
        agent_id="a1",
        session_id="s1",
        channel="slack",
        sandboxed=True,
        deps=deps,
    )
    assert tools.resolve(["probe"], ctx=ctx).names == ["probe"]
    assert seen == [ctx]
    assert (seen[0].config["region"], seen[0].workspace_dir, seen[0].deps) == (
        "eu",
        tmp_path,
        deps,
    )
    empty = ToolFactoryContext()
    assert (empty.config, empty.workspace_dir, empty.agent_id, empty.session_id) == (
        {},
        None,
        None,
        None,
    )
    assert (empty.channel, empty.sandboxed, empty.deps) == (None, False, None)
    assert probe(empty).name == "probe"  # the decorator returns the function unchanged


def test_tool_factory_bare_registers_in_the_global_registry(
    isolated_registry: ToolRegistry,
) -> None:
    @tool_factory
    def clock(ctx: ToolFactoryContext) -> Any:
        return _tool("clock")

    assert registry.names() == []  # no names=: known only once resolved
    assert registry.resolve().names == ["clock"]
    assert registry.resolve().metas["clock"].factory is True


def test_a_tool_that_exists_only_when_not_sandboxed() -> None:
    tools = ToolRegistry()
    _static(tools, "fs_read")

    @tool_factory(registry=tools, names=["shell"], groups=["runtime"])
    def shell_outside_sandbox(ctx: ToolFactoryContext) -> Any:
        return None if ctx.sandboxed else _tool("shell", kind="execute")

    assert tools.meta("shell").factory is True
    assert tools.meta("shell").groups == ("group:runtime",)
    free = tools.resolve(["fs_read", "shell"], ctx=ToolFactoryContext(sandboxed=False))
    assert free.names == ["fs_read", "shell"]
    assert free.metas["shell"].groups == ("group:runtime",)

    boxed = tools.resolve(["fs_read", "shell"], ctx=ToolFactoryContext(sandboxed=True))
    assert boxed.names == ["fs_read"]
    # a known name the factory did not make here is an exclusion, not a typo
    assert boxed.unmatched == []
    assert boxed.excluded == [
        Exclusion(name="shell", reason="its factory made no tool of this name in this context")
    ]
    assert tools.diagnostics == []
    with pytest.raises(ToolNotFoundError, match="No tool named 'shell' is registered"):
        tools.create("shell", ToolFactoryContext(sandboxed=True))
    assert tools.create("shell", ToolFactoryContext()).kind.value == "execute"


def test_a_tool_that_exists_only_on_one_channel() -> None:
    tools = ToolRegistry()

    @tool_factory(registry=tools, names=["slack_react"])
    def react(ctx: ToolFactoryContext) -> Any:
        return _tool("slack_react") if ctx.channel == "slack" else None

    assert tools.resolve(ctx=ToolFactoryContext(channel="slack")).names == ["slack_react"]
    assert tools.resolve(ctx=ToolFactoryContext(channel="cli")).names == []
    assert tools.resolve(["group:x"], ctx=ToolFactoryContext(channel="cli")).excluded == []


def test_a_factory_returning_a_list_or_none() -> None:
    tools = ToolRegistry()
    tools.register_factory(
        lambda ctx: [_tool("one"), _tool("two")] if ctx.agent_id else None, names=["one", "two"]
    )
    assert tools.resolve(ctx=ToolFactoryContext(agent_id="a")).names == ["one", "two"]
    assert tools.resolve().names == []
    assert tools.create("two", ToolFactoryContext(agent_id="a")).name == "two"
    # a tuple or a generator is a list too
    tools.register_factory(lambda ctx: (t for t in [_tool("three")]))
    assert tools.resolve(ctx=ToolFactoryContext(agent_id="a")).names == ["one", "three", "two"]


def test_a_factory_that_raises_is_an_error_diagnostic_and_the_rest_resolve(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    _static(tools, "fs_read")

    def broken(ctx: ToolFactoryContext) -> Any:
        raise RuntimeError("no credentials")

    tools.register_factory(broken, names=["cloud"])
    tools.register_factory(lambda ctx: _tool("later"), names=["later"])
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        res = tools.resolve(["fs_read", "cloud", "later"])
    assert res.names == ["fs_read", "later"]
    label = f"{__name__}.test_a_factory_that_raises_is_an_error_diagnostic_and_the_rest_resolve"
    message = (
        f"tool factory {label}.<locals>.broken raised RuntimeError: no credentials; "
        "its tools were skipped"
    )
    expected = Diagnostic(level="error", source=ToolSource.USER, plugin_id=None, message=message)
    assert res.diagnostics == [expected]
    assert tools.diagnostics == [expected]
    assert res.excluded == [
        Exclusion(name="cloud", reason="its factory failed (see the diagnostics)")
    ]
    assert res.unmatched == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, f"error: {message}")
    ]
    assert "! error: tool factory" in res.explain()
    # an explicit create() lets the factory's exception through
    with pytest.raises(RuntimeError, match="no credentials"):
        tools.create("cloud")


@pytest.mark.parametrize(
    ("garbage", "described"),
    [
        (42, "int, not a Tool, a list of tools or None"),
        ("fs_read", "str, not a Tool, a list of tools or None"),
        ({"name": "x"}, "dict, not a Tool, a list of tools or None"),
        ([None], "a list containing NoneType, not only tools"),
        ("LIST", "a list containing int, str, not only tools"),
    ],
)
def test_a_factory_returning_garbage_is_a_diagnostic(garbage: Any, described: str) -> None:
    tools = ToolRegistry()
    _static(tools, "fs_read")
    value = [_tool("good"), 3, "x"] if garbage == "LIST" else garbage

    def sloppy(ctx: ToolFactoryContext) -> Any:
        return value

    tools.register_factory(sloppy, plugin_id="sloppy-kit")
    res = tools.resolve()
    assert res.names == ["fs_read"]  # not even the good tool of the bad list
    assert res.diagnostics == [
        Diagnostic(
            level="error",
            source=ToolSource.PLUGIN,
            plugin_id="sloppy-kit",
            message=f"tool factory sloppy-kit returned {described}; its tools were skipped",
        )
    ]


def test_create_with_garbage_raises_type_error_naming_the_tool() -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: [1], names=["bad"])
    with pytest.raises(
        TypeError, match=r"^the factory of tool 'bad' returned a list containing int"
    ):
        tools.create("bad")


def test_register_factory_refuses_what_cannot_work() -> None:
    tools = ToolRegistry()
    with pytest.raises(TypeError, match=r"^a tool factory must be callable, got int$"):
        tools.register_factory(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="names must be a list of tool names, got the string 'a'"):
        tools.register_factory(lambda ctx: None, names="a")
    assert tools.names() == [] and tools.resolve().names == []


def test_two_lambdas_in_one_scope_are_two_factories() -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: _tool("a"), names=["a"])
    tools.register_factory(lambda ctx: _tool("b"), names=["b"])
    assert tools.resolve().names == ["a", "b"]


def test_re_running_a_factory_definition_replaces_it() -> None:
    tools = ToolRegistry()
    for answer in ("old", "new"):  # the same code run twice, as a notebook cell re-run

        def make(ctx: ToolFactoryContext, answer: str = answer) -> Any:
            return _tool("mood", answer)

        tools.register_factory(make, names=["mood"])
    res = tools.resolve()
    assert res.names == ["mood"]
    assert res.tools[0].run_sync().text == "new"
    assert res.diagnostics == []


def test_a_factory_tool_never_overrides_a_core_tool() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec", "core"), source="core")
    tools.register_factory(lambda ctx: _tool("exec", "evil"), names=["exec"], plugin_id="evil")
    tools.register_factory(lambda ctx: _tool("exec", "sneaky"), plugin_id="sneaky")
    res = tools.resolve()
    assert res.names == ["exec"]
    assert res.metas["exec"].source is ToolSource.CORE
    assert res.tools[0].run_sync().text == "core"
    assert [(d.plugin_id, d.message) for d in tools.diagnostics] == [
        (
            "evil",
            "plugin tool 'exec' skipped: the name is taken by a core tool "
            "(core tools win over plugin tools)",
        ),
        ("evil", "tool 'exec' from factory evil skipped: the name is taken by a core tool"),
        ("sneaky", "tool 'exec' from factory sneaky skipped: the name is taken by a core tool"),
    ]


def test_an_undeclared_factory_tool_cannot_take_a_declared_name() -> None:
    tools = ToolRegistry()

    def thief(ctx: ToolFactoryContext) -> Any:
        return [_tool("notes", "thief"), _tool("extra")]

    tools.register_factory(thief)  # runs first, but does not own the name
    tools.register_factory(lambda ctx: _tool("notes", "owner"), names=["notes"])
    res = tools.resolve()
    assert res.names == ["extra", "notes"]
    assert res.tools[1].run_sync().text == "owner"
    assert [d.message for d in res.diagnostics] == [
        f"tool 'notes' from factory {__name__}.test_an_undeclared_factory_tool_cannot_take_a_"
        "declared_name.<locals>.thief skipped: the name belongs to another factory"
    ]


def test_unregistering_a_factory_name_removes_its_tool() -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: [_tool("x"), _tool("y")], names=["x", "y"])
    tools.unregister("x")
    assert tools.names() == ["y"]
    assert tools.resolve().names == ["y"]
    tools.unregister("y")
    assert tools.resolve().names == []


def test_optional_factory_tools_need_naming() -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: _tool("deploy"), names=["deploy"], optional=True)
    assert tools.meta("deploy").optional is True
    assert tools.resolve().names == []
    assert tools.resolve(["deploy"]).names == ["deploy"]


def test_a_factory_failing_on_every_resolution_is_one_diagnostic_but_logged_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: 1 / 0, plugin_id="div")
    with caplog.at_level(logging.ERROR, logger="kode.registry"):
        for _ in range(3):
            assert len(tools.resolve().diagnostics) == 1
    assert len(tools.diagnostics) == 1
    assert len(caplog.records) == 3
    tools.MAX_DIAGNOSTICS = 2
    for i in range(5):
        tools.report("info", f"note {i}")
    assert [d.message for d in tools.diagnostics] == ["note 3", "note 4"]


def test_closures_made_in_a_loop_are_all_kept_and_a_re_run_with_more_names_replaces() -> None:
    tools = ToolRegistry()

    def make(name: str) -> Any:
        def factory(ctx: ToolFactoryContext) -> Any:
            return _tool(name)

        return factory

    for name in ("a", "b", "c"):
        tools.register_factory(make(name), names=[name])
    assert tools.resolve().names == ["a", "b", "c"]

    for names in (["x"], ["x", "y"]):  # a cell re-run after adding a tool to it

        def cell(ctx: ToolFactoryContext, names: list[str] = names) -> Any:
            return [_tool(n) for n in names]

        tools.register_factory(cell, names=names)
    res = tools.resolve()
    assert res.names == ["a", "b", "c", "x", "y"]
    assert res.diagnostics == []
