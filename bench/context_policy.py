"""What a context policy adds to each request, on a 1,000-message history.

Run ``python bench/context_policy.py`` (``--messages N``, 1,000 by default; ``--rounds N``). A
history of N messages (half model turns with one ``tool_use``, half their ~600-character
results) grows by one turn per request, as in a run. For each request it times:

- ``history_view``: what a request's messages cost without a policy (kode's `HistoryView`);
- ``policy_keep_10``: `ContextView.messages` with ``keep_tool_results=10`` (incremental: what
  the history gained since the last request, and the results newly cleared);
- ``policy_budget``: the same with ``tool_results_tokens=20000``;
- ``compact_idle``: compaction on but not due (``compact_at_tokens`` above the history): the
  view keeps its token estimate as messages come and checks it against the budget;
- ``compacted``: after a compaction of the older half, what the request sends (the summary
  and the recent half), kept up to date;
- ``to_openai``: `to_openai_messages` of the same history, the translation every request
  makes for an OpenAI-compatible provider (the cost of building the request today).

The target: a policy costs no more per request than building the request (``to_openai``).
Medians over the requests, in microseconds, and each ratio to ``to_openai``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from kode.agent.context import ContextPolicy, ContextView
from kode.agent.session import HistoryView
from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.models.translate import to_openai_messages
from kode.sessions.records import HistoryCompacted


def turn(i: int) -> list[Message]:
    use = ToolUseContent(id=f"toolu_{i}", name="read_page", input={"n": i})
    result = ToolResultContent(
        tool_use_id=use.id, content=[TextContent(text=f"page {i}: " + "lorem ipsum " * 50)]
    )
    return [
        Message(role="assistant", content=[TextContent(text=f"Page {i}."), use]),
        Message(role="user", content=[result]),
    ]


def per_request(
    size: int, rounds: int, make: Callable[[], Callable[[list[Message]], object]]
) -> float:
    """Median microseconds of one request's messages, over `rounds` requests after `size`."""
    history = [Message.user("Read the manual.")]
    for i in range(size // 2):
        history += turn(i)
    op = make()
    op(history)  # the first request of a run sees the whole history once
    times = []
    for i in range(rounds):
        history += turn(size + i)
        start = time.perf_counter_ns()
        op(history)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def idle(view: ContextView) -> Callable[[list[Message]], object]:
    """What a run does before each request with a compacting policy: the view, its check."""

    def op(history: list[Message]) -> object:
        sent = view.messages(history)
        assert not view.over_budget
        return sent

    return op


def compacted() -> Callable[[list[Message]], object]:
    """The view of a history whose first half was compacted (the first call compacts it)."""
    view = ContextView(ContextPolicy(compact_at_tokens=10**9))
    record: list[HistoryCompacted] = []

    def op(history: list[Message]) -> object:
        if not record:  # the run's first request: the older half, then a summary of it
            record.append(
                HistoryCompacted(summary="The summary. " * 100, messages=len(history) // 2 | 1)
            )
        return view.messages(history, record[0])

    return op


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    figures = {
        "history_view": per_request(args.messages, args.rounds, lambda: HistoryView),
        "policy_keep_10": per_request(
            args.messages,
            args.rounds,
            lambda: ContextView(ContextPolicy(keep_tool_results=10)).messages,
        ),
        "policy_budget": per_request(
            args.messages,
            args.rounds,
            lambda: ContextView(ContextPolicy(tool_results_tokens=20_000)).messages,
        ),
        "compact_idle": per_request(
            args.messages,
            args.rounds,
            lambda: idle(ContextView(ContextPolicy(compact_at_tokens=10**9))),
        ),
        "compacted": per_request(args.messages, args.rounds, compacted),
        "to_openai": per_request(args.messages, args.rounds, lambda: to_openai_messages),
    }
    floor = figures["to_openai"]
    print(f"{args.messages} messages, medians of {args.rounds} requests")
    for name, us in figures.items():
        print(f"{name:<16}{us:>10.1f} us{us / floor:>8.3f}x to_openai")
    return 0


if __name__ == "__main__":
    sys.exit(main())
