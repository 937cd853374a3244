"""Capture plugins: the sources other distributions register in the ``jupyter_recap.capture``
entry-point group.

A plugin is one entry point, ``name = "package.module:SPEC"``, whose object is a
:class:`~.specs.CaptureSpec`. :func:`find_plugins` lists them in name order without importing
anything (the project's own entries are skipped: the kernel knows those specs already);
:meth:`Plugin.spec` loads one only when the person's selection turns it on, so a plugin turned
off by name (``"-name"``) is never imported.

A plugin that cannot be used is turned off with one warning line in the debug log, and its
reason is what ``%recap status`` shows; it costs the other sources nothing. Refused: a spec that
fails to load, an object that is not a spec, a spec written for another :data:`API_VERSION`,
a spec whose name is not its entry point's, a name a built-in source or an earlier plugin has.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .._version import __version__
from ..debuglog import get_logger
from ..entrypoints import group_entries
from ..settings import CAPTURE_GROUP
from ..textutil import printable
from .sources import MAX_REASON
from .specs import API_VERSION, CaptureSpec

#: Where the entries of the built-in sources point (``jupyter_recap.capture.specs:LANGCHAIN``…).
OWN_SPECS = "jupyter_recap.capture.specs"


class Plugin:
    """One entry of the group, its spec loaded on first use."""

    def __init__(self, entry_point: Any, distribution: str, version: str) -> None:
        self.entry_point = entry_point
        self.name: str = entry_point.name.strip().lower()
        self.distribution = distribution
        self.version = version
        self.problem: str | None = None
        """Why this plugin is off for the rest of the session (None: it is usable)."""
        self._spec: CaptureSpec | None = None

    @property
    def origin(self) -> str:
        """``"plugin recap-toy 0.1.0"``: what ``%recap status`` writes beside its sources."""
        return f"plugin {self.distribution} {self.version}".rstrip()

    @property
    def label(self) -> str:
        return f"{self.name} ({self.origin})"

    def refuse(self, reason: str) -> None:
        """Turn the plugin off, with one warning line in the debug log (never in a cell)."""
        if self.problem is not None:
            return
        self.problem = printable(reason)[:MAX_REASON]
        get_logger().warning("capture: %s is off: %s", self.label, self.problem)

    def spec(self) -> CaptureSpec | None:
        """The plugin's spec, loaded now if it was not (None, and :attr:`problem` set, when it
        cannot be used)."""
        if self._spec is not None or self.problem is not None:
            return self._spec
        value = self.entry_point.value
        module, colon, attribute = (part.strip() for part in value.partition(":"))
        if not colon or not all(
            part.isidentifier() for part in (*module.split("."), *attribute.split("."))
        ):
            self.refuse(f"its entry point {value!r} is not 'package.module:SPEC'")
            return None
        try:
            found = self.entry_point.load()
        except Exception as error:  # noqa: BLE001 - one broken plugin must not stop the others
            get_logger().debug("capture: loading %s failed", self.label, exc_info=True)
            self.refuse(f"its spec could not be loaded ({type(error).__name__}: {error})")
            return None
        if not isinstance(found, CaptureSpec):
            self.refuse(
                f"{self.entry_point.value} is a {type(found).__name__}, not a "
                "jupyter_recap.capture.specs.CaptureSpec"
            )
        elif found.api_version != API_VERSION:
            self.refuse(
                f"written for capture API version {found.api_version}, and jupyter_recap "
                f"{__version__} speaks version {API_VERSION}: install a release of "
                f"{self.distribution or 'the plugin'} made for it"
            )
        elif found.name != self.name:
            self.refuse(f"its entry point is named {self.name!r} but its spec {found.name!r}")
        else:
            self._spec = found
        return self._spec


def find_plugins(builtin: Collection[str]) -> list[Plugin]:
    """Every capture plugin of the installed distributions, in name order (then distribution),
    none loaded. ``builtin``: the names of the project's own sources, which no plugin may take.

    Reads every distribution's metadata: off the ``%load_ext`` path (see the manager).
    """
    found: list[Plugin] = []
    entries, problems = group_entries(CAPTURE_GROUP)
    for problem in problems:
        get_logger().warning("capture: plugins of %s", problem)
    for entry in entries:
        # (Not ``entry.entry.module``: it raises on a value that is not "module:attr".)
        if entry.value.partition(":")[0].strip() == OWN_SPECS:
            continue  # the built-in sources: their specs are known without a scan
        found.append(Plugin(entry.entry, entry.distribution, entry.version))
    found.sort(key=lambda plugin: (plugin.name, _normal(plugin.distribution)))
    taken: dict[str, str] = {}
    for plugin in found:
        if plugin.name in builtin:
            plugin.refuse(f"{plugin.name!r} is the name of a built-in source")
        elif plugin.name in taken:
            plugin.refuse(f"{plugin.name!r} is already the name of {taken[plugin.name]}'s source")
        else:
            taken[plugin.name] = plugin.distribution or "another plugin"
    return found


def _normal(distribution: str) -> str:
    """A distribution name as the packaging rules compare them (``Jupyter_Recap`` is
    ``jupyter-recap``)."""
    parts = distribution.lower().replace("_", "-").replace(".", "-").split("-")
    return "-".join(part for part in parts if part)
