"""Which capture sources run in this kernel, and their status lines."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from ..debuglog import get_logger
from ..settings import SOURCE_NAMES
from .runs import RunHub
from .sources import Source, chosen, is_installed, when_imported

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


def source_class(name: str) -> type[Source]:
    """The class of the source called ``name`` (its module imports no framework)."""
    spec = SOURCE_CLASSES[name]
    module_name, class_name = spec.split(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    cls: type[Source] = getattr(module, class_name)
    return cls


class Capture:
    """The sources of one kernel: started with the extension, stopped with it."""

    def __init__(self, hub: RunHub) -> None:
        self.hub = hub
        self.sources: dict[str, Source] = {}
        self._cancels: list[Callable[[], None]] = []

    def start(self, names: Iterable[str]) -> None:
        """Watch for the frameworks of the sources ``names`` selects (``"all"``: every one)."""
        selected = chosen(names, SOURCE_NAMES)
        for name in SOURCE_NAMES:
            try:
                source = source_class(name)(self.hub)
            except Exception:  # noqa: BLE001 - one broken source must not stop the others
                get_logger().exception("capture: source %s could not be created", name)
                continue
            self.sources[name] = source
            if name not in selected:
                source.state = "off"
            else:
                modules = (source.module, *source.also_modules)
                installed = [module for module in modules if is_installed(module)]
                if not installed:
                    source.state = "missing"
                for module in installed:
                    self._cancels.append(when_imported(module, source.activate))

    def stop(self) -> None:
        """Stop every source (their hooks become no-ops where the framework keeps them)."""
        for cancel in self._cancels:
            cancel()
        self._cancels.clear()
        for source in self.sources.values():
            if source.state == "active":
                source.state = "off"
                try:
                    source.uninstall()
                except Exception:  # noqa: BLE001
                    get_logger().exception("capture: uninstalling %s failed", source.name)

    def restart(self, names: Iterable[str]) -> None:
        """Apply a new ``Recap.capture`` selection."""
        self.stop()
        self.sources.clear()
        self.start(names)

    def source(self, name: str) -> Source | None:
        """The source called ``name`` if it is recording."""
        source = self.sources.get(name)
        return source if source is not None and source.on else None

    def lines(self) -> list[str]:
        """One line per installed or selected source, for ``%recap status``."""
        return [s.describe() for s in self.sources.values() if s.state != "missing"]
