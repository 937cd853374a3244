"""Each running kernel's execution state, from its IOPub status messages.

The server's own activity tracking counts widget comm traffic as activity; a recap wants to know
when the person's last *cell* finished. So this watcher opens its own IOPub subscription per
kernel (the way jupyter_server's ``start_watching_activity`` does) and only believes ``status``
messages whose parent is an ``execute_request``: ``busy`` means a cell runs, ``idle`` that it
finished, an ``error`` in between that it failed. Comm messages (widgets, the kernel's own banner
updates) and kernel_info requests never move that clock. Every failure here is logged and
otherwise ignored: a missing watcher only makes ``idle_seconds`` less precise.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from jupyter_client.session import Session

from ..focus.hub import CellRun, FocusHub
from ..record.agentcells import parse_agent_cell
from .outside.host import PersonaCell

log = logging.getLogger(__name__)

# Execution states that mean "not running a cell, but not known to be ready either".
_UNSETTLED = {"unknown", "starting", "restarting", "autorestarting"}


def next_state(parent_type: str | None, state: str | None, current: str) -> str | None:
    """The execution state after one IOPub ``status`` message, or None to keep ``current``."""
    if state == "starting":
        return "starting"  # a (re)started kernel: whatever ran before has ended
    if parent_type == "execute_request" and state in ("busy", "idle"):
        return state
    if current in _UNSETTLED and state in ("busy", "idle"):
        # The kernel answers something other than a cell (kernel_info at start): it is up.
        return "idle"
    return None


class ExecutionWatcher:
    """One IOPub subscription per running kernel, feeding :meth:`FocusHub.set_execution`."""

    def __init__(
        self,
        kernel_manager: Any,
        hub: FocusHub,
        *,
        on_cell_end: Callable[[str, CellRun], None] | None = None,
        on_restarter: Callable[[str, str], None] | None = None,
        on_cell_input: Callable[[str, str, str, int | None], None] | None = None,
        on_cell_error: Callable[[str, str], None] | None = None,
    ) -> None:
        self._kernel_manager = kernel_manager
        self._hub = hub
        self._on_cell_end = on_cell_end
        self._on_restarter = on_restarter
        self._on_cell_input = on_cell_input
        """Called with (kernel id, the sending connection's session id, the request's msg id,
        the execution count the kernel gave the cell) as each cell starts: which client ran it,
        and which count in a saved notebook is that run's."""
        """``on_restarter`` is called with (kernel id, ``restart`` or ``dead``) by the kernel's
        auto-restarter: the process died and is being restarted, or could not be."""
        self._on_cell_error = on_cell_error
        """Called with (kernel id, the failed request's msg id)."""
        self._callbacks: dict[str, list[tuple[Any, str, Any]]] = {}
        self._streams: dict[str, Any] = {}
        self._failed: set[str] = set()  # not retried until the next sync (e.g. remote kernels)
        self.persona_cells: dict[str, PersonaCell] = {}
        """Kernel id → its ``%%ai model@Persona`` cell, while the kernel runs one."""

    @property
    def kernel_ids(self) -> set[str]:
        """Kernels watched now."""
        return set(self._streams)

    def sync(self, running: Iterable[str]) -> None:
        """Watch every kernel in ``running`` and stop watching the others."""
        running = set(running)
        self._failed.clear()
        for kernel_id in self.kernel_ids - running:
            self.detach(kernel_id)
        for kernel_id in running - self.kernel_ids:
            self.attach(kernel_id)
        for kernel_id in self.kernel_ids:
            self.settle(kernel_id)

    def attach(self, kernel_id: str, *, replace: bool = False) -> None:
        """Subscribe to the kernel's IOPub (again, with ``replace``, after a restart)."""
        if kernel_id in self._streams or kernel_id in self._failed:
            if not replace:
                return
            self.detach(kernel_id)
            self._failed.discard(kernel_id)
        try:
            kernel = self._kernel_manager.get_kernel(kernel_id)
            # A Session of our own: sharing the kernel's would make its replay check see every
            # message twice ("duplicate signature").
            session = Session(config=kernel.session.config, key=kernel.session.key)
            stream = kernel.connect_iopub()
        except Exception:  # a kernel that is going away, or a remote (gateway) kernel
            log.debug("jupyter_recap: cannot watch kernel %s", kernel_id, exc_info=True)
            self._failed.add(kernel_id)
            return
        self._streams[kernel_id] = stream
        self._watch_restarter(kernel_id, kernel)
        if not self._hub.has_kernel(kernel_id):
            self._hub.set_execution(
                kernel_id, getattr(kernel, "execution_state", None) or "unknown"
            )
        stream.on_recv(lambda parts: self._on_message(kernel_id, session, parts))

    def settle(self, kernel_id: str) -> None:
        """Trust jupyter_server's own tracking that a kernel is up, when we missed its start.

        Our subscription is set up asynchronously, so the statuses a new kernel sends first
        (its reply to kernel_info) can come before it listens. Only "idle" is taken over: the
        server's "busy" may be widget traffic rather than a cell.
        """
        if kernel_id not in self._streams or self._hub.execution_state(kernel_id) not in _UNSETTLED:
            return
        try:
            kernel = self._kernel_manager.get_kernel(kernel_id)
        except KeyError:  # gone meanwhile
            return
        if getattr(kernel, "execution_state", None) == "idle":
            self._hub.set_execution(kernel_id, "idle")

    def _watch_restarter(self, kernel_id: str, kernel: Any) -> None:
        """Hear the auto-restarter: a kernel process that died is restarted without any request,
        so no server event tells of it."""
        if self._on_restarter is None or kernel_id in self._callbacks:
            return
        callbacks = []
        report = self._on_restarter
        for event in ("restart", "dead"):
            callback = functools.partial(report, kernel_id, event)
            try:
                kernel.add_restart_callback(callback, event)
            except Exception:  # a kernel without a restarter (remote kernels)
                log.debug("jupyter_recap: no restart callbacks on %s", kernel_id, exc_info=True)
                continue
            callbacks.append((kernel, event, callback))
        self._callbacks[kernel_id] = callbacks

    def detach(self, kernel_id: str) -> None:
        """Close the kernel's subscription, if any."""
        self.persona_cells.pop(kernel_id, None)
        for kernel, event, callback in self._callbacks.pop(kernel_id, ()):
            try:
                kernel.remove_restart_callback(callback, event)
            except Exception:  # noqa: BLE001 - the kernel is going away anyway
                log.debug("jupyter_recap: removing a callback of %s failed", kernel_id)
        stream = self._streams.pop(kernel_id, None)
        if stream is None:
            return
        try:
            stream.close()
        except Exception:
            log.debug("jupyter_recap: closing the IOPub of %s failed", kernel_id, exc_info=True)

    def close(self) -> None:
        """Stop watching every kernel."""
        for kernel_id in list(self._streams):
            self.detach(kernel_id)

    def _on_message(self, kernel_id: str, session: Session, parts: list[bytes]) -> None:
        try:
            _idents, frames = session.feed_identities(parts)
            # Headers only: most IOPub traffic is output we do not need to decode.
            msg = session.deserialize(frames, content=False)
            msg_type = msg["header"]["msg_type"]
            parent = msg.get("parent_header") or {}
            if msg_type == "execute_input":
                content = session.unpack(msg["content"])
                self._cell_input(kernel_id, content)
                sender, request = parent.get("session"), parent.get("msg_id")
                if self._on_cell_input is not None and isinstance(sender, str):
                    self._on_cell_input(kernel_id, sender, str(request), _count(content))
                return
            if msg_type not in ("status", "error"):
                return
            parent_type = parent.get("msg_type")
            if msg_type == "error":
                if parent_type == "execute_request":
                    self._hub.cell_failed(kernel_id)
                    if self._on_cell_error is not None:
                        self._on_cell_error(kernel_id, str(parent.get("msg_id")))
                return
            content = session.unpack(msg["content"])
            state = content.get("execution_state") if isinstance(content, dict) else None
            new = next_state(parent_type, state, self._hub.execution_state(kernel_id))
            if new is not None:
                finished = self._hub.set_execution(kernel_id, new)
                if finished is not None:
                    self.persona_cells.pop(kernel_id, None)
                    if self._on_cell_end is not None:
                        self._on_cell_end(kernel_id, finished)
        except Exception:
            log.warning("jupyter_recap: unreadable IOPub message from %s", kernel_id, exc_info=True)

    def _cell_input(self, kernel_id: str, content: Any) -> None:
        """A cell starts: note the persona it addresses, when it is a Jupyter AI persona cell."""
        code = content.get("code") if isinstance(content, dict) else None
        persona, prompt = None, ""
        # Most cells are not %%ai cells at all: the first line says.
        if isinstance(code, str) and code.lstrip().startswith("%%ai"):
            line, _, body = code.lstrip().partition("\n")
            cell = parse_agent_cell(line, ("ai",))
            persona = cell.persona if cell is not None else None
            # What the magic sends as its prompt, before it fills in ``{name}`` fields: the
            # cell's text after the magic's line, stripped.
            prompt = body.strip()
        if persona:
            self.persona_cells[kernel_id] = PersonaCell(persona, time.time(), prompt)
        else:
            self.persona_cells.pop(kernel_id, None)


def _count(content: Any) -> int | None:
    """The execution count of an ``execute_input`` message's content, when it has one."""
    count = content.get("execution_count") if isinstance(content, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None
