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
import dataclasses
import functools
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .. import untrusted
from ..chats.document import MAX_MESSAGES, ChatView, bounded, chat_name, read_chat
from ..chats.notebooks import outside_activity
from ..chats.recap import approval_text, chat_transcript
from ..errors import RefusedFile
from ..focus.board import ChatFacts, chat_row_id
from ..focus.validate import Report
from ..pipeline.context import build_context, fingerprint
from ..pipeline.providers.base import CancelToken
from ..schedule import CancelDraft, Schedule, ShowDrafting, ShowRecap, StartDraft
from ..stores.framing import Framing
from ..wire import OutsideActivity, RecapInfo

log = logging.getLogger(__name__)

CHAT_EVENTS = "https://schema.jupyter.org/jupyterlab_chat/room/v1"
PERSONA_STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"
CONTENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
SETTLE_SECONDS = 0.05
"""A chat is read this long after its first unread change (later changes join that read)."""
RTC_REREAD_SECONDS = 1.0
FILE_POLL_SECONDS = 2.0
MAX_NOTEBOOKS_SEEN = 256
"""Notebooks whose last look the source remembers (for the line of what an agent did there)."""
_KEEP_CHARS = 8000
"""Text of one message field kept in a chat's log (the reader cuts it again)."""


class ChatLog:
    """The latest messages of one chat, bounded, as the reader takes them."""

    def __init__(self) -> None:
        self.messages: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.users: dict[str, dict[str, Any]] = {}
        self.chat_id = ""

    def put(self, message: dict[str, Any]) -> None:
        key = str(message.get("id", ""))[:128] or str(len(self.messages))
        self.messages[key] = _kept(message)
        while len(self.messages) > MAX_MESSAGES:
            self.messages.popitem(last=False)

    def replace(self, messages: list[dict[str, Any]]) -> None:
        self.messages.clear()
        for message in messages[-MAX_MESSAGES:]:
            self.put(message)

    def document(self) -> dict[str, Any]:
        messages = sorted(self.messages.values(), key=lambda m: _time(m.get("time")))
        return {"messages": messages, "users": self.users, "metadata": {"id": self.chat_id}}


class TrackedChat:
    """One chat: its log, where its latest turn stands, its recap schedule and draft."""

    def __init__(self, path: str, settings: Any) -> None:
        self.path = path
        self.log = ChatLog()
        self.view: ChatView | None = None
        self.processing = False
        self.model: str | None = None
        self.schedule = Schedule(
            settings,
            clock=time.time,
            fingerprint=lambda: self.digest,
            completed_turns=lambda: self.ended_turns,
        )
        self.transcript_text = ""
        self.digest = ""
        self.ended_turns = 0
        self.recap: RecapInfo | None = None
        self.recap_turns = 0
        """The turns that had ended when :attr:`recap` was drafted: it covers the latest."""
        self.offline: tuple[str, RecapInfo | None] | None = None
        """(digest, the offline recap of the chat as it was then), written when a row needs it."""
        self.drafting: CancelToken | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.read_pending = False
        self.observer: Any = None
        self.model_ref: Any = None
        self.state = "idle"
        self.mtime = 0.0
        self.touched = time.time()


class ChatSource:
    """Observes this server's chats and keeps their rows, recaps and notebook lines."""

    def __init__(self, recap: Any) -> None:
        self.recap = recap
        self.serverapp = recap.serverapp
        self.chats: dict[str, TrackedChat] = {}
        """Path → tracked chat."""
        self._ids: dict[str, str] = {}
        """Chat id → path."""
        self._last_seen: dict[str, float] = {}
        """Notebook path → when the person last looked at it."""
        self._looking: set[str] = set()
        """Notebooks looked at now."""
        self.manager: Any = None
        self.enabled = False
        self.fallback = False
        """No ChatManager (jupyterlab-chat before 0.25): chat files are read instead."""
        self._poller: Any = None
        self._recap_settings: Any = None
        self._cell_labels = CellLabels(str(self.serverapp.root_dir))
        self._labelling: asyncio.Future[None] | None = None
        """The pool's read of the cell labels, while it runs."""
        self._labels_again = False
        self._labels_awaited = False
        """Lines wait for labels never read yet (published when the read ends)."""
        self._polling_files = False
        self._tasks: set[asyncio.Future[None]] = set()
        self.messages_seen = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Observe the chat manager, or fall back to the chat files; off without either."""
        settings = self.serverapp.web_app.settings
        self.manager = settings.get("chat_manager")
        events = getattr(self.serverapp, "event_logger", None)
        if self.manager is not None:
            self.enabled = True
            self.manager.observe_chats(self._on_chat_event)
            for chat_id, model in list(settings.get("chats_by_id", {}).items()):
                self._attach(chat_id, model)
        elif _chat_extension_loaded(self.serverapp):
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
        events = getattr(self.serverapp, "event_logger", None)
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
            elif processing and _collaborative(chat.model_ref):
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
            self.recap.board.rename_chat(old, new)

    def focus(self, path: str, focused: bool | None) -> None:
        """The page's focus on the chat at ``path`` changed."""
        if self.fallback and self._poller is None:
            from tornado.ioloop import PeriodicCallback

            self._poller = PeriodicCallback(self._poll_files, FILE_POLL_SECONDS * 1000)
            self._poller.start()
            self._poll_files()
        chat = self.chats.get(path)
        if chat is not None and focused is not None:
            self._act(chat, chat.schedule.focus(focused))

    def looked_at(self, notebook: str, focused: bool) -> None:
        """A focus report of ``notebook``'s kernel: while it is looked at, what an agent does
        there is seen as it happens, not news for later."""
        if focused:
            self._looking.add(notebook)
        elif notebook in self._looking:
            self._looking.discard(notebook)
        else:
            return
        self._last_seen[notebook] = time.time()
        if len(self._looking) > MAX_NOTEBOOKS_SEEN:
            self._looking.clear()  # bounded; a report every 10 s puts them back
        if len(self._last_seen) > MAX_NOTEBOOKS_SEEN:
            oldest = min(self._last_seen, key=self._last_seen.__getitem__)
            del self._last_seen[oldest]

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
        if self._polling_files or self.recap.stopped:
            return
        paths = list(self.recap.hub.chat_paths())
        if not paths:
            return
        known = {path: chat.mtime for path, chat in self.chats.items()}
        root = str(self.serverapp.root_dir)
        self._polling_files = True

        async def poll() -> None:
            try:
                found = await self.recap.in_pool(lambda: read_chat_files(root, paths, known))
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
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
            self._publish(chat, history=True)
            return
        ended = state in ("finished", "errored") and before not in ("finished", "errored")
        # Waiting for approval ends the agent's part of the turn: a recap can say what waits.
        paused = state == "waiting" and before in ("running", "idle")
        if state == "running" and before != "running":
            self._act(chat, chat.schedule.turn_started())
        elif ended or paused:
            chat.ended_turns += 1
            outcome = "errored" if state == "errored" else "ok"
            self._act(chat, chat.schedule.turn_ended(outcome))
        self._publish(chat)
        self._publish_outside()

    def _publish(self, chat: TrackedChat, *, history: bool = False) -> None:
        view = chat.view
        if view is None:
            return
        turn = view.latest
        waiting = turn.waiting if turn is not None else None
        state = chat.state
        failed = turn.failed if turn is not None else None
        recap, drafting = self._current_recap(chat, view)
        report = Report(
            turn="running"
            if state in ("running", "waiting")
            else ("errored" if state == "errored" else "ok"),
            turn_started=turn.at if turn is not None else None,
            turn_ended=turn.last_at if state in ("finished", "errored") and turn else None,
            error=failed.error if failed is not None and state == "errored" else None,
            last_activity=turn.last_at if turn is not None else None,
            recap=recap,
            drafting=drafting,
        )
        facts = ChatFacts(
            agent=view.persona_name(),
            model=chat.model,
            approval=approval_text(waiting) if waiting is not None else None,
        )
        self.recap.board.chat(chat.path, report, facts, history=history)

    @staticmethod
    def _current_recap(chat: TrackedChat, view: ChatView) -> tuple[RecapInfo | None, bool]:
        """The row's recap and whether one is being drafted: the recap shown while it covers
        the latest ended turn; after a newer one, *drafting…* while a recap of it is on its
        way, else the offline recap of it (never the older text as if it were the news)."""
        drafting = chat.drafting is not None or chat.schedule.coming()
        if chat.recap is None or chat.recap_turns == chat.ended_turns:
            return chat.recap, drafting
        if drafting:
            return None, True
        if chat.offline is None or chat.offline[0] != chat.digest:
            from ..pipeline.offline import offline_recap

            turn = view.latest
            waiting = turn.waiting if turn is not None else None
            text = offline_recap(
                chat_transcript(view),
                waiting=approval_text(waiting) if waiting is not None else None,
            )
            info: RecapInfo | None = None
            if text:
                info = {"text": text, "model": "offline", "at": round(time.time(), 3), "links": []}
            chat.offline = (chat.digest, info)
        return chat.offline[1], False

    def _publish_outside(self, *, labels_read: bool = False) -> None:
        """The chats' lines of what their agents did in notebooks, to the board. A line naming
        cells of a notebook whose labels were never read waits for that read (on the pool),
        unless ``labels_read``: it has just been made."""
        root = str(self.serverapp.root_dir)
        lines: dict[str, OutsideActivity] = {}
        for chat in self.chats.values():
            if chat.view is None:
                continue
            found = outside_activity(
                chat.view,
                chat_name(chat.path),
                root=root,
                since=self._seen_since,
                label=self._cell_labels,
            )
            who = f"{chat.view.persona_name()} via {chat_name(chat.path)}"
            for path, line in found.items():
                # The change line of that notebook names the chat's agent as who changed it.
                self.recap.notebook_touched(path, who, line["at"])
                if path not in lines or line["at"] > lines[path]["at"]:
                    lines[path] = line
        if not labels_read and self._cell_labels.unread():
            self._labels_awaited = True  # published once the labels are read
        else:
            self.recap.publish_outside("chats", lines)
        self._refresh_labels()

    def _refresh_labels(self) -> None:
        """Read the cell labels the lines asked for on the pool, never on the loop; publish the
        lines again when a label changed or the lines waited for them (one read at a time; a
        request meanwhile is served by the next)."""
        if self._labelling is not None:
            self._labels_again = True
            return
        asked = self._cell_labels.asked()
        if not asked or self.recap.stopped:
            return

        async def refresh() -> None:
            try:
                changed = await self.recap.in_pool(lambda: self._cell_labels.refresh(asked))
            except Exception:  # the server stopping: the lines keep the labels they have
                log.debug("jupyter_recap: cell labels not read", exc_info=True)
                changed = False
            finally:
                self._labelling = None
            again, self._labels_again = self._labels_again, False
            awaited, self._labels_awaited = self._labels_awaited, False
            if self.recap.stopped:
                return
            if changed or awaited or again:
                # Asks for the labels again: files unchanged since are only stat-ed, and the
                # round ends there.
                self._publish_outside(labels_read=True)

        self._labelling = asyncio.ensure_future(refresh())

    def _seen_since(self, notebook: str) -> float:
        if notebook in self._looking:
            return float("inf")  # looked at now: nothing of it is news
        return self._last_seen.get(notebook, 0.0)

    # -- recaps ------------------------------------------------------------------------------

    def _act(self, chat: TrackedChat, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, StartDraft):
                self._start_draft(chat, action)
            elif isinstance(action, CancelDraft) and chat.drafting is not None:
                chat.drafting.cancel()
            elif isinstance(action, ShowRecap):
                chat.recap = {
                    "text": action.text,
                    "model": action.model,
                    "at": round(time.time(), 3),
                    "links": [],
                }
                chat.recap_turns = action.turns
                self._publish(chat)
            elif isinstance(action, ShowDrafting):
                self._publish(chat)  # the row says drafting… (the draft is in flight)
        self._arm(chat)

    def _arm(self, chat: TrackedChat) -> None:
        if chat.timer is not None:
            chat.timer.cancel()
            chat.timer = None
        deadline = chat.schedule.next_deadline()
        if deadline is not None:
            delay = max(0.0, deadline - time.time())
            chat.timer = asyncio.get_event_loop().call_later(delay, self._tick, chat)

    def _tick(self, chat: TrackedChat) -> None:
        chat.timer = None
        if self.chats.get(chat.path) is chat:
            self._act(chat, chat.schedule.tick())

    def _start_draft(self, chat: TrackedChat, draft: StartDraft) -> None:
        from ..pipeline.service import draft_recap
        from ..stores.usage import UsageLedger

        view = chat.view
        if view is None or self.recap.stopped:
            return
        token = self.recap.open_draft()
        chat.drafting = token
        turn = view.latest
        waiting = turn.waiting if turn is not None else None
        job = functools.partial(
            draft_recap,
            chat_transcript(view),
            model=draft.model,
            settings=self._settings(),
            trigger=draft.reason,
            cancel=token,
            framing=Framing(waiting=approval_text(waiting) if waiting is not None else None),
            usage=UsageLedger(),
        )

        async def run() -> None:
            try:
                result = await self.recap.in_pool(job)
            except Exception:  # a draft that fails shows nothing; the log says why
                log.warning("jupyter_recap: a chat recap failed", exc_info=True)
                result = None
            finally:
                self.recap.close_draft(token)
                if chat.drafting is token:  # not a draft that took over meanwhile
                    chat.drafting = None
            written = result.recap if result is not None else None
            self._act(
                chat,
                chat.schedule.draft_done(
                    draft.id,
                    written.text if written is not None else None,
                    written.model if written is not None else "",
                ),
            )
            self._publish(chat)

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._publish(chat)

    # -- bookkeeping -------------------------------------------------------------------------

    def _track(self, path: str) -> TrackedChat:
        chat = self.chats.get(path)
        if chat is None:
            chat = self.chats[path] = TrackedChat(path, self._settings())
            # A chat no page reports is not looked at: its agent works while the person is
            # away from it (the schedule's idle fallback is for kernels without a page).
            focused = self.recap.hub.focused(chat_row_id(path))
            chat.schedule.focus(bool(focused))
            while len(self.chats) > max(1, int(self.recap.max_chats)):
                oldest = min(self.chats.values(), key=lambda c: c.touched)
                self._detach(oldest)
                self._forget(oldest.path)
        return chat

    def _settings(self) -> Any:
        """``c.Recap.*`` of the server's configuration (read once)."""
        if self._recap_settings is None:
            from ..settings import Recap

            self._recap_settings = Recap(parent=self.recap)
        return self._recap_settings

    def _forget(self, path: str) -> None:
        chat = self.chats.pop(path, None)
        if chat is not None:
            if chat.timer is not None:
                chat.timer.cancel()
            self._ids = {k: v for k, v in self._ids.items() if v != path}
            self.recap.board.forget(chat_row_id(path))


def chat_users(model: Any) -> dict[str, dict[str, Any]]:
    try:
        users = model.get_users()
        return {str(name): as_dict(user) for name, user in list(users.items())[:256]}
    except Exception:  # noqa: BLE001 - no users: every sender counts by its id
        return {}


def _collaborative(model: Any) -> bool:
    """A chat model of real-time collaboration (a Y document), not a WebSocket one."""
    return model is not None and type(model).__name__ != "WsChatModel"


def as_dict(value: object) -> dict[str, Any]:
    """A chat's message or user (dataclasses of jupyterlab-chat) as plain data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value if isinstance(value, dict) else {}


def _kept(message: dict[str, Any]) -> dict[str, Any]:
    """A message with what the reader takes of it, long texts cut (a 2 MB tool output is not
    kept whole)."""
    kept = {key: message.get(key) for key in ("id", "time", "sender", "mentions", "deleted")}
    body = message.get("body")
    kept["body"] = body[:_KEEP_CHARS] if isinstance(body, str) else ""
    metadata = message.get("metadata")
    if isinstance(metadata, dict):
        # The tool calls, and whom the chat input's persona picker addressed.
        wanted = {key: metadata[key] for key in ("tool_calls", "to_persona") if key in metadata}
        kept["metadata"] = bounded(wanted, chars=_KEEP_CHARS, items=64, depth=6)
    else:
        kept["metadata"] = None
    return kept


def _time(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _chat_extension_loaded(serverapp: Any) -> bool:
    """Whether jupyterlab-chat's server extension runs in this server."""
    try:
        extension = serverapp.extension_manager.extensions.get("jupyterlab_chat")
        return extension is not None and bool(extension.enabled)
    except AttributeError:
        return False


MAX_CHAT_FILE_BYTES = 16 << 20
"""Larger chat files are not read by the fallback."""


def read_chat_files(
    root: str, paths: list[str], known: dict[str, float]
) -> dict[str, tuple[float, dict[str, Any] | None]]:
    """Path → (mtime, the chat document, None when it cannot be read) of the chat files among
    ``paths`` (relative to ``root``) whose time is not the one ``known``; run in a thread."""
    base = Path(root).resolve()
    found: dict[str, tuple[float, dict[str, Any] | None]] = {}
    for path in paths:
        try:
            file = (base / path).resolve()
            if not file.is_relative_to(base):
                continue  # a page names chats of this server's folder, nothing else
            mtime = file.stat().st_mtime
        except (OSError, ValueError):
            continue
        if mtime == known.get(path):
            continue
        try:
            _, data = untrusted.load_json(file, cap=MAX_CHAT_FILE_BYTES)
        except (OSError, RefusedFile):
            data = None
        found[path] = (mtime, data if isinstance(data, dict) else None)
    return found


class CellLabels:
    """How the person knows a notebook's cells: ``In[7]`` for a cell that ran, ``cell 3`` for
    one that did not.

    Asked on the server's loop (while a chat's lines are made), it only looks in its cache and
    notes the notebooks it was asked about; :meth:`refresh`, on a thread of the pool, reads
    those whose file changed (a streaming reply asks on every read of its chat) the one safe
    way (:mod:`...untrusted`), so a notebook that is a FIFO, huge or nested too deep never
    blocks the loop: it has no labels. The cache is shared by the two, under a lock.
    """

    MAX_NOTEBOOKS = 64
    MAX_BYTES = 32 << 20

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self._cache: OrderedDict[str, tuple[tuple[int, int], dict[str, str]]] = OrderedDict()
        self._asked: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, notebook: str, cell_id: str) -> str | None:
        with self._lock:
            if len(self._asked) < self.MAX_NOTEBOOKS:
                self._asked.add(notebook)
            cached = self._cache.get(notebook)
            return cached[1].get(cell_id) if cached is not None else None

    def unread(self) -> bool:
        """Whether a notebook asked about since :meth:`asked` has no labels read yet."""
        with self._lock:
            return any(notebook not in self._cache for notebook in self._asked)

    def asked(self) -> list[str]:
        """The notebooks asked about since the last call (to :meth:`refresh` them)."""
        with self._lock:
            asked, self._asked = sorted(self._asked), set()
        return asked

    def refresh(self, notebooks: list[str]) -> bool:
        """Read again those of ``notebooks`` whose file changed (in a thread); whether any
        label changed."""
        changed = False
        for notebook in notebooks:
            path = self.root / notebook
            with self._lock:
                cached = self._cache.get(notebook)
            try:
                info = path.stat()
            except OSError:
                labels, stamp = {}, (0, 0)
            else:
                stamp = (info.st_mtime_ns, info.st_size)
                if cached is not None and cached[0] == stamp:
                    with self._lock:
                        if notebook in self._cache:
                            self._cache.move_to_end(notebook)  # the least recently asked go
                    continue
                labels = self._read(path)
            with self._lock:
                changed = changed or cached is None or cached[1] != labels
                self._cache.pop(notebook, None)
                self._cache[notebook] = (stamp, labels)
                while len(self._cache) > self.MAX_NOTEBOOKS:
                    self._cache.popitem(last=False)
        return changed

    @classmethod
    def _read(cls, path: Path) -> dict[str, str]:
        try:
            _, data = untrusted.load_json(path, cap=cls.MAX_BYTES)
        except (OSError, RefusedFile):
            return {}
        cells = data.get("cells", []) if isinstance(data, dict) else []
        labels: dict[str, str] = {}
        for index, cell in enumerate(cells if isinstance(cells, list) else []):
            if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
                continue
            count = cell.get("execution_count")
            ran = isinstance(count, int) and not isinstance(count, bool)
            labels[cell["id"]] = f"In[{count}]" if ran else f"cell {index + 1}"
        return labels
