"""Plugins: real entry points (``kode.plugins``), explicit loading, and every conflict rule."""

from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.util
import json
import logging
import site
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kode import ToolRegistry, define_tool, registry
from kode.registries import Diagnostic, ToolSource
from kode.registries.plugins import ENTRY_POINT_GROUP, PluginApi, load_plugin, load_plugins

WriteFunc = Callable[[str, str], Path]


def _tool(name: str, answer: str = "", **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return answer or name

    return define_tool(fn, name=name, registry=None, **options)


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriteFunc]:
    """Write files under a directory on sys.path; forget the modules imported from it after."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)

    def write_file(relative: str, text: str) -> Path:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        importlib.invalidate_caches()
        return path

    yield write_file
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _dist_info(write: WriteFunc, dist: str, entry_points: dict[str, str]) -> None:
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    write(f"{dist}-0.1.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    write(f"{dist}-0.1.dist-info/entry_points.txt", f"[{ENTRY_POINT_GROUP}]\n{lines}")


WEATHER = '''
    from kode import define_tool

    @define_tool(kind="fetch", groups=["group:web"])
    def forecast(city: str) -> str:
        """Tell the weather forecast for a city."""
        return f"sunny in {city}"

    @define_tool(registry=None)
    def radar(city: str) -> str:
        """Show the rain radar."""
        return f"radar of {city}"

    def register(api):
        api.register_tool(forecast)
        api.register_tool(radar, optional=True)
'''


# --- discovery through real entry points ------------------------------------------------------


def test_an_installed_entry_point_is_loaded_with_its_name_as_plugin_id(
    write: WriteFunc, isolated_registry: ToolRegistry
) -> None:
    write("kp_weather/__init__.py", WEATHER)
    _dist_info(write, "kp_weather", {"weather": "kp_weather:register"})

    reports = load_plugins()
    assert [(r.plugin_id, r.registered, r.loaded) for r in reports] == [
        ("weather", ["forecast", "radar"], True)
    ]
    # forecast was defined with a bare @define_tool (a user tool) and became the plugin's
    meta = registry.meta("forecast")
    assert (meta.source, meta.plugin_id, meta.groups) == (
        ToolSource.PLUGIN,
        "weather",
        ("group:web", "group:plugins"),
    )
    assert registry.meta("radar").optional is True
    assert registry.resolve(["weather"]).names == ["forecast", "radar"]
    assert registry.resolve(["*"]).names == ["forecast"]
    assert registry.diagnostics == []


def test_plugins_load_in_name_order_and_a_broken_one_does_not_stop_the_others(
    write: WriteFunc, caplog: pytest.LogCaptureFixture, isolated_registry: ToolRegistry
) -> None:
    write("kp_weather/__init__.py", WEATHER)
    write(
        "kp_broken.py",
        '''
        from kode import define_tool

        @define_tool
        def half_done() -> str:
            """Defined before the import failed."""
            return ""

        raise ImportError("missing dependency 'leftpad'")
        ''',
    )
    _dist_info(
        write,
        "kp_multi",
        {"zweather": "kp_weather:register", "broken": "kp_broken:register"},
    )
    tools = ToolRegistry()
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        reports = load_plugins(registry=tools)
    assert [(r.plugin_id, r.loaded) for r in reports] == [("broken", False), ("zweather", True)]
    message = "plugin 'broken' could not be loaded: ImportError: missing dependency 'leftpad'"
    assert tools.diagnostics == [
        Diagnostic(level="error", source=ToolSource.PLUGIN, plugin_id="broken", message=message)
    ]
    assert caplog.messages == [f"error [broken]: {message}"]
    assert tools.names() == ["forecast", "radar"]
    # the half-imported module's tool was taken back from the global registry too
    assert "half_done" not in registry


def test_a_group_with_no_entry_points_loads_nothing() -> None:
    tools = ToolRegistry()
    assert load_plugins(registry=tools, group="kode.tests.nothing-here") == []
    assert tools.diagnostics == []


def test_a_pip_installed_plugin_is_found_in_a_fresh_venv(tmp_path: Path) -> None:
    """Build a wheel, `pip install` it into a new venv, and load it from a new interpreter."""
    if importlib.util.find_spec("pip") is None:  # a venv made without pip (uv's default)
        pytest.skip("pip is not installed in the test environment")
    dist_info = "kp_tides-0.1.dist-info"
    files = {
        "kp_tides/__init__.py": textwrap.dedent(
            '''
            from kode import define_tool

            @define_tool(registry=None)
            def tide(port: str) -> str:
                """Tell the next high tide."""
                return f"high tide at {port} at noon"

            def register(api):
                api.register_tool(tide)
            '''
        ),
        f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: kp-tides\nVersion: 0.1\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: kode-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{dist_info}/entry_points.txt": f"[{ENTRY_POINT_GROUP}]\ntides = kp_tides:register\n",
    }

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = [f"{name},{digest(text)},{len(text.encode())}" for name, text in files.items()]
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    wheel = tmp_path / "kp_tides-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    # kode, pip and their dependencies come from the test environment, the plugin from the venv
    host = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (site_packages / "_host.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in host)
    )
    pip = subprocess.run(
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
        check=False,
    )
    assert pip.returncode == 0, pip.stderr
    assert (site_packages / dist_info / "entry_points.txt").is_file()

    script = textwrap.dedent(
        """
        import json
        from kode import ToolRegistry
        from kode.registries.plugins import load_plugins

        tools = ToolRegistry()
        reports = load_plugins(registry=tools)
        resolution = tools.resolve(["tides"])
        print(json.dumps({
            "reports": [[r.plugin_id, r.registered, r.loaded] for r in reports],
            "names": resolution.names,
            "source": tools.meta("tide").source,
            "answer": tools.get("tide").run_sync({"port": "Brest"}).text,
        }))
        """
    )
    run = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {
        "reports": [["tides", ["tide"], True]],
        "names": ["tide"],
        "source": "plugin",
        "answer": "high tide at Brest at noon",
    }
    # and the test environment itself never saw it
    assert "tides" not in [r.plugin_id for r in load_plugins(registry=ToolRegistry())]


# --- explicit loading -------------------------------------------------------------------------


def test_load_plugin_from_a_module_a_string_and_a_callable(write: WriteFunc) -> None:
    write("kp_explicit/weather.py", WEATHER)
    write("kp_explicit/__init__.py", "")
    module = importlib.import_module("kp_explicit.weather")

    tools = ToolRegistry()
    assert load_plugin(module, registry=tools).plugin_id == "weather"
    assert tools.meta("radar").plugin_id == "weather"

    tools = ToolRegistry()
    report = load_plugin("kp_explicit.weather:register", plugin_id="Wx", registry=tools)
    assert (report.plugin_id, report.registered, report.loaded) == (
        "wx",
        ["forecast", "radar"],
        True,
    )

    tools = ToolRegistry()
    assert load_plugin("kp_explicit.weather", registry=tools).plugin_id == "weather"
    # the function `register` of a module: the id is the module's name, not "register"
    tools = ToolRegistry()
    assert load_plugin(module.register, registry=tools).plugin_id == "weather"


def test_a_plain_callable_plugin_and_its_api() -> None:
    tools = ToolRegistry()
    seen: list[PluginApi] = []

    def notes_plugin(api: PluginApi) -> None:
        seen.append(api)
        api.register_tool(_tool("note_add"))
        api.register_tool(lambda ctx: _tool("note_list"), names=["note_list"])

    report = load_plugin(notes_plugin, registry=tools)
    assert (report.plugin_id, report.registered) == ("notes_plugin", ["note_add", "note_list"])
    assert (seen[0].plugin_id, seen[0].registry) == ("notes_plugin", tools)
    assert tools.meta("note_list").factory and tools.meta("note_list").plugin_id == "notes_plugin"
    assert tools.resolve(["group:plugins"]).names == ["note_add", "note_list"]


def test_a_missing_module_or_function_is_an_error_diagnostic() -> None:
    tools = ToolRegistry()
    assert not load_plugin("kp_no_such_module:register", registry=tools).loaded
    assert not load_plugin("json:no_such_function", plugin_id="nofunc", registry=tools).loaded
    assert not load_plugin("json", plugin_id="nothing", registry=tools).loaded
    assert [(d.level, d.plugin_id, d.message) for d in tools.diagnostics] == [
        (
            "error",
            "kp_no_such_module",
            "plugin 'kp_no_such_module' could not be loaded: ModuleNotFoundError: "
            "No module named 'kp_no_such_module'",
        ),
        (
            "error",
            "nofunc",
            "plugin 'nofunc' could not be loaded: AttributeError: module 'json' has no "
            "attribute 'no_such_function'",
        ),
        (
            "error",
            "nothing",
            "plugin 'nothing' could not be loaded: TypeError: module 'json' has no plugin "
            "function: define register(api)",
        ),
    ]


# --- bad plugins ------------------------------------------------------------------------------


def test_an_empty_plugin_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    tools = ToolRegistry()
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin(lambda api: None, plugin_id="hollow", registry=tools)
    assert (report.loaded, report.registered) == (False, [])
    assert tools.diagnostics == [
        Diagnostic(
            level="warning",
            source=ToolSource.PLUGIN,
            plugin_id="hollow",
            message="plugin 'hollow' registered no tools",
        )
    ]
    assert caplog.messages == ["warning [hollow]: plugin 'hollow' registered no tools"]


def test_a_plugin_that_raises_registers_nothing(
    write: WriteFunc, caplog: pytest.LogCaptureFixture, isolated_registry: ToolRegistry
) -> None:
    write(
        "kp_flaky.py",
        '''
        from kode import define_tool

        @define_tool
        def flaky_status() -> str:
            """Defined with a bare decorator when the module is imported."""
            return ""

        def register(api):
            api.register_tool(flaky_status)
            api.register_tool(api.registry.get("flaky_status"), optional=True)
            raise RuntimeError("config file missing")
        ''',
    )
    registry.register(_tool("kept"))
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin("kp_flaky:register", plugin_id="flaky")
    assert (report.loaded, report.registered) == (False, [])
    message = (
        "plugin 'flaky' raised RuntimeError: config file missing; none of its tools were registered"
    )
    assert registry.diagnostics == [
        Diagnostic(level="error", source=ToolSource.PLUGIN, plugin_id="flaky", message=message)
    ]
    assert caplog.messages == [f"error [flaky]: {message}"]
    assert registry.names() == ["kept"]  # nothing lost, nothing half-added


def test_register_tool_with_garbage_makes_the_plugin_fail() -> None:
    tools = ToolRegistry()

    def plugin(api: PluginApi) -> None:
        api.register_tool(_tool("fine"))
        api.register_tool(42)  # type: ignore[arg-type]

    assert not load_plugin(plugin, plugin_id="junk", registry=tools).loaded
    assert tools.names() == []
    assert [d.message for d in tools.diagnostics] == [
        "plugin 'junk' raised TypeError: plugin 'junk': register_tool needs a Tool or a "
        "factory, got int; none of its tools were registered"
    ]

    def names_as_string(api: PluginApi) -> None:
        api.register_tool(lambda ctx: None, names="x")

    assert not load_plugin(names_as_string, plugin_id="str-names", registry=tools).loaded
    assert "names must be a list, got 'x'" in tools.diagnostics[-1].message


@pytest.mark.parametrize(
    ("plugin_id", "shown"),
    [("bad id!", "bad id!"), ("", ""), ("-dash", "-dash"), ("x" * 65, "x" * 65)],
)
def test_an_invalid_plugin_id_is_an_error(plugin_id: str, shown: str) -> None:
    tools = ToolRegistry()
    called: list[bool] = []
    report = load_plugin(lambda api: called.append(True), plugin_id=plugin_id, registry=tools)
    assert not report.loaded and called == []
    assert tools.diagnostics == [
        Diagnostic(
            level="error",
            source=ToolSource.PLUGIN,
            plugin_id=shown or None,
            message=f"plugin id {shown!r} is invalid: use 1-64 lower-case letters, digits, "
            "'_', '.' or '-', starting with a letter or digit",
        )
    ]


def test_a_plugin_whose_id_is_a_core_tools_name_is_blocked_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec"), source="core")
    called: list[bool] = []

    def plugin(api: PluginApi) -> None:
        called.append(True)
        api.register_tool(_tool("innocent"))

    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin(plugin, plugin_id="EXEC", registry=tools)
    assert (report.loaded, called, tools.names()) == (False, [], ["exec"])
    message = (
        "plugin 'exec' blocked: its id is the name of a core tool, so its patterns would be "
        "ambiguous; rename the plugin"
    )
    assert tools.diagnostics == [
        Diagnostic(level="error", source=ToolSource.PLUGIN, plugin_id="exec", message=message)
    ]
    assert caplog.messages == [f"error [exec]: {message}"]


def test_a_plugin_tool_colliding_with_a_core_tool_loses(caplog: pytest.LogCaptureFixture) -> None:
    tools = ToolRegistry()
    core = _tool("fs_read", "core")
    tools.register(core, source="core")

    def plugin(api: PluginApi) -> None:
        api.register_tool(_tool("fs_read", "plugin"))
        api.register_tool(_tool("fs_grep"))

    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin(plugin, plugin_id="fs-extra", registry=tools)
    assert (report.loaded, report.registered) == (True, ["fs_grep"])
    assert tools.get("fs_read") is core
    message = (
        "plugin tool 'fs_read' skipped: the name is taken by a core tool "
        "(core tools win over plugin tools)"
    )
    assert tools.diagnostics == [
        Diagnostic(level="warning", source=ToolSource.PLUGIN, plugin_id="fs-extra", message=message)
    ]
    assert caplog.messages == [f"warning [fs-extra]: {message}"]


def test_a_core_tool_registered_after_a_plugin_tool_replaces_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    load_plugin(
        lambda api: api.register_tool(_tool("fetch", "plugin")), plugin_id="early", registry=tools
    )
    core = _tool("fetch", "core")
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        tools.register(core, source="core")
    assert tools.get("fetch") is core and tools.meta("fetch").source is ToolSource.CORE
    message = (
        "core tool 'fetch' replaces the tool of the same name from plugin 'early': core tools "
        "win over plugin tools"
    )
    assert tools.diagnostics == [
        Diagnostic(level="warning", source=ToolSource.PLUGIN, plugin_id="early", message=message)
    ]
    assert caplog.messages == [f"warning [early]: {message}"]


def test_two_plugins_with_the_same_tool_name_keep_the_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    shared = _tool("translate", "shared")
    load_plugin(
        lambda api: api.register_tool(_tool("translate", "a")), plugin_id="a", registry=tools
    )
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin(
            lambda api: api.register_tool(_tool("translate", "b")), plugin_id="b", registry=tools
        )
        load_plugin(lambda api: api.register_tool(shared), plugin_id="c", registry=tools)
        load_plugin(lambda api: api.register_tool(shared), plugin_id="d", registry=tools)
    assert (report.loaded, report.registered) == (True, [])
    assert tools.meta("translate").plugin_id == "a"
    assert tools.get("translate").run_sync().text == "a"
    expected = [
        (
            "b",
            "plugin tool 'translate' skipped: the name is taken by plugin 'a' "
            "(the tool registered first is kept)",
        ),
        (
            "c",
            "plugin tool 'translate' skipped: the name is taken by plugin 'a' "
            "(the tool registered first is kept)",
        ),
        (
            "d",
            "plugin tool 'translate' skipped: the name is taken by plugin 'a' "
            "(the tool registered first is kept)",
        ),
    ]
    assert [(d.plugin_id, d.message) for d in tools.diagnostics] == expected
    assert caplog.messages == [f"warning [{p}]: {m}" for p, m in expected]


def test_loading_the_same_plugin_twice_is_quiet() -> None:
    tools = ToolRegistry()
    shared = _tool("translate")
    for _ in range(2):
        report = load_plugin(lambda api: api.register_tool(shared), plugin_id="a", registry=tools)
        assert report.registered == ["translate"]
    assert tools.diagnostics == []


def test_a_user_tool_defined_bare_in_a_plugin_module_becomes_the_plugins(
    write: WriteFunc, isolated_registry: ToolRegistry
) -> None:
    write("kp_bare.py", WEATHER)
    import kp_bare  # type: ignore[import-not-found]

    assert registry.meta("forecast").source is ToolSource.USER  # imported, not yet loaded
    load_plugin(kp_bare, plugin_id="bare")
    assert registry.meta("forecast").source is ToolSource.PLUGIN
    assert registry.meta("forecast").plugin_id == "bare"
    assert registry.get("forecast") is kp_bare.forecast
    assert registry.diagnostics == []
