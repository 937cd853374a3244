"""Who touched which notebook, and when: the attribution of a change line.

Every source that can see an agent work on a notebook notes it here: a chat persona's tool
calls, a CLI agent's hook events, the tools of an MCP server, executions by another client of
the kernel. When the person comes back, the change line names who touched the notebook since
they last looked (``— by Claude via churn.chat``). Bounded: the latest :data:`MAX_PER_NOTEBOOK`
touches of each of :data:`MAX_NOTEBOOKS` notebooks.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from ..textutil import printable_line

MAX_NOTEBOOKS = 1024
MAX_PER_NOTEBOOK = 32
WHO_CHARS = 80
UNNAMED = "an agent with no printable name"
"""Who a touch names when its source's name was nothing but controls and escapes: the touch
still counts, under a name that says why there is none."""


@dataclass(frozen=True, slots=True)
class Touch:
    """One agent's work on one notebook: what it did there, in counts."""

    who: str
    """How the line names it: ``Claude via churn.chat``, ``Claude Code``, ``jupyter-mcp-server``."""
    at: float
    edited: int = 0
    ran: int = 0
    failed: int = 0


class Touches:
    """The latest touches of each notebook (paths relative to the server's root)."""

    def __init__(self) -> None:
        self._by_path: OrderedDict[str, deque[Touch]] = OrderedDict()

    def note(
        self, path: str, who: str, at: float, *, edited: int = 0, ran: int = 0, failed: int = 0
    ) -> None:
        """``who`` worked on the notebook at ``path`` at ``at`` (UNIX time).

        ``who`` is whatever the source was told (a persona's name, an MCP client's own name for
        itself, an agent's ``--agent``): it is made printable here, where every source passes,
        so no escape, control or bidi mark reaches the change line.
        """
        path = normal_path(path)
        who = printable_line(who, WHO_CHARS) or (UNNAMED if who.strip() else "")
        if not path or not who:
            return
        touches = self._by_path.pop(path, None)
        if touches is None:
            touches = deque(maxlen=MAX_PER_NOTEBOOK)
        touch = Touch(who, at, edited, ran, failed)
        if not touches or touches[-1] != touch:  # a source that reports the same work again
            touches.append(touch)
        self._by_path[path] = touches  # most recently touched last
        while len(self._by_path) > MAX_NOTEBOOKS:
            self._by_path.popitem(last=False)

    def since(self, path: str, since: float) -> list[Touch]:
        """The touches of ``path`` after ``since``, oldest first."""
        return [t for t in self._by_path.get(normal_path(path), ()) if t.at > since]

    def who_since(self, path: str, since: float) -> list[str]:
        """Who touched ``path`` after ``since``, each once, most recent first."""
        names: list[str] = []
        for touch in reversed(self.since(path, since)):
            if touch.who not in names:
                names.append(touch.who)
        return names

    def rename(self, old: str, new: str) -> None:
        touches = self._by_path.pop(normal_path(old), None)
        if touches is not None:
            self._by_path[normal_path(new)] = touches

    def forget(self, path: str) -> None:
        self._by_path.pop(normal_path(path), None)


def normal_path(path: str) -> str:
    """A notebook's path as the server names it: relative, ``/``-separated, no ``./``."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    return "/".join(parts)
