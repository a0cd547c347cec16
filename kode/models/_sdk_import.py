"""A provider SDK imported when the first request needs it, not when kode or a model is made.

Importing ``anthropic`` takes seconds (``openai`` and ``google-genai`` most of one): a command
that never sends a request (``kode --help``, a template with a mistake, a scripted model) should
not pay for it, and an agent that does should not block its event loop while it loads. A
provider module names its SDK with `LazySDK`, and its model's ``stream`` awaits `load_sdks`
first, which imports what is not loaded yet in a worker thread (an attribute read before that,
e.g. a model's ``client`` outside any request, imports it there and then). A missing SDK is
still reported when the provider module is imported (`LazySDK` asks the import system whether it
can be found, which imports nothing).

A caller that knows a request will come (``kode run``, once its model is read) may start the
import sooner with `import_soon`: a daemon thread imports the model's SDKs while the caller
loads its tools and template, and the first request's `load_sdks` then waits for that import
rather than starting its own (each module is imported once, under its `LazySDK`'s lock).

This module does not make clients or requests.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

import anyio.to_thread

from kode.extras import install_hint

__all__ = ["LazySDK", "import_soon", "load_sdks"]

_OWN = frozenset({"_name", "_module", "_lock", "_missing", "_found_as", "_origin", "_soon"})


class LazySDK:
    """A module of a provider SDK, imported on first attribute access (or by `load`).

    Args:
        module: The module's dotted name.
        needed_by: What needs it, as the message of a missing SDK names it.
        extra: The extra of kode that installs it.
        found_as: The module whose presence is checked when made (default: `module`); for a
            submodule, its package, since finding a submodule imports the package.

    Raises:
        ImportError: when made, if the module cannot be found (the message names the extra).
    """

    def __init__(
        self, module: str, *, needed_by: str, extra: str, found_as: str | None = None
    ) -> None:
        self._name = module
        self._module: ModuleType | None = None
        self._lock = threading.Lock()
        self._missing = (
            f"{needed_by} needs the {module.split('.')[0]} SDK ({module} is not installed): "
            f"{install_hint(extra)}"
        )
        self._found_as = found_as or module
        found = self._find()
        if found is None:
            raise ImportError(self._missing, name=module)
        # Where the SDK is now. Imported later, it must come from there: a file that appeared
        # since in a directory on sys.path (a workspace that is the current directory, under
        # `python -m`) is not run in its place.
        self._origin = found.origin
        self._soon = False  # whether `import_soon` has started a thread for it

    def _find(self) -> importlib.machinery.ModuleSpec | None:
        try:
            # Finding a submodule imports its package: `found_as` names one that is cheap.
            return importlib.util.find_spec(self._found_as)
        except (ImportError, ValueError):
            return None

    @property
    def loaded(self) -> bool:
        """Whether the module has been imported."""
        return self._module is not None

    def load(self) -> ModuleType:
        """Import the module (once), and return it."""
        module = self._module
        if module is None:
            with self._lock:
                if self._module is None:
                    found = self._find()
                    if found is None or found.origin != self._origin:
                        where = "nowhere" if found is None else found.origin
                        raise ImportError(
                            f"{self._found_as} is now found at {where}, not at {self._origin} "
                            "where it was when the model was made: it is not imported",
                            name=self._name,
                        )
                    try:
                        self._module = importlib.import_module(self._name)
                    except ImportError as exc:
                        raise ImportError(self._missing, name=self._name) from exc
                module = self._module
        return module

    def __getattr__(self, name: str) -> Any:
        if name in _OWN:  # read before __init__ set it: no import for that
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"LazySDK({self._name!r}, loaded={self.loaded})"


async def load_sdks(*sdks: object) -> None:
    """Import those of `sdks` (`LazySDK` modules) not loaded yet, in a worker thread.

    A provider module passes the names it uses its SDK by; for the type checker they are the
    SDK's modules, which are loaded already.
    """
    waiting = [sdk for sdk in sdks if isinstance(sdk, LazySDK) and not sdk.loaded]
    if waiting:
        await anyio.to_thread.run_sync(lambda: [sdk.load() for sdk in waiting])


_SOON = threading.Lock()


def _import_quietly(sdks: list[LazySDK]) -> None:
    for sdk in sdks:
        try:
            sdk.load()
        except Exception:  # the first request's `load_sdks` tries again and reports it
            pass


def import_soon(model: object) -> bool:
    """Start importing the SDKs `model`'s provider module uses, in a daemon thread.

    The SDKs are the `LazySDK` modules of the module that defines `model`'s class (none for a
    model that is not a provider model, such as a scripted one). Each is started at most once,
    however often this is called; a failure is left for the first request to report, where it
    would have been reported anyway.

    Returns:
        Whether a thread was started (`False` when there was nothing left to import).
    """
    module = sys.modules.get(type(model).__module__)
    found = [v for v in vars(module).values() if isinstance(v, LazySDK)] if module else []
    with _SOON:
        waiting = [sdk for sdk in found if not sdk.loaded and not sdk._soon]
        for sdk in waiting:
            sdk._soon = True
    if not waiting:
        return False
    # A daemon: a command that ends (an error, Ctrl-C) does not wait for an import it no
    # longer needs.
    threading.Thread(
        target=_import_quietly, args=(waiting,), name="kode-sdk-import", daemon=True
    ).start()
    return True
