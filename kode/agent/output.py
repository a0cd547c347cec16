"""Typed final output: what a run ends with when its template sets ``output_type``.

This module owns `OutputSpec`: how an output type (a pydantic model, a dataclass, a TypedDict,
or any other type pydantic validates: ``int``, ``list[str]``, a ``Literal``...) is asked of the
model, and how what the model gives is validated into `Done.output` / ``AgentReply.output``.
The run loop (`kode.agent.run`) decides when to ask; this module decides what to send and what
was valid.

Two ways to ask:

- **The output tool** (``output_mode="tool"``, the default; it works with every model, with or
  without other tools): a tool named `OUTPUT_TOOL_NAME` whose arguments are the output's
  fields (an object type's own fields; any other type as one field, ``result``). A call of it
  ends the run with the validated arguments; other calls of the same turn are answered without
  being run. Invalid arguments get kode's usual validation message as the call's result.
- **Native structured output** (``output_mode="native"``): the request carries an
  `OutputFormat` and the provider itself makes the final text JSON of that schema (OpenAI,
  the Responses API, Anthropic; Gemini when no tools are sent). For a model that cannot, the
  output tool is used instead. The text is validated; invalid JSON goes back as a user message.

``output_type=str`` asks nothing: the final text is the output.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import typing_extensions
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic_core import from_json
from typing_extensions import is_typeddict

from kode.models.base import OutputFormat, supports_output_format
from kode.models.messages import ToolUseContent
from kode.tools.core import Tool
from kode.tools.dialects import clean_schema
from kode.tools.validation import ArgumentValidator, InvalidArguments

__all__ = [
    "OUTPUT_TOOL_NAME",
    "InvalidOutput",
    "OutputMode",
    "OutputSpec",
    "OutputValue",
    "PartialReader",
    "RunOutput",
]

OUTPUT_TOOL_NAME = "final_result"
"""The name of the tool the model calls to give the final output."""

OutputMode = Literal["tool", "native"]
"""How the output is asked for: through the output tool, or the provider's structured output."""

_TOOL_PREFIX = f"Invalid arguments for tool '{OUTPUT_TOOL_NAME}': "
_TOOL_SUFFIX = "Fix the arguments and call the tool again."


@dataclass(kw_only=True, frozen=True, slots=True)
class OutputValue:
    """The model gave valid output."""

    value: Any
    """The validated output."""
    index: int | None
    """Which of the turn's calls gave it (`None`: the final text)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class InvalidOutput:
    """The model gave no output, or invalid output: what to tell it."""

    message: str
    """The message the model is shown."""
    index: int | None
    """Which of the turn's calls was invalid (`None`: the final text)."""


def _plain(annotation: Any) -> Any:
    """`annotation` without ``Required`` / ``NotRequired`` (a TypedDict's markers)."""
    markers = (typing.Required, typing.NotRequired, typing_extensions.Required)
    if typing.get_origin(annotation) in (*markers, typing_extensions.NotRequired):
        return typing.get_args(annotation)[0]
    return annotation


def _fields_model(output_type: Any) -> tuple[type[BaseModel], Any]:
    """A model of the output tool's arguments, and how to make the output from its values."""
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return output_type, output_type.model_validate
    if dataclasses.is_dataclass(output_type) and isinstance(output_type, type):
        hints = typing.get_type_hints(output_type, include_extras=True)
        fields: dict[str, Any] = {}
        for item in dataclasses.fields(output_type):
            if not item.init:
                continue
            if item.default is not dataclasses.MISSING:
                default: Any = item.default
            elif item.default_factory is not dataclasses.MISSING:
                default = Field(default_factory=item.default_factory)
            else:
                default = ...
            fields[item.name] = (hints[item.name], default)
        doc = output_type.__doc__ or ""
        if doc.startswith(f"{output_type.__name__}("):  # the signature dataclass writes
            doc = ""
        model = create_model(output_type.__name__, __doc__=doc or None, **fields)
        return model, lambda values: output_type(**values)
    if is_typeddict(output_type):
        hints = typing.get_type_hints(output_type, include_extras=True)
        # From the hints too: under ``from __future__ import annotations`` the class cannot
        # see NotRequired in its (string) annotations.
        required = set(output_type.__required_keys__)
        for key, hint in hints.items():
            origin = typing.get_origin(hint)
            if origin is typing.NotRequired or origin is typing_extensions.NotRequired:
                required.discard(key)
            elif origin is typing.Required or origin is typing_extensions.Required:
                required.add(key)
        fields = {k: (_plain(v), ... if k in required else None) for k, v in hints.items()}
        model = create_model(output_type.__name__, __doc__=output_type.__doc__, **fields)
        # A key the model left out stays out: the fields' defaults are None, and None is
        # dropped unless the TypedDict requires the key.
        return model, lambda values: {
            k: v for k, v in values.items() if k in required or v is not None
        }
    model = create_model("FinalResult", result=(output_type, ...))
    return model, lambda values: values["result"]


@functools.cache
def _spec(output_type: Any) -> OutputSpec:
    return OutputSpec(output_type)


class OutputSpec:
    """How one output type is asked of a model and validated (see the module's notes).

    Args:
        output_type: The type of the output.

    Raises:
        TypeError: pydantic cannot validate `output_type` or write its JSON schema.
    """

    def __init__(self, output_type: Any) -> None:
        self.output_type = output_type
        """The type of the output."""
        self.is_text = output_type is str
        """Whether the output is the final text itself (nothing is asked)."""
        try:
            TypeAdapter(output_type)
            model, self._build = _fields_model(output_type)
            schema = clean_schema(model.model_json_schema())
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
            raise TypeError(
                f"output_type {output_type!r} cannot be validated: {exc}. Use a pydantic "
                "model, a dataclass, a TypedDict, or a type pydantic validates (int, "
                "list[str], a Literal, ...)"
            ) from None
        # The type's docstring describes the tool (and the native format), not a field.
        described = schema.pop("description", None)
        description = described.strip() if isinstance(described, str) else ""
        self.schema = schema
        """The JSON schema of the output tool's arguments (and of native output): an object."""
        self.tool: Tool[..., Any] = Tool.from_schema(
            OUTPUT_TOOL_NAME,
            description=(
                "Give your final answer: call this tool once, when you are done, with the "
                "answer as its arguments." + (f" The answer: {description}" if description else "")
            ),
            input_schema=schema,
        )
        """The output tool (never run: the agent reads its arguments)."""
        self.format = OutputFormat(name=OUTPUT_TOOL_NAME, schema=schema, description=description)
        """The schema as native structured output."""
        self._validate = ArgumentValidator(
            model, tool_name=OUTPUT_TOOL_NAME, params=list(model.model_fields), field_to_param=None
        )

    @staticmethod
    def of(output_type: Any) -> OutputSpec:
        """The spec of `output_type` (made once per type)."""
        try:
            return _spec(output_type)
        except TypeError as exc:
            if "unhashable" not in str(exc):
                raise
            return OutputSpec(output_type)

    def native(self, mode: OutputMode, model: object, *, tools: bool) -> bool:
        """Whether to ask for native structured output (else the output tool)."""
        return mode == "native" and supports_output_format(model, tools=tools)

    def judge_call(self, raw: Any, index: int) -> OutputValue | InvalidOutput:
        """The output from a call of the output tool with arguments `raw`."""
        found = self._validate(raw)
        if isinstance(found, InvalidArguments):
            return InvalidOutput(message=found.message, index=index)
        try:
            return OutputValue(value=self._build(found), index=index)
        except ValidationError as exc:  # a model's own validators, run again on the values
            return InvalidOutput(
                message=f"{_TOOL_PREFIX}{_short(exc)}. {_TOOL_SUFFIX}", index=index
            )

    def judge_text(self, text: str, *, native: bool) -> OutputValue | InvalidOutput:
        """The output from a final text (which, for native output, is JSON)."""
        if self.is_text:
            return OutputValue(value=text, index=None)
        if not native:
            return InvalidOutput(
                message=(
                    f"You did not give your final answer: call the '{OUTPUT_TOOL_NAME}' tool "
                    "with it."
                ),
                index=None,
            )
        judged = self.judge_call(_unfenced(text), 0)
        if isinstance(judged, OutputValue):
            return OutputValue(value=judged.value, index=None)
        message = judged.message
        if message.startswith(_TOOL_PREFIX):
            message = "Your answer is not valid output: " + message[len(_TOOL_PREFIX) :]
        message = message.replace(
            _TOOL_SUFFIX, "Answer again with only the JSON the output schema asks for."
        )
        message = message.replace("the arguments are not valid JSON", "it is not valid JSON")
        message = message.replace("Send a JSON object.", "Answer with only a JSON object.")
        return InvalidOutput(message=message, index=None)


def _unfenced(text: str) -> str:
    """`text` without a Markdown code fence around it (```json ... ```)."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and "\n" in stripped:
        return stripped[stripped.index("\n") + 1 : -3].strip()
    return stripped


def _short(exc: ValidationError) -> str:
    return "; ".join(
        f"'{'.'.join(str(p) for p in e['loc'])}' {e['msg']}" if e["loc"] else e["msg"]
        for e in exc.errors(include_url=False)
    )


class RunOutput:
    """The output of one run: what is asked, and how many invalid answers are left.

    Args:
        spec: The output type's spec.
        native: Whether the model is asked for native structured output (else the tool).
        retries: How many invalid (or missing) answers go back to the model.
    """

    def __init__(self, spec: OutputSpec, *, native: bool, retries: int) -> None:
        self.spec = spec
        self.native = native
        self.retries = retries
        self.failures = 0
        """Invalid answers so far."""

    @classmethod
    def start(
        cls, output_type: Any, mode: OutputMode, retries: int, model: object, *, tools: bool
    ) -> RunOutput | None:
        """The output of a run (`None` when the template asks for none)."""
        if output_type is None:
            return None
        spec = OutputSpec.of(output_type)
        native = not spec.is_text and spec.native(mode, model, tools=tools)
        return cls(spec, native=native, retries=retries)

    @property
    def uses_tool(self) -> bool:
        """Whether the output tool is sent."""
        return not (self.native or self.spec.is_text)

    def tools(self, tools: Sequence[Tool[..., Any]]) -> Sequence[Tool[..., Any]]:
        """The request's tools: `tools`, and the output tool when it is used."""
        return [*tools, self.spec.tool] if self.uses_tool else tools

    @property
    def format(self) -> OutputFormat | None:
        """The request's native output format, if used."""
        return self.spec.format if self.native else None

    def judge(
        self, text: str, calls: Sequence[ToolUseContent]
    ) -> OutputValue | InvalidOutput | None:
        """What a reply gave: output, invalid output, or `None` (calls to run, no output yet)."""
        if self.uses_tool:
            for index, call in enumerate(calls):
                if call.name.strip() == OUTPUT_TOOL_NAME:
                    return self.spec.judge_call(call.input, index)
        if calls:
            return None
        return self.spec.judge_text(text, native=self.native)

    def exhausted(self, invalid: InvalidOutput) -> str | None:
        """Count `invalid`; the run's error message when no retry is left."""
        self.failures += 1
        if self.failures <= self.retries:
            return None
        tries = f"{self.failures} answer" + ("s" if self.failures != 1 else "")
        return (
            f"the model gave no valid output of type {_type_name(self.spec.output_type)} in "
            f"{tries} (output_retries={self.retries}); the last problem: {invalid.message}"
        )


def _type_name(output_type: Any) -> str:
    return output_type.__name__ if isinstance(output_type, type) else repr(output_type)


class PartialReader:
    """Reads the typed output from the final text as it streams (native output only)."""

    def __init__(self, spec: OutputSpec) -> None:
        self._wrapped = not _has_fields(spec.output_type)  # a scalar's value is in "result"
        self._text: list[str] = []
        self._last: Any = None

    def feed(self, text: str) -> tuple[bool, Any]:
        """Add a piece of text: whether the partial output changed, and the partial output."""
        self._text.append(text)
        try:
            value = from_json("".join(self._text), allow_partial="trailing-strings")
        except ValueError:
            return False, None
        if self._wrapped:
            value = value.get("result") if isinstance(value, dict) else None
        if value is None or value == self._last:
            return False, None
        self._last = value
        return True, value


def _has_fields(output_type: Any) -> bool:
    return (
        (isinstance(output_type, type) and issubclass(output_type, BaseModel))
        or dataclasses.is_dataclass(output_type)
        or is_typeddict(output_type)
    )
