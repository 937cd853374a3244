"""Which capture sources run in this kernel, and their status lines.

Every source is a :class:`~.specs.CaptureSpec` until its framework is imported. The project's own
(:data:`~.specs.BUILTIN_SPECS`) are watched from :meth:`Capture.start`, at ``%load_ext``. The
plugins' (:mod:`.plugins`) are found by a scan of every installed distribution's metadata,
which costs more than the whole load: the scan is handed to ``defer`` (the extension's worker
thread) and the next recorded cell waits for it if it has not ended, so a run in the cell right
after the load is recorded. A selection that names a source which is not built in is looked up
at once instead.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from ..debuglog import get_logger
from ..settings import SOURCE_NAMES
from ..textutil import printable
from .runs import RunHub
from .sources import MAX_REASON, Selection, Source, State, is_installed, when_imported
from .specs import BUILTIN_SPECS, CaptureSpec

if TYPE_CHECKING:
    from .plugins import Plugin


class Capture:
    """The sources of one kernel: started with the extension, stopped with it.

    A source object (and its module) is made when its framework is imported, or when
    :attr:`sources` is read (``%recap status``): until then a source is only its spec and what
    state it would be in. ``defer(fn)`` runs ``fn`` soon on another thread (None: at once).
    """

    def __init__(
        self, hub: RunHub, *, defer: Callable[[Callable[[], None]], object] | None = None
    ) -> None:
        self.hub = hub
        self._defer = defer
        self._specs: dict[str, CaptureSpec] = {spec.name: spec for spec in BUILTIN_SPECS}
        self._origins: dict[str, str] = {}
        """A plugin source's ``"plugin <distribution> <version>"``, by name."""
        self._sources: dict[str, Source] = {}
        self._planned: dict[str, State] = {}
        """The state of each selected-or-not source not made yet ("waiting", "off",
        "missing")."""
        self._broken: dict[str, str] = {}
        """Why a source could not be made, by name (it stays off until the next restart)."""
        self._making: set[str] = set()
        self._pending: dict[str, ModuleType] = {}
        """A framework imported while its source was being made: activated once it is."""
        self._selection = Selection(())
        self._started = False
        self._plugins: list[Plugin] | None = None
        """Every plugin installed, in name order; None until they were looked for."""
        self._lock = threading.Lock()
        self._discovery = threading.Lock()
        self._cancels: list[Callable[[], None]] = []

    @property
    def plugins(self) -> list[Plugin]:
        """The plugins found (none before they were looked for), in name order."""
        return list(self._plugins or ())

    @property
    def sources(self) -> dict[str, Source]:
        """Every source, by name: the built-in ones in :data:`SOURCE_NAMES` order, then the
        plugins' in name order (made now if not yet)."""
        for name in list(self._planned):
            self._made(name)
        order = [*SOURCE_NAMES, *(plugin.name for plugin in self._plugins or ())]
        return {name: self._sources[name] for name in order if name in self._sources}

    def start(self, names: Iterable[str]) -> None:
        """Watch for the frameworks of the sources ``names`` selects (see
        :class:`~.sources.Selection`); the plugins are looked for when it may select one."""
        selection = Selection(names)
        with self._lock:
            self._selection = selection
            self._started = True
        self._watch(BUILTIN_SPECS)
        if not selection.beyond(SOURCE_NAMES):
            return  # built-in sources only: no plugin can be on, none is looked for
        if self._plugins is not None or self._defer is None:
            self.discover()  # looked for already (a restart), or nowhere to defer it to
        elif selection.names_beyond(SOURCE_NAMES):
            self.discover()  # a source that is not built in is named: it is needed now
        else:
            self.hub.before_cell.append(self._before_cell)
            with self._lock:
                self._cancels.append(self._forget_before_cell)
            self._defer(self.discover)

    def discover(self) -> None:
        """Look for the plugins (once), and watch the frameworks of those the selection turns
        on; their specs are loaded here, and only theirs."""
        with self._discovery:
            if not self._started:
                return  # stopped before the worker got here: nothing to look for
            if self._plugins is None:
                from .plugins import find_plugins  # not on the %load_ext path

                try:
                    self._plugins = find_plugins(SOURCE_NAMES)
                except Exception:  # noqa: BLE001 - unreadable metadata must not stop capture
                    get_logger().exception("capture: looking for capture plugins failed")
                    self._plugins = []
            with self._lock:
                if not self._started:
                    return
                selection = self._selection
            specs: list[CaptureSpec] = []
            for plugin in self._plugins:
                if plugin.problem is None and selection.selects(plugin.name):
                    spec = plugin.spec()
                    if spec is not None:
                        self._origins[spec.name] = plugin.origin
                        specs.append(spec)
            # Still holding the discovery lock: a cell waiting for it runs only once the
            # plugins' imports are watched.
            self._watch(specs)

    def _before_cell(self) -> None:
        """A recorded cell starts: it waits for the plugins to be watched (once)."""
        if self._plugins is None:
            self.discover()

    def _forget_before_cell(self) -> None:
        with contextlib.suppress(ValueError):
            self.hub.before_cell.remove(self._before_cell)

    def _watch(self, specs: Sequence[CaptureSpec]) -> None:
        """Plan each source of ``specs`` not planned yet: off, missing (no framework), or
        waiting for its framework's import."""
        selection = self._selection
        installed = {  # looked up outside the lock: it reads the file system
            spec.name: [module for module in spec.modules if is_installed(module)]
            for spec in specs
            if selection.selects(spec.name)
        }
        hooks: list[tuple[str, str]] = []
        with self._lock:
            if not self._started:
                return
            for spec in specs:
                name = spec.name
                if name in self._planned or name in self._sources or name in self._broken:
                    continue
                self._specs[name] = spec
                if not self._selection.selects(name):
                    self._planned[name] = "off"
                    continue
                found = installed.get(name)
                if found is None:  # the selection changed meanwhile (a restart): look now
                    found = [module for module in spec.modules if is_installed(module)]
                self._planned[name] = "waiting" if found else "missing"
                hooks.extend((module, name) for module in found)
        for module, name in hooks:
            cancel = when_imported(module, functools.partial(self._imported, name))
            with self._lock:
                self._cancels.append(cancel)

    def _imported(self, name: str, module: ModuleType) -> None:
        """A framework of source ``name`` was imported: make the source and install it."""
        while True:
            source = self._made(name)
            if source is not None:
                source.activate(module)
                return
            with self._lock:
                if name in self._making:  # its module is importing the framework
                    self._pending[name] = module
                    return
                if name not in self._sources:
                    return  # not planned (stopped), or broken
            # made meanwhile by another thread: take that one

    def _made(self, name: str) -> Source | None:
        """The source ``name``, made now (in its planned state) if it was not yet; None while
        it is being made, and when it cannot be."""
        with self._lock:
            source = self._sources.get(name)
            if source is not None or name in self._making or name not in self._planned:
                return source
            self._making.add(name)
            spec, origin = self._specs[name], self._origins.get(name, "")
        # Made outside the lock: a source's module may import its framework, whose hook comes
        # back here.
        made: Source | None = None
        problem = ""
        try:
            made = spec.source_class()(self.hub)
        except Exception as error:  # noqa: BLE001 - one broken source must not stop the others
            get_logger().debug("capture: making source %s failed", name, exc_info=True)
            problem = printable(f"{type(error).__name__}: {error}")[:MAX_REASON]
        with self._lock:
            self._making.discard(name)
            module = self._pending.pop(name, None)
            state = self._planned.pop(name, None)
            if state is None:
                return None  # stopped meanwhile
            if made is None:
                self._broken[name] = f"its source could not be made ({problem})"
            else:
                made.origin = origin
                if state != "waiting":
                    made.state = state
                self._sources[name] = made
        if made is None:
            label = f"{name} ({origin})" if origin else name
            get_logger().warning("capture: %s is off: %s", label, self._broken[name])
            return None
        if module is not None:
            made.activate(module)
        return made

    def stop(self) -> None:
        """Stop every source (their hooks become no-ops where the framework keeps them)."""
        with self._lock:
            self._started = False
            cancels, self._cancels = self._cancels, []
            sources = list(self._sources.values())
        for cancel in cancels:
            cancel()
        for source in sources:
            if source.state == "active":
                source.state = "off"
                try:
                    source.uninstall()
                except Exception:  # noqa: BLE001
                    get_logger().exception("capture: uninstalling %s failed", source.name)

    def restart(self, names: Iterable[str]) -> None:
        """Apply a new ``Recap.capture`` selection (a source that could not be made is tried
        again; a plugin refused stays refused)."""
        self.stop()
        with self._lock:
            self._sources.clear()
            self._planned.clear()
            self._broken.clear()
            self._pending.clear()
        self.start(names)

    def source(self, name: str) -> Source | None:
        """The source called ``name`` if it is recording (never made here: one that was not
        made has not seen its framework imported)."""
        source = self._sources.get(name)
        return source if source is not None and source.on else None

    def lines(self) -> list[str]:
        """One line per installed or selected built-in source, then one per plugin with its
        distribution and version, for ``%recap status``."""
        with self._lock:
            look = self._started and self._plugins is None
            look = look and self._selection.beyond(SOURCE_NAMES)
        if look:
            self.discover()  # asked before the worker got to it
        sources = self.sources
        lines: list[str] = []
        for name in SOURCE_NAMES:
            source = sources.get(name)
            if source is not None and source.state != "missing":
                lines.append(source.describe())
            elif name in self._broken:
                lines.append(f"{name}: off ({self._broken[name]})")
        for plugin in self._plugins or ():
            lines.append(self._plugin_line(plugin, sources.get(plugin.name)))
        return lines

    def _plugin_line(self, plugin: Plugin, source: Source | None) -> str:
        if plugin.problem is not None:
            return f"{plugin.label}: off ({plugin.problem})"
        if source is not None and source.origin == plugin.origin:
            if source.state == "missing":
                modules = " or ".join(self._specs[plugin.name].modules)
                return f"{source.label()}: off ({modules} is not installed)"
            return source.describe()
        broken = self._broken.get(plugin.name)
        return f"{plugin.label}: off ({broken})" if broken else f"{plugin.label}: off"
