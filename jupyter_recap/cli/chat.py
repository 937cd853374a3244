"""``jupyter recap PATH.chat``: a Jupyter AI chat file read for a recap.

The chat's turns with a persona become a transcript (:mod:`..chats.recap`); a tool call waiting
for approval goes into the framing, so the offline engine ends with it. The offline engine
writes the recap unless ``--model`` names another: a chat is often read to see where an agent
stands, and that should cost nothing and send nothing.
"""

from __future__ import annotations

import time

from .. import untrusted
from ..chats.document import ChatView, read_chat
from ..chats.recap import approval_text, chat_transcript
from ..errors import NotebookError, RefusedFile
from ..record.transcript import Transcript
from ..stores.framing import Framing
from ..textutil import SHOWN_CHARS, shorten

MAX_CHAT_BYTES = 64 << 20
"""Larger chat files are refused (a chat of that size is not one a person wrote)."""


MID_WRITE_TRIES = 5
MID_WRITE_PAUSE = 0.05
"""jupyterlab-chat saves a chat by truncating the file and writing it again, on every message
update while a persona streams; a read between the two sees an empty or cut file. A file that
does not parse is read again a few times (a quarter of a second in all) before it is called
broken: a writer descheduled between two writes leaves no sign a read could wait for."""


def read_chat_file(path: str) -> ChatView:
    """The chat at ``path``; NotebookError (one line) when it cannot be read as one.

    Read the one safe way (:mod:`..untrusted`): a FIFO, a link to a device, a file over
    :data:`MAX_CHAT_BYTES` or a document nested too deep is refused at once, never retried.
    """
    shown = shorten(path, SHOWN_CHARS)
    data: object = None
    for attempt in range(MID_WRITE_TRIES):
        try:
            _, raw = untrusted.read_file(path, cap=MAX_CHAT_BYTES, shown=shown)
            data = untrusted.parse_json(raw, shown=shown)
            break
        except FileNotFoundError:
            raise NotebookError(f"no such chat file: {shown}") from None
        except IsADirectoryError:
            raise NotebookError(f"{shown} is a directory, not a chat file") from None
        except OSError as error:
            raise NotebookError(f"cannot read {shown}: {error.__class__.__name__}") from None
        except RefusedFile as refusal:
            if refusal.kind in ("not JSON", "not text") and attempt + 1 < MID_WRITE_TRIES:
                time.sleep(MID_WRITE_PAUSE)  # caught between the truncation and the write
                continue
            raise NotebookError(f"{shown} is not a chat file: {refusal.what}") from None
    try:
        return read_chat(data)
    except ValueError as error:
        raise NotebookError(f"{shown} is not a chat file: {error}") from None


def chat_story(view: ChatView) -> tuple[Transcript, Framing, dict[str, str | None]]:
    """The transcript, framing and JSON extras of a chat's recap."""
    turn = view.latest
    waiting = turn.waiting if turn is not None else None
    approval = approval_text(waiting) if waiting is not None else None
    extra: dict[str, str | None] = {
        "agent": view.persona_name() if view.has_persona else None,
        "state": view.state(),
        "approval": approval,
    }
    return chat_transcript(view), Framing(waiting=approval), extra
