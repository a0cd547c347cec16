"""``kode run --otel``: the run's spans printed on stderr, or sent over OTLP/HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from otlp_receiver import otlp_receiver

HERE = Path(__file__).parent


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "shouter", "tools": ["shout"]}), encoding="utf-8"
    )
    turns = [[{"type": "tool_use", "id": "c1", "name": "shout", "input": {"text": "hi"}}], "HI."]
    (tmp_path / "turns.json").write_text(json.dumps(turns), encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    model = f"scripted:{tmp_path / 'turns.json'}"
    tools = str(HERE / "traced_tools.py")
    command = [sys.executable, "-m", "kode", "run", "agent.json", "Shout hi."]
    return subprocess.run(
        [*command, "--otel", "--model", model, "-m", tools],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_kode_run_otel_prints_the_spans_on_stderr(tmp_path: Path) -> None:
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("HI.")
    decoder = json.JSONDecoder()
    spans, text, at = [], out.stderr, 0
    while (start := text.find("{", at)) != -1:
        try:
            found, at = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        if isinstance(found, dict) and "name" in found and "context" in found:
            spans.append(found)
    names = [s["name"] for s in spans]
    assert sorted(names) == ["chat scripted", "chat scripted", "execute_tool shout",
                             "invoke_agent shouter"]  # fmt: skip
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    assert all(s["resource"]["attributes"]["service.name"] == "kode-run" for s in spans)


def test_kode_run_otel_sends_the_spans_over_otlp(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        out = _run(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        assert out.returncode == 0, out.stderr
        spans = receiver.wait_for("invoke_agent shouter")
    assert sorted(s.name for s in spans) == [
        "chat scripted",
        "chat scripted",
        "execute_tool shout",
        "invoke_agent shouter",
    ]
    tool = next(s for s in spans if s.name == "execute_tool shout")
    run = next(s for s in spans if s.name == "invoke_agent shouter")
    assert tool.parent_span_id == run.span_id and tool.trace_id == run.trace_id
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert "gen_ai.client.operation.duration" in receiver.metrics
    assert "gen_ai.execute_tool.duration" in receiver.metrics
