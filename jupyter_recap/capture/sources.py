"""Capture sources: one per framework, each installed when its framework is first imported.

A source knows one framework's public extension point (a tracing processor, a callback
handler, an instrumentation hook) and turns what it reports into :class:`~.runs.AgentRun`
calls. Sources are cheap to have: nothing is imported until the person imports the framework
(a post-import hook), so a framework that is not installed, or not used, costs nothing.

A source that meets something it does not understand (an API that moved, a callback that
raises), or misses a package it needs, turns itself off with one warning line; the framework
and the cell carry on.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, ClassVar, Literal, TypeVar

from ..debuglog import get_logger
from ..textutil import printable
from .runs import RunHub

State = Literal["waiting", "active", "off", "failed", "missing"]
F = TypeVar("F", bound=Callable[..., Any])

#: Why a source is off is cut to this on its status line (it quotes an exception's text).
MAX_REASON = 300


class CaptureWarning(UserWarning):
    """A capture source turned itself off (shown once, never raised)."""


class Source:
    """Base class of a capture source; subclasses set the class attributes and :meth:`install`."""

    name: ClassVar[str]
    """What ``Recap.capture`` and ``%recap status`` call it, e.g. ``"openai-agents"``."""
    module: ClassVar[str]
    """The import that brings the framework in (the source installs right after it)."""
    distribution: ClassVar[str]
    """The package whose version is reported."""
    also_distributions: ClassVar[tuple[str, ...]] = ()
    """Packages that bring the framework otherwise (another generation of it)."""
    also_modules: ClassVar[tuple[str, ...]] = ()
    """Other imports that bring the framework in (another generation of it)."""
    needs: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(module, package) of what :meth:`install` imports besides the framework: without it the
    source cannot work, and says which package to install."""

    def __init__(self, hub: RunHub) -> None:
        self.hub = hub
        self.state: State = "waiting"
        self.reason = ""
        self.origin = ""
        """Where a plugin's source comes from, ``"plugin recap-toy 0.1.0"`` (empty for the
        project's own): shown beside its name, in status and in its warning."""
        self._lock = threading.Lock()

    # -- what subclasses implement ----------------------------------------------------------

    def install(self, module: ModuleType) -> None:
        """Register with the framework; raise if its API is not the one this source knows."""
        raise NotImplementedError

    def uninstall(self) -> None:
        """Undo :meth:`install` where the framework allows it (callbacks check :attr:`on`)."""

    # -- shared -----------------------------------------------------------------------------

    @property
    def on(self) -> bool:
        """Whether callbacks should record (checked first thing in every callback)."""
        return self.state == "active"

    @property
    def turns(self) -> int:
        """Top-level turns this source recorded."""
        return self.hub.turns.get(self.name, 0)

    def version(self) -> str | None:
        """The installed framework version, if known (the first package found)."""
        for name in (self.distribution, *self.also_distributions):
            found = installed_version(name)
            if found is not None:
                return found
        return None

    def label(self) -> str:
        """The source and its installed version as ``%recap status`` names them."""
        version = self.version()
        label = f"{self.name} {version}" if version else self.name
        return f"{label} ({self.origin})" if self.origin else label

    def activate(self, module: ModuleType) -> None:
        """Install into the imported framework; a failure turns the source off with a warning."""
        with self._lock:
            if self.state != "waiting":
                return
            self.state = "active"
        try:
            self.install(module)
        except ModuleNotFoundError as error:
            package = self.missing_package(error.name or "")
            if package is not None:
                self.fail(needs_package(package))
            else:  # a module of the framework's own that moved
                self.fail(f"does not understand this version ({type(error).__name__}: {error})")
        except Exception as error:  # noqa: BLE001 - an API we do not know: stand aside
            self.fail(f"does not understand this version ({type(error).__name__}: {error})")

    def missing_package(self, module: str) -> str | None:
        """The package to install for the missing ``module``: one the source :attr:`needs`, or
        one not installed at all (named after its top-level module); None for a module of an
        installed package (a framework that moved a module: not a package to install)."""
        for needed, package in self.needs:
            if module and (needed == module or needed.startswith(f"{module}.")):
                return package
            if module.startswith(f"{needed}."):
                return package
        top = module.split(".", 1)[0]
        if top and not is_installed(top):
            return top.replace("_", "-")
        return None

    def unmet_needs(self) -> list[str]:
        """The packages of :attr:`needs` that are not installed."""
        return [package for module, package in self.needs if not is_installed(module)]

    def fail(self, reason: str) -> None:
        """Turn off for the rest of the session, with one warning line."""
        with self._lock:
            if self.state in ("failed", "off"):
                return
            self.state = "failed"
            self.reason = printable(reason)[:MAX_REASON]
        message = (
            f"capture of {self.label()} is off: {self.reason}; "
            "its runs are recorded as ordinary cells"
        )
        get_logger().warning("%s", message)
        try:
            self.uninstall()
        except Exception:  # noqa: BLE001
            get_logger().exception("capture: uninstalling %s failed", self.name)
        # A turn this source had open would otherwise stay "running" for ever.
        self.hub.close_runs(self.name, f"capture stopped: {self.reason}")
        # One line, "jupyter_recap:0: CaptureWarning: capture of …": a warning attributed to a
        # line of ours would print that line of our source under it, and one attributed to the
        # person's cell would blame their import. Line 0 has no source to print. Warnings
        # configured as errors must not turn this notice into a failure of the cell.
        with contextlib.suppress(Warning):
            warnings.warn_explicit(message, CaptureWarning, "jupyter_recap", 0)

    def guarded(self, function: F) -> F:
        """Wrap a framework callback: off means a no-op, and an exception means :meth:`fail`."""

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.state != "active":
                return None
            try:
                return function(*args, **kwargs)
            except Exception as error:  # noqa: BLE001 - never into the framework
                get_logger().exception("capture: %s callback failed", self.name)
                self.fail(f"a callback failed ({type(error).__name__}: {error})")
                return None

        call.__name__ = getattr(function, "__name__", "callback")
        call.__doc__ = function.__doc__
        return call  # type: ignore[return-value]

    def describe(self) -> str:
        """One line for ``%recap status``."""
        label = self.label()
        if self.state == "active":
            return f"{label}: on, {self.turns} turn{'s' if self.turns != 1 else ''} recorded"
        if self.state == "waiting":
            unmet = self.unmet_needs()
            if unmet:  # it would turn itself off on the import: say so now
                return f"{label}: off ({needs_package(unmet[0])})"
            modules = " or ".join((self.module, *self.also_modules))
            return f"{label}: on once {modules} is imported"
        if self.state == "failed":
            return f"{label}: off ({self.reason})"
        return f"{label}: off"


# -- post-import hooks ---------------------------------------------------------------------

_subscribers: dict[str, list[Callable[[ModuleType], None]]] = {}
_hooks_lock = threading.Lock()
_finder: _ImportWatcher | None = None


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> Callable[[], None]:
    """Call ``callback(module)`` once ``name`` is imported (now, if it already is).

    Returns a function that cancels the callback. One finder of ours at the head of
    ``sys.meta_path`` does the watching (installed with the first hook, for the life of the
    process; it answers only for the names someone subscribed to). Not wrapt's post-import
    hooks: importing wrapt cost every kernel ~25 ms at ``%load_ext``, before any framework
    that needs it was imported.
    """
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return lambda: None
    global _finder
    with _hooks_lock:
        _subscribers.setdefault(name, []).append(callback)
        if _finder is None:
            _finder = _ImportWatcher()
            sys.meta_path.insert(0, _finder)
    # Imported meanwhile, before the finder was there: call back now (once).
    if sys.modules.get(name) is not None:
        with _hooks_lock:
            callbacks = _subscribers.get(name, [])
            pending = callback in callbacks
            if pending:
                callbacks.remove(callback)
        if pending:
            callback(sys.modules[name])
        return lambda: None

    def cancel() -> None:
        with _hooks_lock:
            callbacks = _subscribers.get(name, [])
            if callback in callbacks:
                callbacks.remove(callback)

    return cancel


def _dispatch(module: ModuleType) -> None:
    with _hooks_lock:
        callbacks = _subscribers.pop(module.__name__, [])
    for callback in callbacks:
        try:
            callback(module)
        except Exception:  # noqa: BLE001 - an import must never fail because of us
            get_logger().exception("capture: post-import hook for %s failed", module.__name__)


class _ImportWatcher:
    """A ``sys.meta_path`` finder that lets the real finder find a watched module, then wraps
    its loader so that :func:`_dispatch` runs right after the module executed (what wrapt's
    post-import hooks do)."""

    def __init__(self) -> None:
        self._in_progress: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        with _hooks_lock:
            if not _subscribers.get(fullname) or fullname in self._in_progress:
                return None
            self._in_progress.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)  # the finders after us
        finally:
            with _hooks_lock:
                self._in_progress.discard(fullname)
        loader = getattr(spec, "loader", None)
        if (
            spec is not None
            and hasattr(loader, "exec_module")
            and not isinstance(loader, _NotifyingLoader)
        ):
            spec.loader = _NotifyingLoader(loader)  # type: ignore[assignment]  # a loader too
        return spec


class _NotifyingLoader:
    """Runs the real loader, then tells the subscribers; the module keeps the real loader."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if getattr(module, "__loader__", None) in (None, self):
            with contextlib.suppress(AttributeError):
                module.__loader__ = self._loader
        spec = getattr(module, "__spec__", None)
        if spec is not None and getattr(spec, "loader", None) is self:
            spec.loader = self._loader
        self._loader.exec_module(module)
        _dispatch(module)


def needs_package(package: str) -> str:
    """Why a source is off for want of ``package``, with the command that fixes it."""
    return (
        f"needs {package}, which is not installed: pip install {package}, then restart the kernel"
    )


def installed_version(distribution: str) -> str | None:
    """The installed version of the package ``distribution``, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def is_installed(module: str) -> bool:
    """Whether ``module`` could be imported, without importing it (nor its parent packages:
    ``importlib.util.find_spec("a.b")`` would import ``a``, e.g. all of opentelemetry)."""
    if module in sys.modules:
        return True
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    try:
        for depth in range(1, len(rest) + 1):
            locations = spec.submodule_search_locations if spec is not None else None
            if locations is None:
                return False
            name = ".".join([top, *rest[:depth]])
            spec = importlib.machinery.PathFinder.find_spec(name, list(locations))
    except Exception:  # noqa: BLE001 - e.g. a namespace package's path needs its parent
        return True  # the package is there: watch for the module, which may never come
    return spec is not None


class Selection:
    """Which sources a ``Recap.capture`` value selects, for any source name.

    ``"all"`` is every source; a name is that source; ``"-name"`` turns that source off, also
    under ``"all"``; a list of only ``"-name"`` entries is every source but those. An empty
    list selects none.
    """

    __slots__ = ("dropped", "everything", "wanted")

    def __init__(self, names: Iterable[str]) -> None:
        entries = [name.strip().lower() for name in names if name.strip()]
        self.dropped = frozenset(e[1:].strip() for e in entries if e.startswith("-"))
        self.wanted = frozenset(e for e in entries if not e.startswith("-"))
        self.everything = "all" in self.wanted or (not self.wanted and bool(self.dropped))

    def selects(self, name: str) -> bool:
        """Whether the source called ``name`` is on."""
        return name not in self.dropped and (self.everything or name in self.wanted)

    def beyond(self, known: Iterable[str]) -> bool:
        """Whether a source not in ``known`` may be selected (the plugins must be looked for)."""
        return self.everything or bool(self.wanted - {"all", *known})

    def names_beyond(self, known: Iterable[str]) -> bool:
        """Whether a source not in ``known`` is named (it must be looked for at once)."""
        return bool(self.wanted - {"all", *known})
