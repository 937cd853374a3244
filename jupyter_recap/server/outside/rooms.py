"""Who wrote each cell of a notebook's collaboration room while the person was away.

With real-time collaboration on, another person or an agent client (jupyter-nbmodel-client,
which MCP servers use; a Jupyter AI persona's tools) edits a notebook through its room's shared
Y document, and the room saves the file a moment later: the file alone says only "another
client of the server". The room knows better. Each client that joins says who it is in the
room's awareness (JupyterLab: ``user`` with the person's ``display_name``; nbmodel-client:
``user.agent``), and each change of the document carries its writer's client id: a
transaction's state vector grows for exactly the clients whose changes it applied.

So while the person is away from a notebook that a room holds open, :class:`RoomWriters`
observes that room's document: for each transaction, the cells it touched (their ids, from the
paths of the deep events under ``cells``) and the names of the clients whose state grew. The
change tracker's marks then name the writer of each cell ("edited — Ada"), and the change
line names who worked on the notebook (through :meth:`OutsideSink.touched`). Deleting makes no
new state, so a deleted cell is not attributed this way. Nothing is observed while the person
looks (their own typing is no news) or when collaboration is off.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...outside.source import OutsideSink
from ...textutil import printable, shorten

log = logging.getLogger(__name__)

NAME_CHARS = 80
MAX_WRITERS = 10_000
"""Cells whose writer is remembered per notebook."""
TOUCH_EVERY = 5.0
"""Seconds between two reports that one writer works on one notebook (a writer's every
keystroke is a transaction)."""


@dataclass
class _Watch:
    room: Any
    subscriptions: list[tuple[Any, Any]] = field(default_factory=list)
    """(observed object, subscription) pairs, to undo."""
    touched: set[str] = field(default_factory=set)
    """Cells touched by the transaction being committed."""
    reported: dict[str, float] = field(default_factory=dict)
    """Writer → when it was last reported as working on the notebook."""
    writers: dict[str, str] = field(default_factory=dict)
    """Cell id → who wrote it last since the person left."""


class RoomWriters:
    """Observes the rooms of the notebooks the person is away from (see the module)."""

    def __init__(self, sink: OutsideSink, touched: Callable[[str, str], None]) -> None:
        """``touched(path, who)``: someone worked on the notebook at ``path``."""
        self._sink = sink
        self._touched = touched
        self._watches: dict[str, _Watch] = {}

    def writers(self, path: str) -> dict[str, str]:
        """Cell id → who wrote it in the room since the person left ``path``."""
        watch = self._watches.get(path)
        return dict(watch.writers) if watch is not None else {}

    def watch(self, path: str) -> None:
        """The person left ``path``: follow its room, when one holds it open."""
        self.unwatch(path)
        room = self._room(path)
        if room is None:
            return
        watch = _Watch(room)
        try:
            document = room._document  # jupyter_server_ydoc's YNotebook of the room
            cells = document.ycells
            subscription = cells.observe_deep(lambda events: self._cells_changed(watch, events))
            watch.subscriptions.append((cells, subscription))
            subscription = room.ydoc.observe(lambda event: self._committed(path, watch, event))
            watch.subscriptions.append((room.ydoc, subscription))
        except Exception:  # another release of the collaboration packages: the file says it
            log.debug("jupyter_recap: the room of %s cannot be followed", path, exc_info=True)
            self._undo(watch)
            return
        self._watches[path] = watch

    def unwatch(self, path: str) -> None:
        """The person is back at ``path`` (or it is no longer tracked)."""
        watch = self._watches.pop(path, None)
        if watch is not None:
            self._undo(watch)

    def close(self) -> None:
        for path in list(self._watches):
            self.unwatch(path)

    def _room(self, path: str) -> Any:
        collaboration: Any = self._sink.server_setting("jupyter_server_ydoc")
        file_ids: Any = self._sink.server_setting("file_id_manager")
        if collaboration is None or file_ids is None:
            return None
        try:
            file_id = file_ids.get_id(path)
            if not file_id:
                return None
            rooms = collaboration.ywebsocket_server.rooms
            return rooms.get(f"json:notebook:{file_id}")
        except Exception:
            log.debug("jupyter_recap: no room for %s", path, exc_info=True)
            return None

    @staticmethod
    def _cells_changed(watch: _Watch, events: Any) -> None:
        try:
            cells = watch.room._document.ycells
            for event in events:
                path = list(event.path)
                if path and isinstance(path[0], int) and path[0] < len(cells):
                    cell_id = cells[path[0]].get("id")
                elif not path:  # cells inserted into (or moved in) the array itself
                    cell_id = None
                    for change in event.delta:
                        for cell in change.get("insert") or ():
                            inserted = cell.get("id") if hasattr(cell, "get") else None
                            if isinstance(inserted, str):
                                watch.touched.add(inserted)
                else:
                    cell_id = None
                if isinstance(cell_id, str):
                    watch.touched.add(cell_id)
        except Exception:
            log.debug("jupyter_recap: a room change was not read", exc_info=True)

    def _committed(self, path: str, watch: _Watch, event: Any) -> None:
        """A transaction of the room's document ended: its cells to the clients that wrote."""
        touched, watch.touched = watch.touched, set()
        if not touched:
            return
        try:
            grown = _grown(event.before_state, event.after_state) - {watch.room.ydoc.client_id}
            names = [_name(watch.room.awareness.states.get(client)) for client in sorted(grown)]
        except Exception:
            log.debug("jupyter_recap: a room transaction was not read", exc_info=True)
            return
        who = next((name for name in names if name), None)
        if who is None:
            return
        for cell_id in touched:
            watch.writers.pop(cell_id, None)
            watch.writers[cell_id] = who
        while len(watch.writers) > MAX_WRITERS:
            watch.writers.pop(next(iter(watch.writers)))
        moment = time.monotonic()
        if moment - watch.reported.get(who, -TOUCH_EVERY) >= TOUCH_EVERY:
            watch.reported[who] = moment
            self._touched(path, who)

    @staticmethod
    def _undo(watch: _Watch) -> None:
        for observed, subscription in watch.subscriptions:
            try:
                observed.unobserve(subscription)
            except Exception:
                log.debug("jupyter_recap: unobserving a room failed", exc_info=True)
        watch.subscriptions.clear()


def _grown(before: bytes, after: bytes) -> set[int]:
    """The clients whose clock a transaction moved (two encoded state vectors)."""
    old, new = _clocks(before), _clocks(after)
    return {client for client, clock in new.items() if clock > old.get(client, 0)}


def _clocks(state: bytes) -> dict[int, int]:
    """An encoded Yjs state vector: a count, then (client id, clock) pairs, as var-uints."""
    from pycrdt import Decoder  # there when jupyter_server_ydoc is

    decoder = Decoder(state)
    clocks: dict[int, int] = {}
    for _ in range(decoder.read_var_uint()):
        client = decoder.read_var_uint()
        clocks[client] = decoder.read_var_uint()
    return clocks


def _name(state: Any) -> str | None:
    """Who a client says it is in the room's awareness: an agent client's ``agent``, else the
    person's display name, name or user name."""
    if not isinstance(state, dict):
        return None
    user = state.get("user")
    if not isinstance(user, dict):
        return None
    for key in ("agent", "display_name", "name", "username"):
        value = user.get(key)
        if isinstance(value, str) and value.strip():
            return shorten(printable(value).strip(), NAME_CHARS)
    return None
