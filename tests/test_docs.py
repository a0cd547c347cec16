"""The documentation is executed: every Python example in docs/ and in kode's docstrings runs.

Each page's ```python blocks run in order in one fresh module namespace (a later block may use
what an earlier one defined), inside the `isolated_registry` fixture so no tool leaks. A block
fenced ```python {.no-run} is shown but not run. A block whose code starts with `await` at top
level runs in an event loop.

A fenced block titled "Output" (```text title="Output"``` or ```json title="Output"```) right
after a Python block must equal what that block printed. To rewrite those blocks from the
code as it is now, run:

    KODE_DOCS_UPDATE=1 python -m pytest tests/test_docs.py

and review the diff. Finally, `mkdocs build --strict` must pass.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

import kode

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
UPDATE = os.environ.get("KODE_DOCS_UPDATE") == "1"

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_OUTPUT_TITLE = re.compile(r"""title=["']Output["']""")


@dataclass
class Block:
    """One fenced code block of a Markdown text."""

    info: str
    code: str
    indent: str
    start: int
    """Index of the first content line (after the opening fence)."""
    end: int
    """Index of the closing fence line."""
    output: Block | None = None
    """The "Output" block that follows this one, if any."""

    @property
    def language(self) -> str:
        return self.info.strip().split(" ", 1)[0].lstrip("{").lstrip(".").lower()

    @property
    def runs(self) -> bool:
        return self.language in ("python", "py") and not self.is_pytest and "no-run" not in self.info

    @property
    def is_pytest(self) -> bool:
        """A test module, run by pytest rather than in the page's namespace."""
        return self.language in ("python", "py") and ".pytest" in self.info

    @property
    def is_output(self) -> bool:
        return bool(_OUTPUT_TITLE.search(self.info))


def parse_blocks(lines: list[str]) -> list[Block]:
    """The fenced blocks of a Markdown text, each Python block paired with its Output block."""
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"]
        close = re.compile(rf"^{re.escape(indent)}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = [ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1 : j]]
        blocks.append(
            Block(info=info.strip(), code="\n".join(body) + "\n", indent=indent, start=i + 1, end=j)
        )
        i = j + 1
    # Pair each runnable block with an Output block that follows it with only blank lines between.
    for prev, nxt in zip(blocks, blocks[1:], strict=False):
        if prev.runs and nxt.is_output:
            between = lines[prev.end + 1 : nxt.start - 1]
            if all(not ln.strip() for ln in between):
                prev.output = nxt
    return blocks


@dataclass
class Page:
    """A source of examples: a docs page or a docstring."""

    name: str
    path: Path | None
    blocks: list[Block]
    lines: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return self.name


def run_blocks(page: Page, module_name: str) -> list[tuple[Block, str]]:
    """Run the page's runnable blocks in one fresh module; return each block with its stdout."""
    module = types.ModuleType(module_name)
    module.__file__ = str(page.path) if page.path else f"<{module_name}>"
    sys.modules[module_name] = module  # pydantic and dataclasses look modules up by name
    printed: list[tuple[Block, str]] = []
    try:
        for block in page.blocks:
            if not block.runs:
                continue
            line = block.start + 1
            source = "\n" * (block.start) + block.code  # keep the page's line numbers
            code = compile(
                source,
                f"{page.path or page.name}",
                "exec",
                flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                dont_inherit=True,
            )
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    if code.co_flags & inspect.CO_COROUTINE:
                        coro = eval(code, module.__dict__)

                        async def _main(coro: Any = coro) -> None:
                            await coro

                        anyio.run(_main)
                    else:
                        exec(code, module.__dict__)
            except BaseException as exc:
                raise AssertionError(
                    f"{page.name}: the example starting at line {line} raised "
                    f"{type(exc).__name__}: {exc}\n\n{block.code}\nIt printed:\n{out.getvalue()}"
                ) from exc
            printed.append((block, out.getvalue()))
    finally:
        sys.modules.pop(module_name, None)
    return printed


def _normalise(text: str) -> str:
    return "\n".join(ln.rstrip() for ln in text.strip("\n").splitlines())


def check_outputs(page: Page, printed: list[tuple[Block, str]]) -> None:
    """Compare each Output block with what its example printed (or rewrite it when updating)."""
    mismatches: list[str] = []
    edits: list[tuple[Block, str]] = []
    for block, text in printed:
        if block.output is None:
            continue
        shown = _normalise(block.output.code)
        actual = _normalise(text)
        if shown != actual:
            if UPDATE:
                edits.append((block.output, actual))
            else:
                mismatches.append(
                    f"line {block.output.start}: the page shows\n{shown}\n\n"
                    f"but the example printed\n{actual}"
                )
    if edits and page.path is not None:
        lines = list(page.lines)
        for out, actual in sorted(edits, key=lambda e: e[0].start, reverse=True):
            new = [(out.indent + ln) if ln else "" for ln in actual.splitlines()]
            lines[out.start : out.end] = new
        page.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not mismatches, f"{page.name}: output out of date (KODE_DOCS_UPDATE=1 rewrites it)\n" + (
        "\n\n".join(mismatches)
    )


# --- docs pages ------------------------------------------------------------------------------


def _doc_pages() -> list[Page]:
    pages = []
    for path in sorted(DOCS.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        pages.append(
            Page(
                name=str(path.relative_to(ROOT)), path=path, blocks=parse_blocks(lines), lines=lines
            )
        )
    return pages


DOC_PAGES = _doc_pages()


def test_docs_exist() -> None:
    assert DOC_PAGES, "no pages found in docs/"
    assert any(b.runs for p in DOC_PAGES for b in p.blocks), "no Python examples in docs/"


@pytest.mark.parametrize("page", [p for p in DOC_PAGES if any(b.runs for b in p.blocks)], ids=repr)
def test_docs_page_examples(page: Page, isolated_registry: kode.ToolRegistry) -> None:
    module_name = "docs_" + re.sub(r"\W", "_", page.path.stem if page.path else page.name)
    printed = run_blocks(page, module_name)
    check_outputs(page, printed)
    orphans = [b for b in page.blocks if b.is_output and not any(p.output is b for p in page.blocks)]
    assert not orphans, f"{page.name}: the Output block at line {orphans[0].start} follows no example"


def test_docs_blocks_are_mostly_run() -> None:
    python = [b for p in DOC_PAGES for b in p.blocks if b.language in ("python", "py")]
    skipped = [b for b in python if not b.runs]
    assert len(skipped) <= max(3, len(python) // 10), "keep {.no-run} examples rare"


# --- docstring examples ------------------------------------------------------------------------


def _docstrings() -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of every kode module, class, function, method and property."""
    seen: set[int] = set()
    for info in pkgutil.walk_packages(kode.__path__, "kode."):
        module = importlib.import_module(info.name)
        if module.__doc__:
            yield info.name, module.__doc__
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) != info.name or id(value) in seen:
                continue
            seen.add(id(value))
            if inspect.isclass(value):
                if value.__doc__:
                    yield f"{info.name}.{attr}", value.__doc__
                for member_name, member in vars(value).items():
                    target = member.fget if isinstance(member, property) else member
                    target = getattr(target, "__func__", target)
                    doc = getattr(target, "__doc__", None) if callable(target) else None
                    if doc:
                        yield f"{info.name}.{attr}.{member_name}", doc
            elif inspect.isfunction(value) and value.__doc__:
                yield f"{info.name}.{attr}", value.__doc__


def _docstring_pages() -> list[Page]:
    pages = []
    for name, doc in _docstrings():
        blocks = parse_blocks(inspect.cleandoc(doc).splitlines())
        if any(b.runs for b in blocks):
            pages.append(Page(name=name, path=None, blocks=blocks))
    return pages


DOCSTRING_PAGES = _docstring_pages()


@pytest.mark.parametrize("page", DOCSTRING_PAGES, ids=repr)
def test_docstring_examples(page: Page, isolated_registry: kode.ToolRegistry) -> None:
    run_blocks(page, "docstring_" + page.name.replace(".", "_"))


def test_docstring_examples_found() -> None:
    assert DOCSTRING_PAGES, "no Example: blocks found in kode's docstrings"


# --- the site ----------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    missing = [m for m in ("mkdocs", "material", "mkdocstrings") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the docs extras are not installed ({', '.join(missing)}): pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "site" / "index.html").exists()


def test_parse_blocks_pairs_output() -> None:
    text = textwrap.dedent(
        """\
        ```python
        print("hi")
        ```

        ```text title="Output"
        hi
        ```

        ```python {.no-run}
        boom()
        ```
        """
    ).splitlines()
    first, output, skipped = parse_blocks(text)
    assert first.runs and first.output is output and output.code == "hi\n"
    assert not skipped.runs
