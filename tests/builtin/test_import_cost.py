"""Importing kode.builtin loads no module a tool needs only when it runs.

Import time is not asserted on the clock (bench/overhead.py measures it); what keeps it low is
checked here: the heavy and optional modules are imported on first use, in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys

# Modules that cost import time and that a built-in tool needs only when it runs: the shell
# parser (bashlex builds its parser tables on import), the web extras, SQLite, and asyncio
# (loaded by the event loop that runs a tool, not by defining one).
CALL_TIME_ONLY = (
    "bashlex",
    "httpx",
    "markdownify",
    "bs4",
    "lxml",
    "sqlite3",
    "asyncio",
    "ssl",
)


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip()


def test_importing_kode_builtin_loads_no_call_time_module() -> None:
    code = (
        "import sys, json, kode.builtin\n"
        f"print(json.dumps([m for m in {CALL_TIME_ONLY!r} if m in sys.modules]))\n"
    )
    assert json.loads(_run(code)) == []


def test_the_tools_are_registered_without_them() -> None:
    code = (
        "import sys, json, kode.builtin\n"
        "from kode import registry\n"
        "names = sorted(registry.names())\n"
        f"print(json.dumps([names, [m for m in {CALL_TIME_ONLY!r} if m in sys.modules]]))\n"
    )
    names, loaded = json.loads(_run(code))
    assert {"fs_read", "fs_edit", "bash_run", "web_fetch", "todo_write"} <= set(names)
    assert loaded == []


def test_the_shell_parser_is_loaded_on_the_first_line_read() -> None:
    # A quoted word is vouched for only when bashlex agrees with the strict lexer: the lazy
    # import must not leave the second parser out.
    code = (
        "import sys, json\n"
        "from kode.builtin._shared import _shell_parse\n"
        "before = 'bashlex' in sys.modules\n"
        "parsed = _shell_parse.parse_shell(\"grep 'a b' notes.txt\")\n"
        "print(json.dumps([before, 'bashlex' in sys.modules, parsed.problem,\n"
        "                  _shell_parse.BASHLEX is sys.modules.get('bashlex')]))\n"
    )
    before, after, problem, same = json.loads(_run(code))
    assert (before, after, problem, same) == (False, True, None, True)


def test_the_tools_models_are_made_on_first_use() -> None:
    # Defining the built-in tools makes no pydantic model, validator or JSON Schema, so
    # pydantic's plugin scan (and importlib.metadata, which it and kode's plugin loader use)
    # waits for the first call too; the first call and the first schema read make them.
    code = (
        "import sys, json, kode.builtin\n"
        "from kode import registry\n"
        "tools = [e.tool for e in registry.entries() if e.meta.source == 'core' and e.tool]\n"
        "built = [t.name for t in tools if t.spec.model_builder.built]\n"
        "loaded = [m for m in ('importlib.metadata', 'pydantic.plugin._loader')\n"
        "          if m in sys.modules]\n"
        "todo = registry.get('todo_write')\n"
        "prepared = todo.prepare({'todos': [{'id': 'a', 'title': 'plan'}]})\n"
        "print(json.dumps([len(tools), built, loaded, todo.spec.model_builder.built,\n"
        "                  prepared.arguments['todos'][0].title,\n"
        "                  registry.get('fs_read').input_schema['required']]))\n"
    )
    count, built, loaded, todo_built, title, required = json.loads(_run(code))
    assert count >= 15
    assert built == []
    assert loaded == []
    assert (todo_built, title, required) == (True, "plan", ["path"])
