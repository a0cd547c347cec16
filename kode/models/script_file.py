"""The former home of the script file format, kept for code that imports it from here.

`ScriptError`, `load_script` and `parse_script` live in `kode.models.scripted`, beside the
`ScriptedModel` that plays what they read; this module gives the very same objects.
"""

from __future__ import annotations

from kode.models.scripted import ScriptError, load_script, parse_script

__all__ = ["ScriptError", "load_script", "parse_script"]
