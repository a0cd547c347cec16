"""An example kode plugin: two weather tools, registered through the ``kode.plugins`` entry point.

Install it (``pip install examples/plugin_package``) and any agent can list ``weather`` (the
plugin id), ``group:plugins`` or the tool names in its template.
"""

from __future__ import annotations

from typing import Literal

from kode import define_tool
from kode.registries.plugins import PluginApi

_FORECASTS = {"lyon": ("sunny", 24), "oslo": ("snow", -3), "brest": ("rain", 12)}


@define_tool(registry=None, kind="fetch")
def forecast(city: str, units: Literal["C", "F"] = "C") -> str:
    """Tomorrow's weather for a city.

    Args:
        city: The city's name.
        units: Celsius or Fahrenheit.
    """
    sky, celsius = _FORECASTS.get(city.lower(), ("unknown", 0))
    degrees = celsius if units == "C" else round(celsius * 9 / 5 + 32)
    return f"{city}: {sky}, {degrees} °{units}"


@define_tool(registry=None, kind="fetch")
def storm_warnings(region: str) -> list[str]:
    """Active storm warnings for a region.

    Args:
        region: The region's name.
    """
    return ["gale warning"] if region.lower() == "brittany" else []


def register(api: PluginApi) -> None:
    """The plugin: kode calls this with a `PluginApi` when it loads plugins."""
    api.register_tool(forecast)
    api.register_tool(storm_warnings, optional=True)  # only when named explicitly
