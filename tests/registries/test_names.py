"""Names: normalised lookups, tool aliases, alias collisions, suggestions, parameter aliases."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import pytest
from pydantic import AliasChoices, Field

from kode import ToolDefinitionError, ToolNotFoundError, ToolRegistry, define_tool
from kode.registries import Diagnostic, ToolSource, normalize_name


def _tool(name: str, **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return name

    return define_tool(fn, name=name, registry=None, **options)


def test_normalize_name_trims_and_lowercases() -> None:
    assert normalize_name(" Fs_Read \n") == "fs_read"
    assert normalize_name("EXEC") == "exec"


def test_a_model_sending_a_sloppy_name_reaches_the_tool() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def fs_read(path: str) -> str:
        """Read a file."""
        return f"read {path}"

    for sloppy in (" Fs_Read ", "FS_READ", "fs_read\t"):
        assert sloppy in tools
        assert tools.get(sloppy) is fs_read
        assert tools.meta(sloppy).name == "fs_read"
    assert tools.names() == ["fs_read"]  # the tool keeps its own spelling


def test_names_differing_only_in_case_are_one_name() -> None:
    tools = ToolRegistry("app")
    define_tool(lambda: "", name="Report", registry=tools, description="Report.")
    with pytest.raises(ToolDefinitionError, match="the tool name 'report' is already registered"):
        define_tool(lambda: "", name="report", registry=tools, description="Other.")


def test_aliases_declared_on_the_tool() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools, aliases=["bash", " Shell "])
    def exec_command(command: str) -> str:
        """Run a command."""
        return command

    assert tools.get("BASH") is exec_command and tools.get("shell") is exec_command
    assert exec_command.aliases == ("bash", "shell")
    assert tools.aliases() == {"bash": "exec_command", "shell": "exec_command"}
    assert tools.meta("bash").aliases == ("bash", "shell")
    assert tools.names() == ["exec_command"]
    # aliases select in templates too
    assert tools.resolve(["bash"]).names == ["exec_command"]
    assert tools.resolve(["sh*"]).names == ["exec_command"]


def test_bad_aliases_are_definition_errors() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        define_tool(lambda: "", name="t", registry=None, description="T.", aliases="bash")
    assert info.value.problems == ["aliases must be a list of names, got the string 'bash'"]
    with pytest.raises(ToolDefinitionError) as info:
        define_tool(lambda: "", name="t", registry=None, description="T.", aliases=["no spaces"])
    assert info.value.problems == [
        "aliases 'no spaces' are invalid: use 1-64 letters, digits, '_' or '-'"
    ]


def test_add_alias_after_the_fact() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec"))
    tools.add_alias(" Bash ", "EXEC")
    assert tools.get("bash").name == "exec"
    assert tools.aliases() == {"bash": "exec"}
    tools.add_alias("bash", "exec")  # the same alias again is fine
    with pytest.raises(ToolNotFoundError, match="No tool named 'nope' is registered"):
        tools.add_alias("x", "nope")


def test_add_alias_collisions_are_refused() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec"))
    tools.register(_tool("fs_read"))
    tools.add_alias("run", "exec")
    with pytest.raises(ValueError, match=r"^'fs_read' already names a tool or an alias"):
        tools.add_alias("fs_read", "exec")
    with pytest.raises(ValueError, match=r"^'RUN' already names a tool or an alias"):
        tools.add_alias("RUN", "fs_read")
    assert tools.aliases() == {"run": "exec"}


def test_a_declared_alias_that_collides_is_a_diagnostic(caplog: pytest.LogCaptureFixture) -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec", aliases=["run"]))
    tools.register(_tool("grep"))
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        tools.register(_tool("launch", aliases=["run", "grep", "start"]), plugin_id="ops")
    assert tools.aliases() == {"run": "exec", "start": "launch"}
    expected = [
        Diagnostic(
            level="warning",
            source=ToolSource.PLUGIN,
            plugin_id="ops",
            message="alias 'run' of tool 'launch' skipped: it already names 'exec'",
        ),
        Diagnostic(
            level="warning",
            source=ToolSource.PLUGIN,
            plugin_id="ops",
            message="alias 'grep' of tool 'launch' skipped: it already names 'grep'",
        ),
    ]
    assert tools.diagnostics == expected
    assert caplog.messages == [str(d) for d in expected]


def test_a_tool_named_like_an_existing_alias() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec", aliases=["bash"]))
    with pytest.raises(ToolDefinitionError, match="already registered in 'default' by an alias"):
        tools.register(_tool("bash"))
    tools.register(_tool("bash"), source="mcp", server="shells")  # other sources: skipped
    assert tools.get("bash").name == "exec"
    assert tools.diagnostics[-1].message == (
        "mcp tool 'bash' skipped: the name is taken by an alias of 'exec' "
        "(the tool registered first is kept)"
    )
    real_bash = _tool("bash")
    tools.register(real_bash, replace=True)  # replace takes the name back from the alias
    assert tools.get("bash") is real_bash
    assert tools.aliases() == {}


def test_unregister_drops_the_aliases() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec", aliases=["bash"]))
    tools.unregister("bash")  # by alias
    assert "exec" not in tools and "bash" not in tools and tools.aliases() == {}


@pytest.mark.parametrize(
    ("typo", "suggestions"),
    [
        ("fs_raed", ["fs_read"]),
        ("FS-READ", ["fs_read"]),
        ("bsh", ["bash"]),
        ("zzzz", []),
    ],
)
def test_unknown_names_get_suggestions(typo: str, suggestions: list[str]) -> None:
    tools = ToolRegistry()
    tools.register(_tool("fs_read"))
    tools.register(_tool("fs_write"))
    tools.register(_tool("exec", aliases=["bash"]))
    assert tools.suggest(typo)[: len(suggestions)] == suggestions
    with pytest.raises(ToolNotFoundError) as info:
        tools.get(typo)
    assert info.value.suggestions[: len(suggestions)] == suggestions
    assert info.value.available == ["exec", "fs_read", "fs_write"]
    if not suggestions:
        assert str(info.value) == f"No tool named {typo!r} is registered."


def test_parameter_aliases_are_declared_with_pydantic_alias_choices() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def fs_read(
        path: Annotated[str, Field(validation_alias=AliasChoices("path", "file_path"))],
    ) -> str:
        """Read a file."""
        return f"read {path}"

    assert list(fs_read.input_schema["properties"]) == ["path"]  # the model sees one name
    assert fs_read.run_sync({"file_path": "a.txt"}).text == "read a.txt"
    assert fs_read.run_sync({"path": "b.txt"}).text == "read b.txt"


def test_parameter_aliases_are_declared_with_param_aliases() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools, param_aliases={"file_path": "path"})
    def fs_read(path: str) -> str:
        """Read a file."""
        return f"read {path}"

    assert list(fs_read.input_schema["properties"]) == ["path"]
    assert tools.get("FS_READ").run_sync({"file_path": "a.txt"}).text == "read a.txt"
    assert tools.get("fs_read").run_sync({"path": "b.txt"}).text == "read b.txt"
