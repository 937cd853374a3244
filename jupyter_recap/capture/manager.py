"""Which capture sources run in this kernel, and their status lines."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterable
from types import ModuleType

from ..debuglog import get_logger
from ..settings import SOURCE_NAMES
from .runs import RunHub
from .sources import Source, State, chosen, is_installed, when_imported

#: Every source's class, as "module:Class"; the names and their order are
#: :data:`~jupyter_recap.settings.SOURCE_NAMES`, which the settings check without loading this.
SOURCE_CLASSES: dict[str, str] = {
    "openai-agents": "openai_agents:OpenAIAgentsSource",
    "pydantic-ai": "pydantic_ai:PydanticAISource",
    "langchain": "langchain:LangChainSource",
    "smolagents": "smolagents:SmolagentsSource",
    "opentelemetry": "otel:OpenTelemetrySource",
    "jupyter-ai": "jupyter_ai:JupyterAISource",
}


#: The imports that bring each source's framework in (its class's ``module`` and
#: ``also_modules``, which a test checks against this): the sources are watched by these names
#: alone, so no source module loads before its framework is imported.
SOURCE_MODULES: dict[str, tuple[str, ...]] = {
    "openai-agents": ("agents",),
    "pydantic-ai": ("pydantic_ai",),
    "langchain": ("langchain_core",),
    "smolagents": ("smolagents",),
    "opentelemetry": ("opentelemetry.sdk.trace",),
    "jupyter-ai": ("jupyter_ai_magics", "jupyter_ai_magic_commands"),
}


def source_class(name: str) -> type[Source]:
    """The class of the source called ``name`` (its module imports no framework)."""
    spec = SOURCE_CLASSES[name]
    module_name, class_name = spec.split(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    cls: type[Source] = getattr(module, class_name)
    return cls


class Capture:
    """The sources of one kernel: started with the extension, stopped with it.

    A source object (and its module) is made when its framework is imported, or when
    :attr:`sources` is read (``%recap status``): until then a source is only the names of
    the imports it waits for, and what state it would be in.
    """

    def __init__(self, hub: RunHub) -> None:
        self.hub = hub
        self._sources: dict[str, Source] = {}
        self._planned: dict[str, State] = {}
        """The state of each selected-or-not source not made yet ("waiting", "off",
        "missing")."""
        self._lock = threading.Lock()
        self._cancels: list[Callable[[], None]] = []

    @property
    def sources(self) -> dict[str, Source]:
        """Every source, by name, in :data:`SOURCE_NAMES` order (made now if not yet)."""
        for name in list(self._planned):
            self._made(name)
        return {name: self._sources[name] for name in SOURCE_NAMES if name in self._sources}

    def start(self, names: Iterable[str]) -> None:
        """Watch for the frameworks of the sources ``names`` selects (``"all"``: every one)."""
        selected = chosen(names, SOURCE_NAMES)
        for name in SOURCE_NAMES:
            if name not in selected:
                self._planned[name] = "off"
                continue
            installed = [module for module in SOURCE_MODULES[name] if is_installed(module)]
            self._planned[name] = "waiting" if installed else "missing"
            for module in installed:
                self._cancels.append(when_imported(module, functools.partial(self._imported, name)))

    def _imported(self, name: str, module: ModuleType) -> None:
        """A framework of source ``name`` was imported: make the source and install it."""
        source = self._made(name)
        if source is not None:
            source.activate(module)

    def _made(self, name: str) -> Source | None:
        """The source ``name``, made now (in its planned state) if it was not yet."""
        with self._lock:
            source = self._sources.get(name)
            if source is not None:
                return source
            state = self._planned.pop(name, None)
            if state is None:
                return None
            try:
                source = source_class(name)(self.hub)
            except Exception:  # noqa: BLE001 - one broken source must not stop the others
                get_logger().exception("capture: source %s could not be created", name)
                return None
            if state != "waiting":
                source.state = state
            self._sources[name] = source
            return source

    def stop(self) -> None:
        """Stop every source (their hooks become no-ops where the framework keeps them)."""
        for cancel in self._cancels:
            cancel()
        self._cancels.clear()
        for source in list(self._sources.values()):
            if source.state == "active":
                source.state = "off"
                try:
                    source.uninstall()
                except Exception:  # noqa: BLE001
                    get_logger().exception("capture: uninstalling %s failed", source.name)

    def restart(self, names: Iterable[str]) -> None:
        """Apply a new ``Recap.capture`` selection."""
        self.stop()
        self._sources.clear()
        self._planned.clear()
        self.start(names)

    def source(self, name: str) -> Source | None:
        """The source called ``name`` if it is recording (never made here: one that was not
        made has not seen its framework imported)."""
        source = self._sources.get(name)
        return source if source is not None and source.on else None

    def lines(self) -> list[str]:
        """One line per installed or selected source, for ``%recap status``."""
        return [s.describe() for s in self.sources.values() if s.state != "missing"]
