"""What the chat source needs of the server beyond an outside source's sink.

Chats are rows of the agents panel of their own, with a focus of their own and recaps drafted
in the server: so the chat source also reads and writes those rows, hears the page's focus on a
chat, and opens drafts on the server's pool. It sees the server only through :class:`ChatHost`.
"""

from __future__ import annotations

from typing import Protocol

from ...focus.board import AgentBoard
from ...focus.hub import FocusHub
from ...pipeline.providers.base import CancelToken
from ...settings import Recap
from .sink import EventBus


class ChatHost(Protocol):
    """The parts of the server (``RecapServer``) the chat source drives."""

    @property
    def board(self) -> AgentBoard:
        """The agents panel: a chat's row is written, renamed and forgotten there."""
        ...

    @property
    def hub(self) -> FocusHub:
        """The page's focus: on a chat (its row id), and which chats pages have open."""
        ...

    @property
    def stopped(self) -> bool: ...

    @property
    def max_chats(self) -> int:
        """Chats followed at once (``c.RecapServer.max_chats``)."""
        ...

    @property
    def event_bus(self) -> EventBus | None:
        """jupyter_server's event logger (None in a server without one): chats opened and
        closed, personas' states and renames are heard there."""
        ...

    def recap_settings(self) -> Recap:
        """``c.Recap.*`` of the server's configuration: what a chat's recap is drafted with."""
        ...

    def open_draft(self) -> CancelToken:
        """The cancel token of one more recap drafted in the server (raises once it stops)."""
        ...

    def close_draft(self, token: CancelToken) -> None: ...
