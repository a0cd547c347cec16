"""Typed final output (``AgentTemplate(output_type=...)``): asked for, then validated."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator
from support import assert_history_valid, make_agent, of_type
from typing_extensions import TypedDict  # typing's TypedDict: pydantic needs 3.12

from kode import Agent, AgentError, AgentTemplate, define_tool
from kode.agent.events import Done, ToolEnd
from kode.models import (
    FunctionModel,
    Message,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultContent,
    tool_use,
)
from kode.registries import ToolRegistry

REG = ToolRegistry(name="output")


@define_tool(registry=REG, kind="read")
def population(city: str) -> int:
    """How many people live in a city.

    Args:
        city: The city.
    """
    return {"Paris": 2_100_000, "Lyon": 520_000}.get(city, 0)


class City(BaseModel):
    """A city and how many live there."""

    name: str
    population: int = Field(description="People living there.")

    @field_validator("name")
    @classmethod
    def _capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a city's name starts with a capital letter")
        return value


@dataclass
class Point:
    x: float
    y: float
    label: str = "origin"
    tags: list[str] = field(default_factory=list)


class Person(TypedDict):
    name: str
    age: NotRequired[int]


def agent_with(turns: list[Any], **template: Any) -> tuple[Agent, ScriptedModel]:
    return make_agent(REG, turns, **template)


def results_sent(model: ScriptedModel, request: int) -> list[ToolResultContent]:
    last = model.requests[request].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultContent)]


# --- through the output tool --------------------------------------------------------------------


def test_a_pydantic_model_through_the_output_tool() -> None:
    agent, model = agent_with(
        [[tool_use("final_result", {"name": "Paris", "population": 2_100_000})]],
        output_type=City,
    )
    reply = agent.send_sync("Biggest city in France?")
    assert reply.output == City(name="Paris", population=2_100_000)
    assert isinstance(reply.output, City)
    [request] = model.requests
    declared = {t.name: t for t in request.tools}
    assert "final_result" in declared and "population" in declared
    assert request.output is None  # the tool, not native output
    schema = declared["final_result"].input_schema
    assert schema["properties"]["population"]["description"] == "People living there."
    assert schema["required"] == ["name", "population"]
    assert "A city and how many live there." in declared["final_result"].description
    assert_history_valid(agent.messages)
    assert agent.messages[-1].content[0].text == "The final output was accepted."


def test_invalid_output_goes_back_with_the_usual_message() -> None:
    agent, model = agent_with(
        [
            [tool_use("final_result", {"name": "paris", "population": "many"})],
            [tool_use("final_result", {"name": "Paris", "population": 2_100_000})],
        ],
        output_type=City,
    )
    events: list[Any] = []
    reply = agent.send_sync("Biggest city in France?")
    events = reply.events
    assert reply.output == City(name="Paris", population=2_100_000)
    [result] = results_sent(model, 1)
    assert result.is_error
    assert result.text == (
        "Invalid arguments for tool 'final_result': 'name' is invalid: a city's name starts "
        "with a capital letter, got \"paris\"; 'population' should be a valid integer, unable "
        'to parse string as an integer, got "many". Fix the arguments and call the tool again.'
    )
    ends = of_type(events, ToolEnd)
    assert [(e.name, e.is_error) for e in ends] == [("final_result", True), ("final_result", False)]
    assert_history_valid(agent.messages)


def test_retries_run_out_with_a_clear_error() -> None:
    bad = {"name": "Paris", "population": "many"}
    agent, _ = agent_with(
        [[tool_use("final_result", bad)], [tool_use("final_result", bad)]],
        output_type=City,
        output_retries=1,
    )
    with pytest.raises(AgentError) as caught:
        agent.send_sync("Biggest city?")
    message = str(caught.value)
    assert message.startswith(
        "the model gave no valid output of type City in 2 answers (output_retries=1); the last "
        "problem: Invalid arguments for tool 'final_result': 'population' should be a valid "
        "integer"
    )
    assert agent.status == "failed"
    assert_history_valid(agent.messages)  # the last call has its (error) result


def test_output_retries_zero_fails_at_the_first_invalid_output() -> None:
    agent, model = agent_with([[tool_use("final_result", {})]], output_type=City, output_retries=0)
    with pytest.raises(AgentError, match="in 1 answer "):
        agent.send_sync("Biggest city?")
    assert len(model.requests) == 1


def test_text_without_the_output_tool_is_asked_again() -> None:
    agent, model = agent_with(
        ["It is Paris.", [tool_use("final_result", {"name": "Paris", "population": 1})]],
        output_type=City,
    )
    reply = agent.send_sync("Biggest city?")
    assert reply.output == City(name="Paris", population=1)
    last = model.requests[1].messages[-1]
    assert last.role == "user"
    assert last.text == "You did not give your final answer: call the 'final_result' tool with it."
    assert_history_valid(agent.messages)


def test_other_tools_run_first_then_the_output() -> None:
    agent, model = agent_with(
        [
            [tool_use("population", {"city": "Paris"}), tool_use("population", {"city": "Lyon"})],
            [tool_use("final_result", {"name": "Paris", "population": 2_100_000})],
        ],
        output_type=City,
    )
    reply = agent.send_sync("Which is bigger, Paris or Lyon?")
    assert reply.output == City(name="Paris", population=2_100_000)
    assert [r.text for r in results_sent(model, 1)] == ["2100000", "520000"]
    assert reply.turns == 2


def test_calls_beside_the_output_are_answered_without_being_run() -> None:
    ran: list[str] = []
    registry = ToolRegistry(name="beside")

    @define_tool(registry=registry, kind="read")
    def note(text: str) -> str:
        """Take a note.

        Args:
            text: The note.
        """
        ran.append(text)
        return "noted"

    agent, _ = make_agent(
        registry,
        [
            [
                tool_use("note", {"text": "a"}),
                tool_use("final_result", {"name": "Paris", "population": 1}),
            ],
            "Anything else?",
        ],
        output_type=City,
    )
    reply = agent.send_sync("Go.")
    assert reply.output == City(name="Paris", population=1)
    assert ran == []
    answers = agent.messages[-1].content
    assert [(b.text, b.is_error) for b in answers if isinstance(b, ToolResultContent)] == [
        (
            "Tool 'note' was not run: the run ended with the final output given by "
            "'final_result' in the same turn.",
            True,
        ),
        ("The final output was accepted.", False),
    ]
    assert_history_valid(agent.messages)
    assert agent.status == "idle"


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Point, {"x": 1, "y": 2.5}, Point(x=1.0, y=2.5)),
        (Point, {"x": 1, "y": 2, "label": "a", "tags": ["t"]}, Point(1.0, 2.0, "a", ["t"])),
        (Point, {"x": 1, "y": 2, "label": None, "tags": None}, Point(1.0, 2.0)),  # strict nulls
        (Person, {"name": "Ada"}, {"name": "Ada"}),
        (Person, {"name": "Ada", "age": "36"}, {"name": "Ada", "age": 36}),
        (Person, {"name": "Ada", "age": None}, {"name": "Ada"}),  # strict mode's null: left out
        (int, {"result": 42}, 42),
        (list[str], {"result": ["a", "b"]}, ["a", "b"]),
        (Literal["yes", "no"], {"result": "no"}, "no"),
        (bool, '{"result": true}', True),  # arguments kept as JSON text
    ],
)
def test_types_of_output(output_type: Any, arguments: Any, expected: Any) -> None:
    agent, model = agent_with([[tool_use("final_result", arguments)]], output_type=output_type)
    reply = agent.send_sync("Answer.")
    assert reply.output == expected
    assert type(reply.output) is type(expected)
    schema = next(t for t in model.requests[0].tools if t.name == "final_result").input_schema
    assert schema["type"] == "object"


def test_a_scalar_is_one_field_named_result() -> None:
    agent, model = agent_with([[tool_use("final_result", {"result": 7})]], output_type=int)
    agent.send_sync("How many?")
    tool = next(t for t in model.requests[0].tools if t.name == "final_result")
    assert tool.input_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tool.schema("openai")["function"]["strict"] is True


def test_str_output_is_the_final_text() -> None:
    agent, model = agent_with(["Paris."], output_type=str)
    reply = agent.send_sync("Biggest city?")
    assert reply.output == "Paris."
    assert [t.name for t in model.requests[0].tools] == ["population"]


def test_no_output_type_no_output() -> None:
    agent, model = agent_with(["Paris."])
    reply = agent.send_sync("Biggest city?")
    assert reply.output is None
    assert model.requests[0].output is None


def test_the_stream_ends_with_the_output() -> None:
    agent, _ = agent_with(
        [[tool_use("final_result", {"name": "Paris", "population": 3})]], output_type=City
    )

    async def main() -> list[Any]:
        return [event async for event in agent.stream("Biggest?")]

    import anyio

    events = anyio.run(main)
    done = events[-1]
    assert isinstance(done, Done)
    assert done.output == City(name="Paris", population=3)


# --- native structured output -------------------------------------------------------------------


def test_native_output_is_the_json_text() -> None:
    text = json.dumps({"name": "Paris", "population": 5})
    agent, model = agent_with([text], output_type=City, output_mode="native")
    reply = agent.send_sync("Biggest city?")
    assert reply.output == City(name="Paris", population=5)
    [request] = model.requests
    assert [t.name for t in request.tools] == ["population"]  # no output tool
    assert request.output is not None
    assert request.output.name == "final_result"
    assert request.output.schema["required"] == ["name", "population"]
    assert request.output.description == "A city and how many live there."


def test_native_output_in_a_code_fence_and_invalid_json_asked_again() -> None:
    agent, model = agent_with(
        ["{not json", '```json\n{"name": "Paris", "population": 5}\n```'],
        output_type=City,
        output_mode="native",
    )
    reply = agent.send_sync("Biggest city?")
    assert reply.output == City(name="Paris", population=5)
    asked = model.requests[1].messages[-1]
    assert asked.role == "user"
    assert asked.text.startswith("Your answer is not valid output: it is not valid JSON")
    assert asked.text.endswith("Answer with only a JSON object.")
    assert_history_valid(agent.messages)


def test_native_output_with_wrong_fields() -> None:
    agent, model = agent_with(
        ['{"name": "Paris"}', '{"name": "Paris", "population": 1}'],
        output_type=City,
        output_mode="native",
    )
    assert agent.send_sync("Biggest?").output == City(name="Paris", population=1)
    assert model.requests[1].messages[-1].text == (
        "Your answer is not valid output: 'population' is required but missing. Answer again "
        "with only the JSON the output schema asks for."
    )


class PlainModel:
    """A model without native structured output (no supports_output_format)."""

    name = "plain"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        call = tool_use("final_result", {"result": 3})
        yield ModelResponse(
            message=Message(role="assistant", content=[call]), stop_reason="tool_use"
        )


def test_native_falls_back_to_the_tool_where_the_model_has_none() -> None:
    model = PlainModel()
    template = AgentTemplate(id="t", output_type=int, output_mode="native")
    reply = Agent.create(template, model=model).send_sync("How many?")
    assert reply.output == 3
    assert [t.name for t in model.requests[0].tools] == ["final_result"]
    assert model.requests[0].output is None


def test_a_function_model_sees_the_output_format() -> None:
    def answer(request: ModelRequest) -> str:
        assert request.output is not None
        return json.dumps({"result": sorted(request.output.schema["properties"])})

    template = AgentTemplate(id="t", output_type=list[str], output_mode="native")
    reply = Agent.create(template, model=FunctionModel(answer)).send_sync("Fields?")
    assert reply.output == ["result"]


# --- the template ---------------------------------------------------------------------------------


def test_an_output_type_pydantic_cannot_validate_is_refused() -> None:
    class Opaque:
        pass

    with pytest.raises(ValidationError) as caught:
        AgentTemplate(id="t", output_type=Opaque)
    assert "output_type" in str(caught.value)
    assert "cannot be validated" in str(caught.value)
    with pytest.raises(ValidationError, match="output_mode"):
        AgentTemplate(id="t", output_type=int, output_mode="json")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="output_retries"):
        AgentTemplate(id="t", output_type=int, output_retries=-1)


def test_output_type_is_code_only() -> None:
    template = AgentTemplate(id="t", output_type=City, output_mode="native", output_retries=3)
    data = template.model_dump()
    assert "output_type" not in data
    assert data["output_mode"] == "native" and data["output_retries"] == 3


def test_a_tool_named_final_result_is_a_clear_error() -> None:
    registry = ToolRegistry(name="clash")

    @define_tool(registry=registry)
    def final_result(text: str) -> str:
        """Mine.

        Args:
            text: Text.
        """
        return text

    agent, model = make_agent(registry, ["unused"], output_type=int)
    with pytest.raises(AgentError, match="the agent has a tool named 'final_result'"):
        agent.send_sync("Go.")
    assert model.requests == []
