"""``kode tools check`` tries every module it is given: each one that cannot be imported is
reported with the file and line of the error, the tools of the others are still checked, and
the exit code says so at the end. A real ``python -m kode`` subprocess on real files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

FILES = {
    "untyped.py": '''
        from kode import define_tool


        @define_tool
        def alpha(x) -> str:
            """Alpha."""
            return "a"
    ''',
    "broken.py": """
        import json

        def f(:
            pass
    """,
    "missing_import.py": """
        from kode import define_tool
        import a_module_that_is_not_there
    """,
    "fails_at_import.py": """
        def configure():
            raise RuntimeError("the settings file is missing")


        configure()
    """,
    "fine.py": '''
        from kode import define_tool


        @define_tool
        def delta(x: int) -> str:
            """Delta.

            Args:
                x: A number.
            """
            return "d"


        @define_tool
        def epsilon(y: int) -> str:
            return "e"
    ''',
}


def test_check_reports_every_module_that_cannot_be_imported_with_file_and_line(
    tmp_path: Path,
) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    modules = [*FILES, "not_a_file.py"]
    out = subprocess.run(
        [sys.executable, "-m", "kode", "tools", "check", *modules],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "untyped.py:4: cannot import 'untyped.py': ToolDefinitionError: alpha: parameter 'x' "
        "has no type annotation",
        "broken.py:3: cannot import 'broken.py': SyntaxError: invalid syntax (broken.py, line 3)",
        "missing_import.py:2: cannot import 'missing_import.py': ModuleNotFoundError: No module "
        "named 'a_module_that_is_not_there'",
        "fails_at_import.py:2: cannot import 'fails_at_import.py': RuntimeError: the settings "
        "file is missing",
        "not_a_file.py: cannot import 'not_a_file.py': ImportError: no such file: not_a_file.py",
        "epsilon: has no description (write a docstring or pass description=)",
        "epsilon: parameter 'y' has no description",
        "5 of 6 module(s) could not be imported; 2 problem(s) in the 2 tool(s) checked.",
    ]


def test_check_helpers_names_the_programs_kode_would_run_and_what_it_refused(
    tmp_path: Path,
) -> None:
    """A project whose activated ``.venv/bin`` (first on ``PATH``) has an ``rg`` the model wrote."""
    import os

    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    planted = bin_dir / "rg"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("KODE_RG", None)
    out = subprocess.run(
        [sys.executable, "-m", "kode", "tools", "check", "--helpers"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "rg",
        "bwrap",
        "chromium",
        "bash",
        "python",
        "sandbox",
    ]
    assert (
        f"refused {planted} (from PATH): it lives in the workspace ({tmp_path}), which the "
        "model can write"
    ) in lines[0]
    assert not lines[0].startswith(f"rg: {tmp_path}")
