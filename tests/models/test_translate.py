from __future__ import annotations

from typing import Any

import pytest

from kode.models import (
    ImageContent,
    ImageSource,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
)
from kode.models.translate import (
    ERROR_PREFIX,
    OpenAIHistory,
    from_openai_messages,
    parse_arguments,
    to_openai_messages,
)

PNG = ImageSource(media_type="image/png", data="iVBORw0KGgo=")


def user(*blocks: Any) -> Message:
    return Message(role="user", content=list(blocks))


def assistant(*blocks: Any) -> Message:
    return Message(role="assistant", content=list(blocks))


# A conversation in the form kode's agent loop produces: every block kind that Chat Completions
# can carry, two parallel calls answered in order, one failed.
HISTORY = [
    user(TextContent(text="What is the weather in Paris and Rome?")),
    assistant(
        TextContent(text="Let me check both."),
        ToolUseContent(id="call_1", name="get_weather", input={"city": "Paris"}),
        ToolUseContent(id="call_2", name="get_weather", input={"city": "Rome", "unit": "c"}),
    ),
    user(
        ToolResultContent(tool_use_id="call_1", content=[TextContent(text="sunny, 21 C")]),
        ToolResultContent(
            tool_use_id="call_2",
            content=[TextContent(text="Tool 'get_weather' timed out after 30 s.")],
            is_error=True,
        ),
    ),
    assistant(ToolUseContent(id="call_3", name="get_weather", input={"city": "Rome"})),
    user(
        ToolResultContent(
            tool_use_id="call_3",
            content=[TextContent(text="cloudy"), TextContent(text="(cached)")],
        ),
        TextContent(text="And this picture?"),
        ImageContent(source=PNG),
    ),
    assistant(TextContent(text="Paris is sunny, Rome cloudy;"), TextContent(text=" a cat.")),
    user(TextContent(text="Thanks!")),
]

HISTORY_OPENAI: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the weather in Paris and Rome?"},
    {
        "role": "assistant",
        "content": "Let me check both.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Rome","unit":"c"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
    {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Error: Tool 'get_weather' timed out after 30 s.",
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_3",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_3",
        "content": [{"type": "text", "text": "cloudy"}, {"type": "text", "text": "(cached)"}],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Paris is sunny, Rome cloudy;"},
            {"type": "text", "text": " a cat."},
        ],
    },
    {"role": "user", "content": "Thanks!"},
]


def test_to_openai_is_exact() -> None:
    assert to_openai_messages(HISTORY, system="You are terse.") == HISTORY_OPENAI


def test_from_openai_is_exact() -> None:
    assert from_openai_messages(HISTORY_OPENAI) == OpenAIHistory(
        system="You are terse.", messages=HISTORY
    )


def test_round_trip_both_ways() -> None:
    system, messages = from_openai_messages(to_openai_messages(HISTORY, system="S"))
    assert (system, messages) == ("S", HISTORY)
    assert to_openai_messages(messages, system=system) == to_openai_messages(HISTORY, system="S")
    again = from_openai_messages(HISTORY_OPENAI)
    assert to_openai_messages(again.messages, system=again.system) == HISTORY_OPENAI


def test_no_system_prompt_means_no_system_message() -> None:
    assert to_openai_messages([Message.user("hi")]) == [{"role": "user", "content": "hi"}]


def test_system_and_developer_messages_are_collected_in_order() -> None:
    history = from_openai_messages(
        [
            {"role": "system", "content": "one"},
            {"role": "user", "content": "hi"},
            {"role": "developer", "content": [{"type": "text", "text": "two"}]},
        ]
    )
    assert history.system == "one\n\ntwo"
    assert history.messages == [Message.user("hi")]


def test_thinking_is_dropped() -> None:
    message = assistant(
        ThinkingContent(thinking="hmm", signature="sig"),
        TextContent(text="Done."),
    )
    assert to_openai_messages([message]) == [{"role": "assistant", "content": "Done."}]


def test_thinking_only_assistant_message_becomes_empty_content() -> None:
    message = assistant(ThinkingContent(thinking="hmm"))
    assert to_openai_messages([message]) == [{"role": "assistant", "content": ""}]
    assert from_openai_messages([{"role": "assistant", "content": ""}]).messages == [assistant()]


def test_text_after_a_tool_call_moves_before_it() -> None:
    message = assistant(
        ToolUseContent(id="c1", name="t", input={}),
        TextContent(text="after"),
    )
    assert to_openai_messages([message]) == [
        {
            "role": "assistant",
            "content": "after",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        }
    ]


def test_string_input_is_sent_unchanged_and_read_back_unchanged() -> None:
    call = ToolUseContent(id="c1", name="t", input='{"city": "Par')
    sent = to_openai_messages([assistant(call)])
    assert sent[0]["tool_calls"][0]["function"]["arguments"] == '{"city": "Par'
    assert from_openai_messages(sent).messages == [assistant(call)]


def test_non_ascii_arguments_are_kept_readable() -> None:
    call = ToolUseContent(id="c1", name="t", input={"city": "Zürich"})
    sent = to_openai_messages([assistant(call)])
    assert sent[0]["tool_calls"][0]["function"]["arguments"] == '{"city":"Zürich"}'


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("", {}),
        ("   ", {}),
        ("{}", {}),
        ('{"a": ', '{"a": '),
        ("[1, 2]", "[1, 2]"),
        ("null", "null"),
        ("not json", "not json"),
    ],
)
def test_parse_arguments(arguments: str, expected: object) -> None:
    assert parse_arguments(arguments) == expected


def test_arguments_nested_too_deeply_to_read_stay_text() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_arguments(deep) is deep  # kept for the agent to refuse, not a RecursionError


def test_images_in_tool_results_become_a_text_note() -> None:
    result = ToolResultContent(
        tool_use_id="c1", content=[TextContent(text="the chart:"), ImageContent(source=PNG)]
    )
    assert to_openai_messages([user(result)]) == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "the chart:"},
                {
                    "type": "text",
                    "text": "[image/png image omitted: tool results in Chat Completions "
                    "carry text only]",
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("result", "content"),
    [
        (ToolResultContent(tool_use_id="c", content=[]), ""),
        (ToolResultContent(tool_use_id="c", content=[], is_error=True), "Error:"),
        (
            ToolResultContent(tool_use_id="c", content=[TextContent(text="bad")], is_error=True),
            "Error: bad",
        ),
        (
            ToolResultContent(
                tool_use_id="c",
                content=[TextContent(text="Error: x")],
                is_error=True,
            ),
            "Error: Error: x",
        ),
        (
            ToolResultContent(
                tool_use_id="c",
                content=[TextContent(text="a"), TextContent(text="b")],
                is_error=True,
            ),
            [{"type": "text", "text": "Error: a"}, {"type": "text", "text": "b"}],
        ),
    ],
)
def test_tool_result_content_and_error_flag_round_trip(
    result: ToolResultContent, content: object
) -> None:
    sent = to_openai_messages([user(result)])
    assert sent == [{"role": "tool", "tool_call_id": "c", "content": content}]
    assert from_openai_messages(sent).messages == [user(result)]


def test_error_prefix_is_exactly_the_documented_one() -> None:
    assert ERROR_PREFIX == "Error: "
    [message] = from_openai_messages(
        [{"role": "tool", "tool_call_id": "c", "content": "Error:no space"}]
    ).messages
    assert message.content == [
        ToolResultContent(tool_use_id="c", content=[TextContent(text="Error:no space")])
    ]


def test_empty_user_message() -> None:
    assert to_openai_messages([user()]) == [{"role": "user", "content": ""}]
    assert from_openai_messages([{"role": "user", "content": ""}]).messages == [user()]


def test_single_image_is_a_list_of_parts() -> None:
    sent = to_openai_messages([user(ImageContent(source=PNG))])
    assert sent == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
            ],
        }
    ]
    assert from_openai_messages(sent).messages == [user(ImageContent(source=PNG))]


def test_a_user_message_after_tool_messages_joins_their_message() -> None:
    history = from_openai_messages(
        [
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "user", "content": "go on"},
            {"role": "user", "content": "please"},
        ]
    )
    assert history.messages == [
        user(
            ToolResultContent(tool_use_id="a", content=[TextContent(text="1")]),
            ToolResultContent(tool_use_id="b", content=[TextContent(text="2")]),
            TextContent(text="go on"),
        ),
        user(TextContent(text="please")),
    ]


def test_assistant_refusals_are_read_as_text() -> None:
    history = from_openai_messages(
        [
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        ]
    )
    assert history.messages == [
        assistant(TextContent(text="I can't help with that.")),
        assistant(TextContent(text="No.")),
    ]


def test_tool_calls_with_malformed_or_empty_arguments() -> None:
    history = from_openai_messages(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "t", "arguments": ""}},
                    {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{x"}},
                ],
            }
        ]
    )
    assert history.messages == [
        assistant(
            ToolUseContent(id="a", name="t", input={}),
            ToolUseContent(id="b", name="t", input="{x"),
        )
    ]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "function", "name": "f", "content": "x"}, "role 'function'"),
        (
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
            },
            "only data: URLs",
        ),
        (
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
            "type 'input_audio'",
        ),
    ],
)
def test_what_kode_cannot_represent_is_a_value_error(message: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        from_openai_messages([message])
