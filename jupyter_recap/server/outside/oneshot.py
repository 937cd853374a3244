"""A kernel's ``%%ai model@Persona`` cell: the persona's tool calls, sent to that kernel.

jupyter-ai-magic-commands sends the prompt of such a cell to the persona manager's one-shot
route (``POST /api/ai/message/{persona}``), which answers it in a chat of its own kept only in
memory: no file, no chat manager, no events. The reply text goes back to the kernel, which
records it as the cell's turn; the tool calls the persona made on the way (the notebook it
edited, the command that failed) do not.

jupyter-ai has no hook for that chat, so this module gives the route one that reports: the
route's module makes its chat with the class its name ``YChat`` holds, and while this server
runs that name is a subclass of jupyterlab-chat's ``YChat`` whose only addition is to hand
itself to :class:`OneShotTurns` (which observes its messages like any chat's). The original is
put back at stop. When the module is absent (the persona manager does not run here), nothing is
installed; when its ``YChat`` is not jupyterlab-chat's (another release, or someone else's
wrapper), nothing is installed either and the server logs one warning saying these cells keep
their prompt and reply only.

Which kernel a one-shot chat belongs to is read from the prompt, the one link there is
(:meth:`OneShotTurns._kernel_for`). Checked against jupyter-ai-magic-commands 0.0.4 and the
persona manager's route in 0.2.2 and 0.3.0: the magic's request carries the prompt, the
cell's model parameters and the server's token, nothing that names its kernel or session; the
route makes its chat, then in the same step (no ``await`` between) the ``Message`` holding the
prompt. So the route's ``Message`` name is given a wrapper too, which hands the prompt to the
chat made in the same request (a context variable: each request runs in a task of its own);
the kernel is the one whose running cell addresses that persona with that prompt, its
``{name}`` fields standing for any text (the magic fills them in). Only where no running cell
or several could have sent it (``--eval`` makes the prompt from the cell's output; two cells
asking the same thing) does timing decide, as before the link.

Each tool call that ends (or waits for the person's approval) is sent once, as a
``outside`` event of its feed, to the kernel whose running cell addresses that persona
(the execution watcher reads the cell's first line on IOPub); the kernel writes it into the
cell's turn. A one-shot chat nobody's cell addresses is left alone.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from string import Formatter
from typing import Any, cast

from ...chats.document import LINE_CHARS, MAX_MESSAGES, ToolStep, read_chat
from ...outside.source import API_VERSION, OutsideSink, SourceContext
from ...textutil import shorten
from ...wire import OutsideEntry
from .chat_log import ChatLog, as_dict, chat_users
from .chats import SETTLE_SECONDS
from .host import PersonaCell, SourceHost

log = logging.getLogger(__name__)

MAX_TURNS = 16
"""One-shot chats followed at once (the oldest is let go)."""
MATCH_SECONDS = 5.0
"""A cell that started at most this long after its one-shot chat was made may still own it
(the watcher hears the cell's input on IOPub, which can come after the magic's request)."""
_SENT = frozenset({"completed", "failed", "waiting"})
"""States of a tool call the kernel hears of (a running call is news only once it ends)."""
_OUTPUT_CHARS = 2000
"""Output of one tool call sent to the kernel (the transcript cuts it again)."""


@dataclass(eq=False)
class OneShotTurn:
    """One request to the one-shot route, followed from its first message."""

    opened: float
    log: ChatLog = field(default_factory=ChatLog)
    chat: Any = None
    """The route's chat from a change until the read that follows it."""
    kernel_id: str | None = None
    cell_started: float = 0.0
    """When the cell that owns this chat started (its kernel's watcher entry)."""
    sent: dict[str, str] = field(default_factory=dict)
    """Tool call id → the state last sent to the kernel."""
    read_pending: bool = False
    prompt: str | None = None
    """The request's prompt, as the route's ``Message`` carried it (None: not seen)."""


_ROUTE_TURN: contextvars.ContextVar[OneShotTurn | None] = contextvars.ContextVar(
    "jupyter_recap_oneshot_turn", default=None
)
"""The chat the route made in the request running in this task (see the module's docstring)."""


class OneShotTurns:
    """Follows the one-shot route's chats and sends their tool calls to the asking kernel."""

    name = "oneshot"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(
        self, sink: OutsideSink, persona_cells: Callable[[], dict[str, PersonaCell]]
    ) -> None:
        """``persona_cells``: kernel id → its running ``%%ai model@Persona`` cell, as the
        server's execution watcher saw it."""
        self.sink = sink
        self.persona_cells = persona_cells
        self.turns: list[OneShotTurn] = []
        self.installed = False
        self._module: Any = None
        self._original: Any = None
        self._observed: Any = None
        self._message: tuple[Any, Any] | None = None
        """The route's ``Message`` and the wrapper put in its place, while it is there."""

    def start(self) -> None:
        """Give the one-shot route a chat class that reports (see the module's docstring)."""
        # Only when the persona manager runs in this server (its extension imported the route's
        # module): importing it ourselves would load Jupyter AI into every server that merely
        # has it installed.
        handlers: Any = sys.modules.get("jupyter_ai_persona_manager.handlers")
        if handlers is None:
            return
        try:
            from jupyterlab_chat.ychat import YChat
        except ImportError:
            log.warning(
                "jupyter_recap: %%ai persona cells' tool calls are not recorded: the persona "
                "manager runs without jupyterlab-chat's YChat"
            )
            return
        if getattr(handlers, "YChat", None) is not YChat:
            # Another persona-manager release (or someone else's wrapper): the swap this
            # relies on cannot be made safely, and the person should hear why.
            log.warning(
                "jupyter_recap: %%ai persona cells' tool calls are not recorded: the persona "
                "manager's one-shot route does not make jupyterlab-chat's YChat (another "
                "release of jupyter-ai-persona-manager?)"
            )
            return
        source = weakref.ref(self)

        class ObservedYChat(YChat):
            """jupyterlab-chat's chat, which tells jupyter_recap it was made."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
                turns = source()
                if turns is not None:
                    turns.opened(self)

        self._module, self._original, self._observed = handlers, YChat, ObservedYChat
        handlers.YChat = ObservedYChat
        self.installed = True
        self._wrap_message(handlers, source)

    def _wrap_message(self, handlers: Any, source: weakref.ref[OneShotTurns]) -> None:
        """Give the route a ``Message`` that hands each request's prompt to its chat."""
        from jupyterlab_chat.models import Message  # YChat's own package, imported already

        if getattr(handlers, "Message", None) is not Message:
            log.info(
                "jupyter_recap: the one-shot route makes no jupyterlab-chat Message here: "
                "which kernel asked is decided by timing alone"
            )
            return

        def observed_message(*args: Any, **kwargs: Any) -> Any:
            # A function, so the route's message stays jupyterlab-chat's own class.
            message = Message(*args, **kwargs)
            turns = source()
            if turns is not None:
                turns.asked(message)
            return message

        handlers.Message = observed_message
        self._message = (Message, observed_message)

    def stop(self) -> None:
        if self.installed and getattr(self._module, "YChat", None) is self._observed:
            self._module.YChat = self._original
        if self._message is not None:
            original, wrapper = self._message
            if getattr(self._module, "Message", None) is wrapper:
                self._module.Message = original
            self._message = None
        self.installed = False
        self.turns.clear()  # their chats' observers then find them gone

    # -- one request -------------------------------------------------------------------------

    def opened(self, chat: Any) -> None:
        """The route made a chat for one request (never raises into the route)."""
        try:
            turn = OneShotTurn(opened=time.time())
            # The chat's own observer: its ``observe_messages`` reports nothing for a chat that
            # was never loaded from a file (and no updates of a message in any chat).
            chat.observe(functools.partial(self._changed, turn, weakref.ref(chat)))
            self.turns.append(turn)
            del self.turns[:-MAX_TURNS]
            _ROUTE_TURN.set(turn)
        except Exception:  # the route works without us
            log.warning("jupyter_recap: cannot follow a one-shot persona chat", exc_info=True)

    def asked(self, message: Any) -> None:
        """The route made the message of its request: the prompt of the chat it made just
        before, in the same task (never raises into the route)."""
        try:
            turn = _ROUTE_TURN.get()
            body = getattr(message, "body", None)
            if turn is not None and turn.prompt is None and isinstance(body, str):
                turn.prompt = body
        except Exception:
            log.debug("jupyter_recap: a one-shot request's prompt was not read", exc_info=True)

    def _changed(self, turn: OneShotTurn, chat: Any, name: str, event: Any) -> None:
        """A change of the chat (inside its transaction: the read comes a moment later)."""
        if name not in ("messages", "users") or turn not in self.turns:
            return
        # Held until the read: the route lets its chat go as soon as it has answered.
        turn.chat = chat()
        if not turn.read_pending:
            turn.read_pending = True
            asyncio.get_event_loop().call_later(SETTLE_SECONDS, self._read, turn)

    def _read(self, turn: OneShotTurn) -> None:
        turn.read_pending = False
        chat, turn.chat = turn.chat, None
        if chat is None:
            return
        try:
            turn.log.replace([as_dict(m) for m in chat.get_messages()[-MAX_MESSAGES:]])
            turn.log.users = chat_users(chat)
            view = read_chat(turn.log.document())
        except Exception:  # a chat being torn down, or one the reader refuses
            log.debug("jupyter_recap: a one-shot chat could not be read", exc_info=True)
            return
        latest = view.latest
        if latest is None or not latest.persona:
            return
        persona = view.persona_name()
        if turn.kernel_id is None:
            turn.kernel_id = self._kernel_for(persona, turn)
            if turn.kernel_id is None:
                return
        for item in latest.items:
            if not isinstance(item, ToolStep):
                continue
            state = "waiting" if item.waiting else item.status
            if state not in _SENT or turn.sent.get(item.call_id) == state:
                continue
            turn.sent[item.call_id] = state
            self.sink.add_entries(turn.kernel_id, _entries(persona, item, state), latest_cell=True)

    def _kernel_for(self, persona: str, turn: OneShotTurn) -> str | None:
        """The kernel whose running cell addresses ``persona`` and owns no other chat: the one
        whose prompt the request carried; else (no such cell, or several) the one whose cell
        started last before the chat was made.

        Decided at the chat's first read, which comes only once the persona wrote (seconds
        later, for an agent that starts slowly): by then another kernel's cell may have started
        too and be waiting for a chat of its own. A cell makes its request after it starts, so
        a cell that started before the chat was made is preferred; one heard only after it
        (within :data:`MATCH_SECONDS`: its input can reach the watcher after the request) owns
        it only when there is none, the first of them.
        """
        cells = self.persona_cells()
        # A cell makes one request: a kernel whose running cell owns a chat is taken.
        taken = {
            other.kernel_id
            for other in self.turns
            if other is not turn
            and other.kernel_id in cells
            and cells[other.kernel_id].started == other.cell_started
        }
        wanted = persona.casefold()
        asking = {
            kernel_id: cell
            for kernel_id, cell in cells.items()
            if cell.persona.casefold() == wanted and kernel_id not in taken
        }
        if turn.prompt is not None:
            sent = {
                kernel_id: cell
                for kernel_id, cell in asking.items()
                if cell.prompt is not None and could_send(cell.prompt, turn.prompt)
            }
            if len(sent) == 1:
                ((kernel_id, cell),) = sent.items()
                turn.cell_started = cell.started
                return kernel_id
            asking = sent or asking
        candidates = [
            (cell.started, kernel_id)
            for kernel_id, cell in asking.items()
            if cell.started <= turn.opened + MATCH_SECONDS
        ]
        before = [candidate for candidate in candidates if candidate[0] <= turn.opened]
        if before:
            turn.cell_started, kernel_id = max(before)
        elif candidates:
            turn.cell_started, kernel_id = min(candidates)
        else:
            return None
        return kernel_id


def could_send(cell: str, prompt: str) -> bool:
    """Whether a ``%%ai`` cell whose text after the magic's line is ``cell`` (stripped) could
    have sent ``prompt``.

    The magic sends that text through ``str.format_map`` over the kernel's names (a name it
    does not know is left as it was), so each ``{field}`` stands for any text and ``{{`` for a
    brace. Literal pieces are matched in order, each at its first place: with nothing but
    "any text" between them, the first place is never worse than a later one.
    """
    pieces = [""]
    try:
        for literal, name, _spec, _conversion in Formatter().parse(cell):
            pieces[-1] += literal
            if name is not None:
                pieces.append("")
    except ValueError:  # unbalanced braces: format_map fails too, and the magic sends nothing
        return False
    if len(pieces) == 1:
        return pieces[0] == prompt
    first, last = pieces[0], pieces[-1]
    end = len(prompt) - len(last)
    if len(first) > end or not prompt.startswith(first) or not prompt.endswith(last):
        return False
    at = len(first)
    for piece in pieces[1:-1]:
        found = prompt.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _entries(persona: str, step: ToolStep, state: str) -> list[OutsideEntry]:
    """A tool call as entries of the asking cell's turn (a call waiting for approval, in words)."""
    if state == "waiting":
        what = shorten(step.summary or step.title, LINE_CHARS)
        text = f"{persona} asked for your approval: {what} (a %%ai cell has no way to give it)"
        return [{"kind": "event", "text": text, "name": None, "error": None}]
    error = (
        (shorten(step.error, LINE_CHARS) if step.error else "failed") if state == "failed" else None
    )
    return [
        {
            "kind": "tool_call",
            "text": step.input or step.summary,
            "name": step.title,
            "error": None,
        },
        {
            "kind": "tool_result",
            "text": shorten(step.output, _OUTPUT_CHARS),
            "name": step.title,
            "error": error,
        },
    ]


def make_source(context: SourceContext) -> OneShotTurns:
    """The entry point's factory: the persona cells are the server's execution watcher's."""
    host = cast(SourceHost, context.host)
    return OneShotTurns(context.sink, lambda: host.watcher.persona_cells)
