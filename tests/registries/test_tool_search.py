"""Deferred tools and tool_search: which definitions a request carries, and what loads them."""

from __future__ import annotations

from typing import Any

import pytest

from kode import Agent, AgentError, AgentTemplate, ToolRegistry, define_tool
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolPolicy
from kode.registries.search import SearchIndex, one_line, tokenize
from kode.registries.search_dense import DENSE_ENV
from kode.registries.tool_search import TOOL_SEARCH_TOOL
from kode.tools.context import ToolContext
from kode.tools.declared import declare_tool


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(declare_tool("add", description="Add two numbers."))
    reg.register(
        declare_tool(
            "gh_create_issue",
            description="Create an issue in a GitHub repository.",
            input_schema={
                "type": "object",
                "properties": {"repo": {"type": "string", "description": "owner/name"}},
            },
        ),
        defer_loading=True,
    )
    reg.register(declare_tool("gh_delete_repo", description="Delete a repository."))
    reg.register(declare_tool("cal_add_event", description="Add an event to a calendar."))
    return reg


def _agent(reg: ToolRegistry, turns: list[Any], **template: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(turns)
    options: dict[str, Any] = {"tools": ["add", "gh_*"], **template}
    agent = Agent.create(AgentTemplate(id="t", **options), model=model, registry=reg)
    return agent, model


def test_tokenize_splits_names_stems_and_drops_stop_words() -> None:
    words = tokenize("mcp__github__createIssues for the repo")
    assert words[:4] == tokenize("mcp github create issues")  # "for the" say nothing
    assert words[-1] == tokenize("repo")[0] and len(words) == 6  # and createissues whole
    assert tokenize("github")[0] in tokenize("GitHub")  # a brand's case does not split it away
    assert tokenize("created creating creates") == tokenize("create create create")
    assert tokenize("stopped running added") == tokenize("stop run add")
    assert one_line("Read a file. Then more.\nSecond line") == "Read a file."


def test_bm25_ranks_name_matches_first_and_says_why() -> None:
    index = SearchIndex(dense=False)  # words alone: tests/registries/test_search_dense.py
    reg = _registry()
    for name in reg.names():
        index.add(name, reg.get(name), reg.meta(name))
    hits = index.search("remove a repository")
    assert hits[0].name == "gh_delete_repo"
    assert "delete (for remove) in name, description" in hits[0].why  # found through a synonym
    assert index.search("calendar event", allowed={"add"}) == []
    index.remove("cal_add_event")
    assert [h.name for h in index.search("calendar event")] == []


def test_the_first_request_carries_only_what_is_not_deferred_then_what_was_found() -> None:
    reg = _registry()
    agent, model = _agent(
        reg,
        [[tool_use("tool_search", {"query": "open a github ticket"})], "ok", "again"],
    )
    assert agent.resolution.deferred == frozenset({"gh_create_issue"})
    agent.send_sync("file a bug")
    sent = [[t.name for t in r.tools] for r in model.requests]
    assert sent[0] == ["add", "gh_delete_repo", "tool_search"]
    assert sent[1] == ["add", "gh_delete_repo", "tool_search", "gh_create_issue"]
    agent.send_sync("more")  # loaded for the session
    assert [t.name for t in model.requests[-1].tools][-1] == "gh_create_issue"


def test_deferred_per_template_registry_pattern_and_mcp_threshold() -> None:
    reg = _registry()
    agent, _ = _agent(reg, ["ok"], deferred=["cal_*"])
    assert agent.resolution.deferred == {"gh_create_issue", "cal_add_event"}  # also selected
    reg.defer(["gh_delete_repo"])
    agent, _ = _agent(reg, ["ok"])
    assert agent.resolution.deferred == {"gh_create_issue", "gh_delete_repo"}
    for i in range(3):
        reg.register(declare_tool(f"mcp__big__t{i}"), source="mcp", server="big")
    reg.defer_mcp_above = 2
    agent, _ = _agent(reg, ["ok"], tools=["add", "mcp__big__*"])
    assert agent.resolution.deferred == {"mcp__big__t0", "mcp__big__t1", "mcp__big__t2"}
    reg.defer_mcp_above = 3
    agent, _ = _agent(reg, ["ok"], tools=["add", "mcp__big__*"])
    assert agent.resolution.deferred == frozenset()
    assert "tool_search" not in [t.name for t in agent.tools]


def test_define_tool_defer_loading_reaches_the_registry() -> None:
    reg = ToolRegistry()

    @define_tool(registry=reg, defer_loading=True)
    def rare() -> str:
        """Do something rare."""
        return "x"

    assert rare.defer_loading and reg.meta("rare").defer_loading
    reg.register(declare_tool("eager"), defer_loading=False)
    assert not reg.meta("eager").defer_loading


def test_search_sees_only_what_the_policy_allows() -> None:
    reg = _registry()
    reg.defer(["gh_*"])
    model = ScriptedModel(["ok"])
    agent = Agent.create(
        AgentTemplate(id="t", tools=["add", "gh_*"]),
        model=model,
        registry=reg,
        policy=ToolPolicy(deny=["gh_delete_repo"]),
    )
    assert agent.tool_search is not None
    for query in ("delete", "delete a repository"):  # by words or by meaning: never found
        assert set(h.name for h in agent.tool_search.search(query)) <= {"gh_create_issue"}
    assert [h.name for h in agent.tool_search.search("repository")] == ["gh_create_issue"]


@pytest.mark.anyio
async def test_tool_search_answers_and_refuses_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DENSE_ENV, "0")  # words alone can find nothing (meaning finds the closest)
    reg = _registry()
    agent, _ = _agent(reg, ["ok"])
    ctx = ToolContext(tool_name="tool_search", services=agent.services)
    result = await TOOL_SEARCH_TOOL.run({"regex": "^gh_c"}, ctx)
    assert result.text.startswith("Loaded for your next turn: gh_create_issue")
    result = await TOOL_SEARCH_TOOL.run({"query": "zebra"}, ctx)
    assert result.text == "No tool matched 'zebra'. Try other words, or fewer."
    bad = await TOOL_SEARCH_TOOL.run({"regex": "("}, ctx)
    assert bad.is_error and "not a valid regular expression" in bad.text
    empty = await TOOL_SEARCH_TOOL.run({}, ctx)
    assert empty.is_error and "give query=" in empty.text
    alone = await TOOL_SEARCH_TOOL.run({"query": "x"}, ToolContext(tool_name="tool_search"))
    assert alone.is_error and "only inside an agent" in alone.text


def test_a_resumed_history_keeps_what_was_loaded() -> None:
    reg = _registry()
    agent, _ = _agent(reg, [[tool_use("tool_search", {"query": "github issue"})], "ok"])
    agent.send_sync("go")
    again, _ = _agent(reg, ["ok"])
    again.session.messages.extend(agent.session.messages)
    assert [t.name for t in again.request_tools()][-1] == "gh_create_issue"


def test_a_deferred_tool_called_without_a_search_runs_and_stays_loaded() -> None:
    reg = ToolRegistry()

    @define_tool(registry=reg, defer_loading=True)
    def rare(word: str) -> str:
        """Shout a word."""
        return word.upper()

    reg.register(declare_tool("add", description="Add two numbers."))
    agent, model = _agent(reg, [[tool_use("rare", {"word": "hi"})], "ok"], tools=["add", "rare"])
    agent.send_sync("go")
    assert agent.session.messages[2].content[0].content[0].text == "HI"
    assert [t.name for t in model.requests[1].tools] == ["add", "tool_search", "rare"]


@pytest.mark.anyio
async def test_a_resumed_session_from_a_store_keeps_what_was_loaded(tmp_path: Any) -> None:
    reg = _registry()
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    template = AgentTemplate(id="t", tools=["add", "gh_*"])
    search = tool_use("tool_search", {"query": "github issue"})
    first = Agent.create(template, model=ScriptedModel([[search], "ok"]), registry=reg, store=url)
    await first.send("go")
    await first.aclose()
    model = ScriptedModel(["again"])
    again = await Agent.resume(
        first.session_id, store=url, model=model, template=template, registry=reg
    )
    await again.send("more")
    await again.aclose()
    assert [t.name for t in model.requests[0].tools] == [
        "add",
        "gh_delete_repo",
        "tool_search",
        "gh_create_issue",
    ]


def test_a_tool_of_its_own_named_tool_search_is_refused_with_deferred_tools() -> None:
    reg = _registry()
    reg.register(declare_tool("tool_search", description="Search our tool catalogue."))
    with pytest.raises(AgentError, match="also lists a tool of that name"):
        _agent(reg, ["ok"], tools=["add", "gh_*", "tool_search"])
    agent, _ = _agent(reg, ["ok"], tools=["add", "tool_search"])  # nothing deferred: fine
    assert agent.tool_search is None
