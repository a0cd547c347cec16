"""Load installed plugins and let an agent use a plugin's tools (offline, scripted model).

Install the example plugin first:  pip install examples/plugin_package
Then run:                          python examples/use_plugin.py
"""

from __future__ import annotations

from kode import Agent, AgentTemplate, ToolRegistry
from kode.models import ScriptedModel, tool_use
from kode.registries.plugins import load_plugins


def main() -> None:
    tools = ToolRegistry("plugins")
    for report in load_plugins(registry=tools):
        state = "loaded" if report.loaded else "NOT loaded"
        print(f"plugin {report.plugin_id}: {state}, tools {report.registered}")
    for diagnostic in tools.diagnostics:
        print(f"  {diagnostic}")
    if "forecast" not in tools:
        print("The example plugin is not installed: pip install examples/plugin_package")
        return

    # "*" selects every tool but the optional ones; naming the plugin id ("weather") or
    # "group:plugins" would include storm_warnings too.
    template = AgentTemplate(id="weather", tools=["*"])
    model = ScriptedModel([[tool_use("forecast", {"city": "Lyon"})], "Lyon: sunny tomorrow."])
    agent = Agent.create(template, model=model, registry=tools)
    print(agent.resolution.explain())
    reply = agent.send_sync("Weather in Lyon tomorrow?")
    print("agent:", reply.text)


if __name__ == "__main__":
    main()
