"""What a capture source is before its framework is imported: a :class:`CaptureSpec`.

Every source, the project's own and a plugin's, is announced by one spec in the
``jupyter_recap.capture`` entry-point group: its name (what ``Recap.capture`` and
``%recap status`` call it), the imports that bring its framework in, and where its class is, as
``"module:Class"``. A spec is plain data on purpose: reading it imports neither the source's
module nor its framework; the class is imported when one of those modules is (or when
``%recap status`` asks what the source would do).

The project's own six are defined here and registered in its ``pyproject.toml`` exactly as a
plugin registers its own (``name = "package.module:SPEC"``); the kernel knows them without
scanning the entry points, which costs more than the whole ``%load_ext``.

:data:`API_VERSION` is the version of the contract between a source and the kernel (the
:class:`~.sources.Source` base class and the :class:`~.runs.RunHub` it reports to); a spec
declares the version it was written for, and one written for another is refused.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sources import Source

API_VERSION = 1
"""Raised on a breaking change of :class:`~.sources.Source` or :class:`~.runs.RunHub`."""

#: Longest source name: it is typed in settings and shown on a status line.
MAX_NAME = 64


class CaptureSpec:
    """One capture source, before its framework is imported (immutable; the fields are
    keywords).

    ``api_version`` has no default: a spec says which contract it was written for, so that a
    plugin made for an older one is refused instead of being taken for a current one. (A plain
    class rather than a dataclass: this module is read at ``%load_ext``, where making a
    dataclass would cost more than the six specs.)
    """

    __slots__ = ("api_version", "modules", "name", "source")

    name: str
    """Lowercase, e.g. ``"openai-agents"``: letters, digits, ``-``, ``_`` and ``.``."""
    modules: tuple[str, ...]
    """The imports that bring the framework in; the source is made when the first one is
    imported (never before), and waits for none of them when none is installed."""
    source: str
    """The source's class as ``"package.module:Class"``, a subclass of
    :class:`~.sources.Source` whose ``name`` is :attr:`name`."""
    api_version: int
    """The :data:`API_VERSION` the source was written for. A plugin writes the number
    (``api_version=1``), not the constant: imported, it would claim whatever version the
    installed jupyter_recap speaks."""

    def __init__(
        self, *, name: str, modules: tuple[str, ...], source: str, api_version: int
    ) -> None:
        for field, value in (
            ("name", name),
            ("modules", modules),
            ("source", source),
            ("api_version", api_version),
        ):
            object.__setattr__(self, field, value)
        problem = _problem(self)
        if problem is not None:
            raise ValueError(f"CaptureSpec {name!r}: {problem}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a CaptureSpec cannot be changed ({name})")

    def __repr__(self) -> str:
        return (
            f"CaptureSpec(name={self.name!r}, modules={self.modules!r}, "
            f"source={self.source!r}, api_version={self.api_version!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CaptureSpec) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def _fields(self) -> tuple[str, tuple[str, ...], str, int]:
        return (self.name, self.modules, self.source, self.api_version)

    def source_class(self) -> type[Source]:
        """Import the source's module and return its class (checked to be a source of this
        name); raises what the import raises, or TypeError."""
        from .sources import Source

        module_name, _, class_name = self.source.partition(":")
        found = getattr(importlib.import_module(module_name), class_name, None)
        if not isinstance(found, type) or not issubclass(found, Source):
            raise TypeError(f"{self.source} is not a subclass of jupyter_recap's capture Source")
        if getattr(found, "name", None) != self.name:
            named = getattr(found, "name", None)
            raise TypeError(f"{self.source} is named {named!r}, not {self.name!r}")
        return found


def _problem(spec: CaptureSpec) -> str | None:
    """What is wrong with ``spec``'s fields, in words (None: nothing). A plugin's spec is
    anyone's code: its fields are checked as the objects they are, not as they are typed."""
    name: object = spec.name
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return f"the name must be a text of 1 to {MAX_NAME} characters"
    if name == "all" or not name[0].isalnum() or not _is_name(name):
        return "the name must be lowercase letters, digits, '-', '_' or '.', not 'all'"
    modules: object = spec.modules
    if not isinstance(modules, tuple) or not modules:
        return "modules must be a non-empty tuple of import names"
    if not all(isinstance(module, str) and _is_dotted(module) for module in modules):
        return f"modules must be import names such as 'package.module'; got {modules!r}"
    source: object = spec.source
    module, colon, cls = source.partition(":") if isinstance(source, str) else ("", "", "")
    if not colon or not _is_dotted(module) or not cls.isidentifier():
        return f"source must be 'package.module:Class'; got {source!r}"
    version: object = spec.api_version
    if not isinstance(version, int) or isinstance(version, bool):
        return f"api_version must be an int such as {API_VERSION}"
    return None


def _is_name(name: str) -> bool:
    # No pattern: this module is read at %load_ext, where nothing of ours compiles one.
    return all(c.isdigit() or c in "-_." or ("a" <= c <= "z") for c in name)


def _is_dotted(module: str) -> bool:
    return bool(module) and all(part.isidentifier() for part in module.split("."))


def _own(name: str, modules: tuple[str, ...], source: str) -> CaptureSpec:
    """A spec of the project's own, its class in this package (always of the current API)."""
    return CaptureSpec(
        name=name,
        modules=modules,
        source=f"jupyter_recap.capture.{source}",
        api_version=API_VERSION,
    )


OPENAI_AGENTS = _own("openai-agents", ("agents",), "openai_agents:OpenAIAgentsSource")
PYDANTIC_AI = _own("pydantic-ai", ("pydantic_ai",), "pydantic_ai:PydanticAISource")
LANGCHAIN = _own("langchain", ("langchain_core",), "langchain:LangChainSource")
SMOLAGENTS = _own("smolagents", ("smolagents",), "smolagents:SmolagentsSource")
OPENTELEMETRY = _own("opentelemetry", ("opentelemetry.sdk.trace",), "otel:OpenTelemetrySource")
JUPYTER_AI = _own(
    "jupyter-ai", ("jupyter_ai_magics", "jupyter_ai_magic_commands"), "jupyter_ai:JupyterAISource"
)

#: The project's own sources, in the order ``%recap status`` lists them (their names are
#: :data:`~jupyter_recap.settings.SOURCE_NAMES`, which a test keeps equal).
BUILTIN_SPECS: tuple[CaptureSpec, ...] = (
    OPENAI_AGENTS,
    PYDANTIC_AI,
    LANGCHAIN,
    SMOLAGENTS,
    OPENTELEMETRY,
    JUPYTER_AI,
)
