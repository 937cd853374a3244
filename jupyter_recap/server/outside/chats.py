"""The chat source: Jupyter AI chats of this server, as rows of the agents panel and recaps.

jupyterlab-chat (0.25 and later) keeps each open chat as a model in its ``ChatManager``
(``web_app.settings["chat_manager"]``), announces chats opened and closed on the event bus and
reports every message change to observers. This module observes them: each message goes into
a small bounded log per chat; shortly after a change (coalesced, so a streaming reply costs one
read per :data:`SETTLE_SECONDS`) the log is read as turns (:mod:`..chats.document`), the chat's
row is updated and its recap schedule hears whether a turn started, ended or waits for approval.
The persona manager's ``persona_state`` events say when a persona starts and stops processing
(the turn's real end) and which model it uses.

With real-time collaboration on, jupyterlab-chat reports new messages but not their updates (a
tool call that completes, a reply that streams): while a persona is processing, the chat is
re-read from its model every :data:`RTC_REREAD_SECONDS`, and once more when it stops. Without a
ChatManager (an older jupyterlab-chat) the ``.chat`` files the page reports as open are read
when they change on disk. Without jupyterlab-chat nothing here runs.

Recaps of chats are drafted by the kernel's own schedule (:class:`~jupyter_recap.schedule.Schedule`)
driven here: focus comes from the page's reports for the chat, turns from the chat; drafts run
on the server's drafts pool with the same pipeline, settings (``c.Recap.*``), budget and
consent as a kernel's. Nothing leaves the server except inside a recap request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import Any

from ...chats.document import MAX_MESSAGES, ChatView, read_chat
from ...chats.recap import chat_transcript
from ...focus.board import chat_row_id
from ...outside.source import API_VERSION, OutsideSink
from ...pipeline.context import build_context, fingerprint
from .chat_host import ChatHost
from .chat_log import TrackedChat, as_dict, chat_users, collaborative, read_chat_files
from .chat_recaps import ChatRecaps
from .chat_rows import ChatRows

log = logging.getLogger(__name__)

CHAT_EVENTS = "https://schema.jupyter.org/jupyterlab_chat/room/v1"
PERSONA_STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"
CONTENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
SETTLE_SECONDS = 0.05
"""A chat is read this long after its first unread change (later changes join that read)."""
RTC_REREAD_SECONDS = 1.0
FILE_POLL_SECONDS = 2.0


class ChatSource:
    """Observes this server's chats and keeps their rows, recaps and notebook lines."""

    name = "chats"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(self, sink: OutsideSink, host: ChatHost) -> None:
        self.sink = sink
        self.host = host
        self.chats: dict[str, TrackedChat] = {}
        """Path → tracked chat."""
        self._ids: dict[str, str] = {}
        """Chat id → path."""
        self.manager: Any = None
        self.enabled = False
        self.fallback = False
        """No ChatManager (jupyterlab-chat before 0.25): chat files are read instead."""
        self._poller: Any = None
        self._polling_files = False
        self.rows = ChatRows(sink, host, self.chats)
        self.recaps = ChatRecaps(
            sink, host, self.rows, lambda chat: self.chats.get(chat.path) is chat
        )
        self.messages_seen = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Observe the chat manager, or fall back to the chat files; off without either."""
        self.manager = self.sink.server_setting("chat_manager")
        events = self.host.event_bus
        if self.manager is not None:
            self.enabled = True
            self.manager.observe_chats(self._on_chat_event)
            chats_by_id: Any = self.sink.server_setting("chats_by_id") or {}
            for chat_id, model in list(chats_by_id.items()):
                self._attach(chat_id, model)
        elif self.sink.extension_enabled("jupyterlab_chat"):
            # An older jupyterlab-chat: the chat files the page opens are read when they
            # change (the poller starts with the first chat the page reports).
            self.enabled = self.fallback = True
        if self.enabled and events is not None:
            events.add_listener(schema_id=PERSONA_STATE, listener=self._on_persona_state)
            events.add_listener(schema_id=CONTENTS, listener=self._on_contents)

    def stop(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        for chat in self.chats.values():
            self._detach(chat)
        events = self.host.event_bus
        if self.enabled and events is not None:
            # jupyter_events raises KeyError for a schema nobody registered (no persona
            # manager in this server): nothing was listening then.
            for schema, listener in (
                (PERSONA_STATE, self._on_persona_state),
                (CHAT_EVENTS, self._on_chat_event),
                (CONTENTS, self._on_contents),
            ):
                with contextlib.suppress(KeyError):
                    events.remove_listener(schema_id=schema, listener=listener)

    # -- inputs ------------------------------------------------------------------------------

    async def _on_chat_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        chat_id, path, action = data.get("chat_id"), data.get("path"), data.get("action")
        if not isinstance(chat_id, str) or not isinstance(path, str):
            return
        if action in ("opened", "client_connected") and self.manager is not None:
            model = self.manager.get(chat_id)
            if model is not None:
                self._attach(chat_id, model)
        elif action in ("closed", "deleted"):
            known = self._ids.get(chat_id)
            if known in self.chats:
                self._detach(self.chats[known])  # its row stays: it says how the chat ended
                if action == "deleted":
                    self._forget(known)

    async def _on_persona_state(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        path = self._ids.get(str(data.get("chat_id", "")))
        chat = self.chats.get(path or "")
        if chat is None:
            return
        model = data.get("model")
        current = model.get("current") if isinstance(model, dict) else None
        if isinstance(current, str) and current:
            chat.model = current[:128]
        processing = data.get("processing")
        if isinstance(processing, bool) and processing != chat.processing:
            chat.processing = processing
            if not processing and chat.model_ref is not None:
                self._reread(chat)  # the turn's end: every update is in the model now
            elif processing and collaborative(chat.model_ref):
                self._poll_model(chat)
            self._read_soon(chat)

    def _poll_model(self, chat: TrackedChat) -> None:
        """With collaboration on, updates of a message are not reported: while the persona
        processes, its chat is read again from the model every second."""
        if not chat.processing or self.chats.get(chat.path) is not chat:
            return
        if chat.model_ref is not None:
            self._reread(chat)
            self._read_soon(chat)
        asyncio.get_event_loop().call_later(RTC_REREAD_SECONDS, self._poll_model, chat)

    async def _on_contents(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        """A chat renamed (or its folder): its row and recap follow it to the new path."""
        source, dest = data.get("source_path"), data.get("path")
        if data.get("action") != "rename" or not isinstance(source, str):
            return
        if not isinstance(dest, str):
            return
        source, dest = source.strip("/"), dest.strip("/")
        for old in [path for path in self.chats if path == source or path.startswith(source + "/")]:
            new = dest + old[len(source) :]
            if new in self.chats:
                continue
            chat = self.chats.pop(old)
            chat.path = new
            self.chats[new] = chat
            self._ids = {key: new if value == old else value for key, value in self._ids.items()}
            self.host.board.rename_chat(old, new)

    def focus(self, path: str, focused: bool | None) -> None:
        """The page's focus on the chat at ``path`` changed."""
        if self.fallback and self._poller is None:
            from tornado.ioloop import PeriodicCallback

            self._poller = PeriodicCallback(self._poll_files, FILE_POLL_SECONDS * 1000)
            self._poller.start()
            self._poll_files()
        chat = self.chats.get(path)
        if chat is not None and focused is not None:
            self.recaps.act(chat, chat.schedule.focus(focused))

    def looked_at(self, notebook: str, focused: bool) -> None:
        """A focus report of ``notebook``'s kernel: while it is looked at, what an agent does
        there is seen as it happens, not news for later."""
        self.rows.looked_at(notebook, focused)

    # -- following a chat --------------------------------------------------------------------

    def _attach(self, chat_id: str, model: Any) -> None:
        try:
            path = str(model.get_path())
        except Exception:  # noqa: BLE001 - a model that cannot say its path is not followed
            return
        chat = self._track(path)
        self._ids[chat_id] = path
        chat.log.chat_id = chat_id
        if chat.model_ref is model:
            return
        self._detach(chat)
        chat.model_ref = model
        chat.observer = model.observe_messages(functools.partial(self._on_message, chat))
        self._reread(chat)
        self._read_soon(chat)

    def _detach(self, chat: TrackedChat) -> None:
        if chat.model_ref is not None and chat.observer is not None:
            # A disposed model has nothing to unobserve.
            with contextlib.suppress(Exception):
                chat.model_ref.unobserve_messages(chat.observer)
        chat.model_ref = chat.observer = None

    def _on_message(self, chat: TrackedChat, event: Any) -> None:
        """One message change (sync, from the chat model): log it, read the chat soon."""
        self.messages_seen += 1
        message = getattr(event, "message", None)
        if message is None:
            return
        chat.log.put(as_dict(message))
        if chat.model_ref is not None and getattr(message, "sender", "") not in chat.log.users:
            chat.log.users = chat_users(chat.model_ref)
        self._read_soon(chat)

    def _reread(self, chat: TrackedChat) -> None:
        """Everything from the model (attaching, a turn's end, collaboration's missed updates)."""
        model = chat.model_ref
        try:
            messages = [as_dict(m) for m in model.get_messages()[-MAX_MESSAGES:]]
        except Exception:  # noqa: BLE001 - a model being disposed: keep what the log has
            return
        chat.log.replace(messages)
        chat.log.users = chat_users(model)

    def _read_soon(self, chat: TrackedChat) -> None:
        if chat.read_pending:
            return
        chat.read_pending = True
        asyncio.get_event_loop().call_later(SETTLE_SECONDS, self._read, chat)

    def _read(self, chat: TrackedChat) -> None:
        chat.read_pending = False
        if self.chats.get(chat.path) is not chat:
            return
        try:
            view = read_chat(chat.log.document())
        except ValueError:
            return
        self._update(chat, view)

    def _poll_files(self) -> None:
        """The fallback: read the chat files the page reports, when they changed (on the
        pool: a chat file can be replaced by a FIFO or a huge file)."""
        if self._polling_files or self.host.stopped:
            return
        paths = list(self.host.hub.chat_paths())
        if not paths:
            return
        known = {path: chat.mtime for path, chat in self.chats.items()}
        root = self.sink.root_dir
        self._polling_files = True

        async def poll() -> None:
            try:
                found = await self.sink.in_pool(lambda: read_chat_files(root, paths, known))
            except Exception:  # the server stopping
                log.debug("jupyter_recap: chat files not read", exc_info=True)
                found = {}
            finally:
                self._polling_files = False
            for path, (mtime, data) in found.items():
                chat = self._track(path)
                chat.mtime = mtime
                if data is None:
                    continue
                messages = data.get("messages")
                listed = messages if isinstance(messages, list) else []
                chat.log.replace([m for m in listed if isinstance(m, dict)])
                users = data.get("users")
                chat.log.users = users if isinstance(users, dict) else {}
                self._read(chat)

        task = asyncio.ensure_future(poll())
        self.recaps.tasks.add(task)
        task.add_done_callback(self.recaps.tasks.discard)

    # -- what a read changes -----------------------------------------------------------------

    def _update(self, chat: TrackedChat, view: ChatView) -> None:
        first = chat.view is None
        chat.view = view
        chat.touched = time.time()
        if not view.has_persona:
            return  # a chat between people: no row
        state = view.state(chat.processing)
        transcript = chat_transcript(view)
        chat.transcript_text = build_context(transcript)
        chat.digest = fingerprint(chat.transcript_text) if chat.transcript_text else ""
        before, chat.state = chat.state, state
        if first and state != "running":
            # How the chat stood when the server first read it: its history, not news (an old
            # chat opened again must not notify or draft).
            self.rows.publish(chat, history=True)
            return
        ended = state in ("finished", "errored") and before not in ("finished", "errored")
        # Waiting for approval ends the agent's part of the turn: a recap can say what waits.
        paused = state == "waiting" and before in ("running", "idle")
        if state == "running" and before != "running":
            self.recaps.act(chat, chat.schedule.turn_started())
        elif ended or paused:
            chat.ended_turns += 1
            outcome = "errored" if state == "errored" else "ok"
            self.recaps.act(chat, chat.schedule.turn_ended(outcome))
        self.rows.publish(chat)
        self.rows.publish_lines()

    # -- bookkeeping -------------------------------------------------------------------------

    def _track(self, path: str) -> TrackedChat:
        chat = self.chats.get(path)
        if chat is None:
            chat = self.chats[path] = TrackedChat(path, self.host.recap_settings())
            # A chat no page reports is not looked at: its agent works while the person is
            # away from it (the schedule's idle fallback is for kernels without a page).
            focused = self.host.hub.focused(chat_row_id(path))
            chat.schedule.focus(bool(focused))
            while len(self.chats) > max(1, int(self.host.max_chats)):
                oldest = min(self.chats.values(), key=lambda c: c.touched)
                self._detach(oldest)
                self._forget(oldest.path)
        return chat

    def _followed(self, chat: TrackedChat) -> bool:
        return self.chats.get(chat.path) is chat

    def _forget(self, path: str) -> None:
        chat = self.chats.pop(path, None)
        if chat is not None:
            if chat.timer is not None:
                chat.timer.cancel()
            self._ids = {k: v for k, v in self._ids.items() if v != path}
            self.host.board.forget(chat_row_id(path))
