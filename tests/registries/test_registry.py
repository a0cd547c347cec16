"""The registry: define-is-register, lookups, re-definition rules, thread safety."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kode import ToolDefinitionError, ToolNotFoundError, ToolRegistry, define_tool, registry
from kode.registries import ToolFactoryContext
from kode.testing import call_tool


def test_defining_registers_in_the_global_registry(isolated_registry: ToolRegistry) -> None:
    @define_tool
    def lookup_user(user_id: int) -> str:
        """Find a user."""
        return f"user {user_id}"

    assert "lookup_user" in registry
    assert registry.get("lookup_user") is lookup_user
    assert registry.create("lookup_user", None) is lookup_user
    assert registry.names() == ["lookup_user"]
    assert list(registry) == ["lookup_user"] and len(registry) == 1


def test_isolated_registry_restores_what_was_there(isolated_registry: ToolRegistry) -> None:
    assert len(registry) == 0


def test_no_leak_from_the_previous_test() -> None:
    assert "lookup_user" not in registry


def test_registry_none_registers_nowhere(isolated_registry: ToolRegistry) -> None:
    @define_tool(registry=None)
    def hidden() -> str:
        """Hidden."""
        return ""

    assert "hidden" not in registry


def test_lookup_normalises_names() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def fs_read(path: str) -> str:
        """Read."""
        return path

    assert " Fs_Read " in tools
    assert tools.get("FS_READ") is fs_read
    assert 3 not in tools


def test_unknown_name_suggests_close_matches() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def search_files(pattern: str) -> str:
        """Search."""
        return pattern

    with pytest.raises(ToolNotFoundError) as info:
        tools.get("search_file")
    assert (
        str(info.value) == "No tool named 'search_file' is registered. Did you mean 'search_files'?"
    )
    assert info.value.suggestions == ["search_files"]
    assert isinstance(info.value, KeyError)
    with pytest.raises(ToolNotFoundError, match=r"No tool named 'zzz' is registered\.$"):
        tools.create("zzz")


def test_unregister() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def gone() -> str:
        """Gone."""
        return ""

    tools.unregister("GONE")
    assert "gone" not in tools
    with pytest.raises(ToolNotFoundError):
        tools.unregister("gone")


def _define_ping(tools: ToolRegistry, answer: str) -> Any:
    @define_tool(registry=tools)
    def ping() -> str:
        """Ping."""
        return answer

    return ping


def test_re_running_the_same_definition_replaces_quietly() -> None:
    tools = ToolRegistry()
    first = _define_ping(tools, "one")
    second = _define_ping(tools, "two")  # same module and qualname: a notebook cell re-run
    assert first is not second
    assert tools.get("ping") is second
    assert tools.get("ping").run_sync().text == "two"


def test_a_different_tool_with_a_taken_name_is_refused() -> None:
    tools = ToolRegistry("mine")
    _define_ping(tools, "one")

    def other() -> str:
        """Other."""
        return "other"

    with pytest.raises(ToolDefinitionError) as info:
        define_tool(other, name="ping", registry=tools)
    message = str(info.value)
    assert "the tool name 'ping' is already registered in 'mine' by" in message
    assert "_define_ping.<locals>.ping" in message
    assert "pass replace=True" in message
    assert tools.get("ping").run_sync().text == "one"  # nothing lost

    replaced = define_tool(other, name="PING", registry=tools, replace=True)
    assert tools.get("ping") is replaced


def test_factories_make_tools_for_a_context() -> None:
    tools = ToolRegistry()

    def factory(ctx: Any) -> Any:
        @define_tool(registry=None, name="whoami")
        def whoami() -> str:
            """Who am I."""
            return str(ctx)

        return whoami

    tools.register_factory(factory, names=["whoami"])
    made = tools.create("whoami", ToolFactoryContext(agent_id="agent-7"))
    assert "agent_id='agent-7'" in made.run_sync().text
    assert "agent_id=None" in tools.get("whoami").run_sync().text
    assert tools.meta("whoami").factory


def test_a_factory_returning_garbage_is_a_clear_error() -> None:
    tools = ToolRegistry()
    tools.register_factory(lambda ctx: 42, names=["bad"])
    with pytest.raises(TypeError, match="the factory of tool 'bad' returned int, not a Tool"):
        tools.create("bad")


def test_registry_is_thread_safe() -> None:
    tools = ToolRegistry()
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        try:
            barrier.wait()
            for j in range(25):

                def fn(x: int) -> int:
                    """F."""
                    return x

                define_tool(fn, name=f"t{index}_{j}", registry=tools)
                assert f"t{index}_{j}" in tools
                tools.names()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(tools) == 200


@pytest.mark.anyio
async def test_call_tool_calls_as_a_model_would(isolated_registry: ToolRegistry) -> None:
    @define_tool
    def double(n: int) -> int:
        """Double."""
        return 2 * n

    result = await call_tool("double", {"n": "21"})
    assert result.text == "42"
    assert (await call_tool(" Double ", '{"n": 1}')).text == "2"
