"""One hierarchy of exceptions: every exception kode raises is a `KodeError` and is exported
from `kode`, subclasses keep the Python exceptions they always were, and the trees in
docs/errors.md and kode/tools/errors.py are the classes' own (``KODE_DOCS_UPDATE=1`` rewrites
the page's tree)."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
from pathlib import Path

import kode
from kode import KodeError
from kode.tools import errors

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "errors.md"

# Exceptions that never reach a caller of kode, and where they end. Any other exception class
# kode defines must be a KodeError and be exported from kode.
INTERNAL = {
    "AmbiguousCallError": "kode.mcp.session answers the server's request with an error",
    "CommandError": "the kode command prints it and exits with code 2",
    "EncodingError": "web_fetch turns it into an error result",
    "GlobError": "the file search tools turn it into invalid arguments",
    "HelperError": "the tool that starts the helper (fs_grep) ends with an error result saying it",
    "HunkError": "apply_patch turns it into an error result naming the hunk and nearby lines",
    "MessageTooLong": "code_run's host ends the script with an error result naming the limit",
    "LogFileError": "the kode command prints it and exits with code 2",
    "PatchError": "apply_patch turns it into invalid arguments saying what a patch looks like",
    "PostgresUnavailable": "kode.testing's postgres fixtures skip the test",
    "RaisedInThread": "carries a tool's GeneratorExit out of its worker thread to its call",
    "SlotClosedError": "kode.mcp.session answers a request for an ended call with an error",
    "ToolCallError": "raised inside a code_run script (its harness runs in the sandbox on the "
    "standard library alone, without kode); the script catches it or code_run's result says it",
}


def exported() -> list[type[KodeError]]:
    values = [getattr(kode, name) for name in kode.__all__]
    return [v for v in values if isinstance(v, type) and issubclass(v, KodeError)]


def defined_in_kode() -> dict[str, type[BaseException]]:
    """Every public exception class in kode's modules (those an installed extra allows)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(kode.__path__, "kode."):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("kode"):
                continue  # needs an optional extra that is not installed
            raise
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("kode.")
                and not name.startswith("_")
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def tree() -> list[str]:
    """The hierarchy below `KodeError`, siblings by name, other bases after each name."""
    classes = exported()

    def parent(cls: type) -> type:
        return next(b for b in cls.__bases__ if issubclass(b, KodeError))

    def line(cls: type) -> str:
        others = [b.__name__ for b in cls.__bases__ if not issubclass(b, KodeError)]
        return cls.__name__ + (f" (also {', '.join(others)})" if others else "")

    def below(cls: type, indent: str) -> list[str]:
        children = sorted(
            (c for c in classes if c is not KodeError and parent(c) is cls),
            key=lambda c: c.__name__,
        )
        lines = []
        for i, child in enumerate(children):
            last = i == len(children) - 1
            lines.append(indent + ("└── " if last else "├── ") + line(child))
            lines.extend(below(child, indent + ("    " if last else "│   ")))
        return lines

    return ["KodeError", *below(KodeError, "")]


def page_tree(text: str) -> tuple[int, int]:
    """Where the tree's lines are in the page: the fenced block after "## The hierarchy"."""
    lines = text.splitlines()
    start = lines.index("```text", lines.index("## The hierarchy")) + 1
    return start, lines.index("```", start)


def test_every_exception_kode_raises_is_a_kode_error_exported_from_kode() -> None:
    found = defined_in_kode()
    outside = sorted(
        name
        for name, cls in found.items()
        if not issubclass(cls, KodeError) and cls.__name__ not in INTERNAL
    )
    assert outside == [], "derive these from KodeError, or say in INTERNAL where they end"
    missing = sorted(
        name
        for name, cls in found.items()
        if issubclass(cls, KodeError) and getattr(kode, cls.__name__, None) is not cls
    )
    assert missing == [], "export these from kode (its __all__ and _SOURCES)"
    assert set(INTERNAL) <= {cls.__name__ for cls in found.values()}  # no stale entries


def test_the_exceptions_and_agent_reply_are_exported() -> None:
    from kode.agent import AgentError, AgentReply, TemplateError
    from kode.models import ModelError
    from kode.registries import PolicyError
    from kode.sessions import SessionError

    for value in (AgentError, AgentReply, TemplateError, ModelError, PolicyError, SessionError):
        assert getattr(kode, value.__name__) is value
        assert value.__name__ in kode.__all__


def test_subclasses_keep_the_python_exceptions_they_were() -> None:
    assert issubclass(kode.ToolNotFoundError, KeyError)
    assert issubclass(kode.SessionNotFoundError, KeyError)
    assert issubclass(kode.ToolDefinitionError, TypeError)
    for name in ("TemplateError", "PolicyError", "DepsSpecError", "ScriptError", "StoreURLError"):
        assert issubclass(getattr(kode, name), ValueError), name
    assert issubclass(kode.SessionLeaseError, kode.SessionError)


def test_the_docs_page_shows_the_tree_and_what_raises_each() -> None:
    text = PAGE.read_text(encoding="utf-8")
    start, end = page_tree(text)
    lines = text.splitlines()
    if os.environ.get("KODE_DOCS_UPDATE") and lines[start:end] != tree():
        lines[start:end] = tree()
        PAGE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert lines[start:end] == tree()
    described = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert described == {cls.__name__ for cls in exported()} - {"KodeError"}


def test_the_errors_module_shows_the_tree() -> None:
    doc = errors.__doc__ or ""
    shown = [
        match.group(1) + match.group(2)
        for line in doc.splitlines()
        if (match := re.match(r"^    ([│├└─ ]*)(\w+)", line))
    ]
    assert shown == [re.sub(r" \(also .*\)$", "", line) for line in tree()]
