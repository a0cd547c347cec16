"""examples/plugin_package, built and pip-installed into a fresh venv, used by an agent."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_example_plugin_installs_and_an_agent_uses_it(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the example plugin needs hatchling")
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "-w",
            str(wheels),
            str(ROOT / "examples" / "plugin_package"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("kode_weather-*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    # kode and pip come from the test environment; the plugin is installed into the venv
    host = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (site_packages / "_host.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in host)
    )
    install = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert install.returncode == 0, install.stderr

    run = subprocess.run(
        [python, str(ROOT / "examples" / "use_plugin.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert "plugin weather: loaded, tools ['forecast', 'storm_warnings']" in out
    assert "  + forecast (plugin: weather)" in out
    assert any("storm_warnings: optional" in line for line in out)
    assert out[-1] == "agent: Lyon: sunny tomorrow."

    # without the plugin installed, the example says how to install it
    bare = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "use_plugin.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "pip install examples/plugin_package" in bare.stdout
