"""One chat as the chat source keeps it: its bounded message log and where its turn stands.

A chat's messages arrive one change at a time (from jupyterlab-chat's model) or as a whole file
(the fallback for an older jupyterlab-chat); :class:`ChatLog` keeps the latest
:data:`~jupyter_recap.chats.document.MAX_MESSAGES` of them with long texts cut, as the reader
(:mod:`jupyter_recap.chats.document`) takes them. :class:`TrackedChat` holds the rest of what the
source knows of one chat: its latest reading, its recap schedule and draft.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ... import untrusted
from ...chats.document import MAX_MESSAGES, ChatView, bounded
from ...errors import RefusedFile
from ...pipeline.providers.base import CancelToken
from ...schedule import Schedule
from ...settings import Recap
from ...wire import RecapInfo

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

    def __init__(self, path: str, settings: Recap) -> None:
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


def chat_users(model: Any) -> dict[str, dict[str, Any]]:
    try:
        users = model.get_users()
        return {str(name): as_dict(user) for name, user in list(users.items())[:256]}
    except Exception:  # noqa: BLE001 - no users: every sender counts by its id
        return {}


def collaborative(model: Any) -> bool:
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
