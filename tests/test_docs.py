"""The documentation is executed: every Python example in docs/ and in kode's docstrings runs.

Each page that has Python examples says at its top, in one of three fixed sentences (`SCRIPT`,
`NOTEBOOK` and `FILES` below), how its examples run, and they are run exactly that way:

- a script page's ```python blocks, in order, are one file run by `python` in a fresh
  process (each block at its own line of the page, so a traceback points at the page);
- a notebook page's blocks are the cells of one notebook, run in order by a real Jupyter
  kernel, where `await` works at the top level;
- a page of files (the CLI's) has each block run alone as its own file; the commands that use
  them are checked by tests/test_cli_docs.py.

Two other fences:

- ```python {.pytest}: a test module; it is written to a file and run by pytest.
- ```python {.no-run}: shown, not run. Keep these rare.

A fenced block titled "Output" (```text title="Output"``` or ```json title="Output"```) right
after a Python block must equal what that block printed. To rewrite those blocks from the code
as it is now, run

    KODE_DOCS_UPDATE=1 python -m pytest tests/test_docs.py

and review the diff. The examples in kode's docstrings (```python blocks, under `Example:`) run
too, each in its own namespace. Finally, `mkdocs build --strict` must pass.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import itertools
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
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


# --- reading Markdown ------------------------------------------------------------------------


@dataclass
class Block:
    """One fenced code block of a Markdown text."""

    info: str
    """What follows the opening fence, e.g. ``python {.no-run}``."""
    code: str
    indent: str
    start: int
    """Index of the first content line (the line after the opening fence)."""
    end: int
    """Index of the closing fence line."""
    output: Block | None = None
    """The "Output" block that follows this one, if any."""

    @property
    def language(self) -> str:
        return self.info.strip().split(" ", 1)[0].lstrip("{").lstrip(".").lower()

    @property
    def is_python(self) -> bool:
        return self.language in ("python", "py")

    @property
    def is_pytest(self) -> bool:
        return self.is_python and ".pytest" in self.info

    @property
    def runs(self) -> bool:
        return self.is_python and not self.is_pytest and "no-run" not in self.info

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
        indent, fence = m["indent"], m["fence"]
        close = re.compile(rf"^{re.escape(indent)}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = [
            ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1 : j]
        ]
        blocks.append(
            Block(
                info=m["info"].strip(),
                code="\n".join(body) + "\n",
                indent=indent,
                start=i + 1,
                end=j,
            )
        )
        i = j + 1
    # An Output block belongs to the Python block just before it (only blank lines between).
    for prev, nxt in itertools.pairwise(blocks):
        if prev.runs and nxt.is_output:
            if all(not ln.strip() for ln in lines[prev.end + 1 : nxt.start - 1]):
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


# --- running examples ------------------------------------------------------------------------


def _run_block(block: Block, page: Page, namespace: dict[str, Any]) -> str:
    """Run one block in `namespace`; return what it printed."""
    source = "\n" * block.start + block.code  # tracebacks point at the page's own lines
    code = compile(
        source,
        str(page.path or page.name),
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            if code.co_flags & inspect.CO_COROUTINE:
                coroutine = eval(code, namespace)

                async def main() -> None:
                    await coroutine

                anyio.run(main)
            else:
                exec(code, namespace)
    except BaseException as exc:
        raise AssertionError(
            f"{page.name}: the example at line {block.start} raised "
            f"{type(exc).__name__}: {exc}\n\n{block.code}\nIt printed:\n{out.getvalue()}"
        ) from exc
    return out.getvalue()


def run_blocks(page: Page, module_name: str) -> list[tuple[Block, str]]:
    """Run the page's blocks in order in one fresh module; return each block with its stdout."""
    module = types.ModuleType(module_name)
    module.__file__ = str(page.path or f"<{module_name}>")
    sys.modules[module_name] = module  # pydantic and dataclasses look classes' modules up
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    try:
        return [(b, _run_block(b, page, module.__dict__)) for b in page.blocks if b.runs]
    finally:
        sys.modules.pop(module_name, None)
        sys.path[:] = saved_path
        # Forget modules an example wrote to a temporary directory and imported.
        tmp = tempfile.gettempdir()
        for name in set(sys.modules) - saved_modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(tmp):
                del sys.modules[name]


def _normalise(text: str) -> str:
    return "\n".join(ln.rstrip() for ln in text.strip("\n").splitlines())


def check_outputs(page: Page, printed: list[tuple[Block, str]]) -> None:
    """Compare each Output block with what its example printed (or rewrite it when updating)."""
    mismatches: list[str] = []
    edits: list[tuple[Block, str]] = []
    for block, text in printed:
        if block.output is None:
            continue
        shown, actual = _normalise(block.output.code), _normalise(text)
        if shown == actual:
            continue
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
            lines[out.start : out.end] = [
                (out.indent + ln) if ln else "" for ln in actual.splitlines()
            ]
        page.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not mismatches, (
        f"{page.name}: an Output block is out of date (KODE_DOCS_UPDATE=1 rewrites them)\n\n"
        + "\n\n".join(mismatches)
    )


# --- the pages -------------------------------------------------------------------------------


def _doc_pages() -> list[Page]:
    pages = []
    for path in sorted(DOCS.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        name = str(path.relative_to(ROOT))
        pages.append(Page(name=name, path=path, blocks=parse_blocks(lines), lines=lines))
    return pages


DOC_PAGES = _doc_pages()
PYTEST_BLOCKS = [(p, b) for p in DOC_PAGES for b in p.blocks if b.is_pytest]


def test_docs_have_examples() -> None:
    assert DOC_PAGES, "no pages found in docs/"
    assert any(b.runs for p in DOC_PAGES for b in p.blocks), "no Python examples in docs/"


SCRIPT = (
    "**How to run the examples:** the examples on this page are one script: put them in one "
    "file, in order, and run it with `python`."
)
NOTEBOOK = (
    "**How to run the examples:** the examples on this page are the cells of one notebook, run "
    "in order; some use `await` at the top level, which Jupyter and IPython allow (in a script, "
    "put them in an `async def main()` and call `anyio.run(main)`)."
)
FILES = (
    "**How to run the examples:** each example on this page is a file, saved under the name the "
    "page gives it, and the commands shown run in the folder that holds them; the page's "
    "transcripts are what they print (a test runs them)."
)
_MODE_PREFIX = "**How to run the examples:**"


def page_mode(page: Page) -> str:
    """'script' or 'notebook': what the page says at its top, before its first example."""
    text = " ".join(" ".join(page.lines).split())
    modes = (("script", SCRIPT), ("notebook", NOTEBOOK), ("files", FILES))
    said = [mode for mode, sentence in modes if sentence in text]
    assert text.count(_MODE_PREFIX) == 1 and len(said) == 1, (
        f"{page.name}: a page with examples says once, at its top, how they run: "
        f"one of\n{SCRIPT}\n{NOTEBOOK}\n{FILES}"
    )
    first = next(b for b in page.blocks if b.runs)
    said_at = next(i for i, ln in enumerate(page.lines) if _MODE_PREFIX in ln)
    assert said_at < first.start, (
        f"{page.name}: say how the examples run before the first one (line {first.start})"
    )
    return said[0]


def _example_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["KODE_HOME"] = str(home)  # nothing of the user's own kode settings or memory
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SEPARATOR = "\x1e-- kode docs block {} --\x1e"


def run_as_script(page: Page, workdir: Path) -> list[tuple[Block, str]]:
    """Run the page's examples as one file with `python`; return each block with its stdout.

    Each block's code sits at its own line of the page (a print that marks where its output
    starts goes on the line of its opening fence), so a traceback names the page's lines.
    """
    runs = [b for b in page.blocks if b.runs]
    lines: list[str] = []
    for index, block in enumerate(runs):
        lines.extend([""] * (block.start - 1 - len(lines)))
        lines.append(f"print({_SEPARATOR.format(index)!r}, flush=True)")
        lines.extend(block.code.rstrip("\n").split("\n"))
    script = workdir / (page.path.name if page.path else "page")
    script = script.with_suffix(".md.py")
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    home = workdir / "kode-home"
    home.mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env=_example_env(home),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    pieces = re.split(r"\x1e-- kode docs block (\d+) --\x1e\n", proc.stdout)
    printed = {int(pieces[i]): pieces[i + 1] for i in range(1, len(pieces) - 1, 2)}
    if proc.returncode != 0:
        failed = runs[max(printed, default=0)]
        raise AssertionError(
            f"{page.name}: run as one script, the example at line {failed.start} failed "
            f"(line numbers are the page's):\n{proc.stderr[-6000:]}\n\n{failed.code}\n"
            f"It printed:\n{printed.get(runs.index(failed), '')}"
        )
    return [(block, printed.get(i, "")) for i, block in enumerate(runs)]


def run_as_notebook(page: Page, workdir: Path) -> list[tuple[Block, str]]:
    """Run the page's examples as the cells of one notebook in a real Jupyter kernel."""
    nbformat = pytest.importorskip("nbformat", reason="notebook pages need the test extras")
    nbclient = pytest.importorskip("nbclient", reason="notebook pages need the test extras")
    runs = [b for b in page.blocks if b.runs]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(b.code.rstrip("\n")) for b in runs]
    home = workdir / "kode-home"
    home.mkdir(exist_ok=True)
    client = nbclient.NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_example_env(home))  # the kernel inherits this environment
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        index = next(
            (
                i
                for i, c in enumerate(notebook.cells)
                if any(o.get("output_type") == "error" for o in c.get("outputs", []))
            ),
            0,
        )
        raise AssertionError(
            f"{page.name}: run as a notebook, the example at line {runs[index].start} "
            f"failed:\n{_ANSI.sub('', str(exc))}"
        ) from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    printed = []
    for block, cell in zip(runs, notebook.cells, strict=True):
        out = "".join(
            o["text"]
            for o in cell.get("outputs", [])
            if o.get("output_type") == "stream" and o.get("name") == "stdout"
        )
        printed.append((block, out))
    return printed


@pytest.mark.parametrize("page", [p for p in DOC_PAGES if any(b.runs for b in p.blocks)], ids=repr)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_client's own, at start-up
def test_docs_page_examples(page: Page, tmp_path: Path) -> None:
    assert page.path is not None
    mode = page_mode(page)
    if mode == "script":
        printed = run_as_script(page, tmp_path)
    elif mode == "files":
        # Each file on its own, beside the page's other files (tests/test_cli_docs.py checks the
        # transcripts of the commands that use them).
        from test_cli_docs import FILES

        for name, text in FILES.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text, encoding="utf-8")
        printed = []
        for block in (b for b in page.blocks if b.runs):
            alone = Page(name=page.name, path=page.path, blocks=[block], lines=page.lines)
            printed += run_as_script(alone, tmp_path)
    else:
        printed = run_as_notebook(page, tmp_path)
    check_outputs(page, printed)


@pytest.mark.parametrize("page", DOC_PAGES, ids=repr)
def test_docs_output_blocks_follow_examples(page: Page) -> None:
    owned = {id(b.output) for b in page.blocks if b.output is not None}
    orphans = [b.start for b in page.blocks if b.is_output and id(b) not in owned]
    assert not orphans, f"{page.name}: Output blocks at lines {orphans} follow no Python example"


def test_docs_unrun_examples_are_rare() -> None:
    python = [b for p in DOC_PAGES for b in p.blocks if b.is_python]
    skipped = [b for b in python if not b.runs and not b.is_pytest]
    assert len(skipped) <= max(2, len(python) // 20), "keep {.no-run} examples rare"


@pytest.mark.parametrize(
    ("page", "block"), PYTEST_BLOCKS, ids=[f"{p.name}:{b.start}" for p, b in PYTEST_BLOCKS]
)
def test_docs_pytest_examples(page: Page, block: Block, tmp_path: Path) -> None:
    test_file = tmp_path / "test_docs_example.py"
    test_file.write_text(block.code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{page.name}: the test at line {block.start} failed:\n{proc.stdout}\n{proc.stderr}"
    )


# --- docstring examples ------------------------------------------------------------------------


def _docstrings() -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of every kode module, class, method, property and function."""
    seen: set[int] = set()
    for info in pkgutil.walk_packages(kode.__path__, "kode."):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("kode"):
                continue  # needs an optional extra that is not installed
            raise
        if module.__doc__:
            yield info.name, module.__doc__
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) != info.name or id(value) in seen:
                continue
            seen.add(id(value))
            if inspect.isclass(value):
                if value.__doc__:
                    yield f"{info.name}.{attr}", value.__doc__
                for member_name, member in list(vars(value).items()):  # a deferred model builds
                    target = member.fget if isinstance(member, property) else member
                    target = getattr(target, "__func__", target)
                    doc = getattr(target, "__doc__", None) if callable(target) else None
                    if doc and doc is not value.__doc__:
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


def test_docstring_examples_found() -> None:
    assert DOCSTRING_PAGES, "no ```python examples found in kode's docstrings"


@pytest.mark.parametrize("page", DOCSTRING_PAGES, ids=repr)
def test_docstring_examples(page: Page, isolated_registry: kode.ToolRegistry) -> None:
    run_blocks(page, "docstring_" + page.name.replace(".", "_"))


# --- the site ----------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    missing = [
        m for m in ("mkdocs", "material", "mkdocstrings") if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.skip(
            f"the docs extras are not installed ({', '.join(missing)}): "
            "pip install -e '.[docs]' to build the site"
        )
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    # The API reference opens define_tool with its description: no overloads or signature
    # before it, and no private name among its parameters' types and defaults.
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    start = api.index('id="kode.registries.define.define_tool"')
    section = api[start : api.index('id="kode.registries.define.tool"', start)]
    description = section.index("Turn a typed, documented function into a")
    assert "Parameters:" in section[description:]
    assert "doc-overloads" not in section
    assert "doc-signature" not in section[:description]
    assert re.findall(r"\b_[A-Za-z]\w*", re.sub(r"<[^>]+>", " ", section)) == []


# --- the harness itself ------------------------------------------------------------------------


def test_parse_blocks() -> None:
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

        !!! note
            ```python {.pytest}
            def test_it(): pass
            ```
        """
    ).splitlines()
    first, output, skipped, test = parse_blocks(text)
    assert first.runs and first.output is output and output.code == "hi\n"
    assert not skipped.runs and not skipped.is_pytest
    assert test.is_pytest and not test.runs and test.code == "def test_it(): pass\n"
