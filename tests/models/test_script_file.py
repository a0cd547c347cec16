"""Script files (``--model scripted:TURNS.json``): valid turns play, anything else is refused
with the place of each problem and what to write instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kode.cli import main
from kode.models import ScriptedModel, TextContent, ToolUseContent
from kode.models.scripted import ScriptError, load_script, parse_script


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def refused(tmp_path: Path, data: object) -> str:
    with pytest.raises(ScriptError) as raised:
        load_script(write(tmp_path, data))
    return str(raised.value)


def test_a_valid_script_plays_texts_and_tool_calls(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            [
                "Let me look.",
                {"name": "search", "input": {"pattern": "*.toml"}, "id": "toolu_1"},
                {"type": "tool_use", "name": "count"},
            ],
            "Found it.",
        ],
    )
    model = ScriptedModel.from_file(path)
    first, second = model.turns
    assert isinstance(first.content[0], TextContent)
    call = first.content[1]
    assert isinstance(call, ToolUseContent)
    assert (call.id, call.name, call.input) == ("toolu_1", "search", {"pattern": "*.toml"})
    other = first.content[2]
    assert isinstance(other, ToolUseContent)
    assert (other.name, other.input) == ("count", {})
    assert second.text == "Found it."


def test_a_tool_call_not_wrapped_in_a_list_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, [{"name": "add", "input": {"a": 1}}, "done"])
    assert "turn 1 (at [0]): a tool call not wrapped in a list" in message
    assert 'write [{"name": "add", "input": {"a": 1}}]' in message


def test_an_object_holding_the_turns_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, {"turns": [[{"name": "add"}], "done"]})
    assert "holds a JSON object with the key 'turns'" in message
    assert 'write [...] instead of {"turns": [...]}' in message


def test_args_instead_of_input_is_refused_not_called_without_arguments(tmp_path: Path) -> None:
    message = refused(tmp_path, [[{"name": "add", "args": {"a": 1}}], "done"])
    assert "turn 1, item 1 (at [0][0]): unknown key 'args' in a tool call; write 'input'" in message


def test_tool_instead_of_name_is_refused_without_a_key_error(tmp_path: Path) -> None:
    message = refused(tmp_path, [[{"tool": "add", "input": {"a": 1}}]])
    assert "turn 1, item 1 (at [0][0]): unknown key 'tool' in a tool call; write 'name'" in message
    assert "no 'name'" not in message  # one problem, said once
    assert "KeyError" not in message


def test_every_problem_is_listed_with_its_place(tmp_path: Path) -> None:
    message = refused(
        tmp_path,
        [
            [{"name": "add", "input": [1, 2]}, 3, [1]],
            5,
            [],
            [{"type": "text", "text": "hi"}],
            [{"name": "", "id": 7}],
            [{"nmae": "add"}],
        ],
    )
    assert "(9 problem(s))" in message
    for expected in (
        "turn 1, item 1 (at [0][0]): 'input' is a list ([1, 2]); it must be a JSON object",
        "turn 1, item 2 (at [0][1]): 3 is a number",
        "turn 1, item 3 (at [0][2]): [1] is a list",
        "turn 2 (at [1]): 5 is a number",
        "turn 3 (at [2]): an empty list",
        "turn 4, item 1 (at [3][0]): 'type' is \"text\"",
        "write a text reply as a plain string",
        "turn 5, item 1 (at [4][0]): 'name' is \"\"",
        "turn 5, item 1 (at [4][0]): 'id' is 7",
        "turn 6, item 1 (at [5][0]): unknown key 'nmae' in a tool call; did you mean 'name'?",
    ):
        assert expected in message
    assert message.endswith('"I found pyproject.toml."].')  # the format, with an example


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is not valid JSON: Expecting value at line 1, column 1"),
        ('[[{"name": "add",', "is not valid JSON"),
        ("[]", "holds an empty list"),
        ('"hello"', "holds a string; a script is a JSON list of turns"),
        ('{"name": "add", "input": {}}', "holds one tool call; the file is a list of turns"),
    ],
)
def test_files_that_are_not_a_list_of_turns(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in refused(tmp_path, text)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"cannot read scripted turns from .*nope\.json"):
        load_script(tmp_path / "nope.json")


def test_parse_script_takes_decoded_json() -> None:
    assert parse_script(["hi"]) == ["hi"]
    with pytest.raises(ScriptError, match="the script holds null"):
        parse_script(None)


def test_kode_run_refuses_a_malformed_script_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "agent.json"
    template.write_text(json.dumps({"id": "t", "tools": []}), encoding="utf-8")
    turns = write(tmp_path, [[{"name": "add", "args": {"a": 1}}], "done"])
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(template), "hi", "--model", f"scripted:{turns}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"kode: --model: {turns} does not hold valid turns (1 problem(s))")
    assert "unknown key 'args' in a tool call; write 'input'" in err
