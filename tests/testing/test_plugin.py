"""kode's pytest plugin, exercised in a real pytest run (pytester) and directly."""

from __future__ import annotations

import pytest

from kode import ToolErrorType, ToolRegistry, define_tool
from kode.testing import assert_error, assert_ok, call_tool, call_tool_sync

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def test_fixtures_in_a_real_pytest_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user_tools='''
        import pytest
        from kode import Agent, AgentTemplate, define_tool, registry
        from kode.models import tool_use
        from kode.testing import assert_error, assert_ok, call_tool_sync

        def test_define_inside_isolated(isolated_registry):
            @define_tool
            def shout(text: str) -> str:
                """Shout."""
                return text.upper()
            assert_ok(call_tool_sync("shout", {"text": "hi"}), "HI")

        def test_nothing_leaked():
            assert "shout" not in registry

        def test_context_has_a_workspace(tool_context, tmp_path):
            assert tool_context.workspace.root == tmp_path.resolve()
            assert tool_context.resolve_path("a.txt") == tmp_path.resolve() / "a.txt"

        def test_agent_with_scripted_model(isolated_registry, scripted_model):
            @define_tool
            def ping() -> str:
                """Ping."""
                return "pong"
            model = scripted_model([[tool_use("ping")], "done"])
            agent = Agent.create(AgentTemplate(id="t", tools=["ping"]), model=model)
            assert agent.send_sync("go").text == "done"

        def test_unused_turns_fail(scripted_model):
            scripted_model(["never used"])
        '''
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(["*ScriptedModel 'scripted' has 1 unused turn(s)*"])


def test_assertion_helpers_say_what_the_tool_said() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def half(n: int) -> float:
        """Half."""
        return n / 2

    ok = call_tool_sync("HALF", {"n": 3}, tools=tools)
    assert assert_ok(ok, "1.5") is ok
    bad = call_tool_sync("half", {"n": "x"}, tools=tools)
    assert_error(bad, ToolErrorType.INVALID_TOOL_PARAMS, contains="'n' should be a valid integer")
    with pytest.raises(AssertionError, match="expected a successful result, got an error"):
        assert_ok(bad)
    with pytest.raises(
        AssertionError, match="expected error type timeout, got invalid_tool_params"
    ):
        assert_error(bad, "timeout")
    with pytest.raises(AssertionError, match=r"expected an error result, got success: '1\.5'"):
        assert_error(ok)


@pytest.mark.anyio
async def test_call_tool_async() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools, aliases=["dbl"])
    async def double(n: int) -> int:
        """Double."""
        return 2 * n

    assert_ok(await call_tool(" dbl ", '{"n": 4}', tools=tools), "8")
