"""examples/notebook.ipynb, executed by nbclient in a real ipykernel."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the test extras")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the test extras")

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebook.ipynb"


def _text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_notebook_runs_in_a_real_kernel(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.kernel_manager_class  # noqa: B018 - resolved before start
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    # defined, then re-defined quietly by running the same cell again
    assert _text(code[0]).strip() == "['lookup_city']"
    assert _text(code[1]).strip() == "['lookup_city']"
    # the tool's markdown repr
    rich = code[2]["outputs"][0]["data"]
    assert "text/markdown" in rich
    assert "| `units` | string | no | 'metric' |" in rich["text/markdown"]
    assert "Look up a city's population and area." in rich["text/markdown"]
    lines = _text(code[3]).splitlines()
    assert lines[0] == "{'city': 'Oslo', 'population': 709000, 'area': 454.0, 'units': 'metric'}"
    assert lines[1] == '{"city":"Lyon","population":522000,"area":18.5,"units":"imperial"}'
    assert lines[2].startswith(
        "Invalid arguments for tool 'lookup_city': 'units' should match pattern"
    )
    agent_lines = _text(code[4]).splitlines()
    assert agent_lines == [
        "Oslo has about 709,000 people on 454 km².",
        "['tool_start', 'tool_end']",
    ]
    # a result and an agent, shown by the notebook
    result = code[5]["outputs"][0]["data"]
    assert result["text/markdown"].startswith("**✓ result**\n\n```text\n{")
    assert result["text/plain"].startswith('ToolResult(text=\'{"city":"Oslo"')
    shown = code[6]["outputs"][0]["data"]
    assert "| tools | `lookup_city` |" in shown["text/markdown"]
    assert "| last reply | Oslo has about 709,000 people on 454 km². |" in shown["text/markdown"]
    assert shown["text/plain"].startswith("<Agent agent_")
    assert shown["text/plain"].endswith("'geo' ScriptedModel('scripted') idle: 1 tool, 4 messages>")
    assert sys.executable  # the kernel runs the same interpreter's ipykernel
