"""A chat as the recap pipeline reads it: a transcript of its turns, and what waits.

The persona's prompt and replies become prompts and replies, its tool calls become tool calls
with their results (a failed call carries its error), and a turn that ended gets its outcome,
so the context builder, the model and the offline engine read a chat as they read a notebook's
agent cells. A tool call waiting for the person's approval is said in words
(:func:`waiting_line`): the offline engine makes it the recap's last sentence, the model reads
it as the latest event.
"""

from __future__ import annotations

import re

from ..record.transcript import Transcript
from ..textutil import shorten
from .document import LINE_CHARS, ChatTurn, ChatView, ToolStep

MAX_TURNS = 40
"""Turns of a chat put in its transcript: the first (the task) and the latest ones."""

_ERRORED_REPLY = re.compile(
    r"(?i)^\s*(?:error\b|an error occurred|sorry, (?:an|something went) (?:error|wrong)"
    r"|traceback \(most recent call last\))"
)


def chat_transcript(view: ChatView) -> Transcript:
    """The transcript of ``view``'s turns with a persona (bounded to :data:`MAX_TURNS`)."""
    transcript = Transcript()
    turns = [turn for turn in view.turns if turn.persona]
    if len(turns) > MAX_TURNS:
        turns = [turns[0], *turns[-(MAX_TURNS - 1) :]]
    latest = turns[-1] if turns else None
    for turn in turns:
        _add_turn(transcript, turn, ended=turn is not latest or _ended(turn))
    if latest is not None and (waiting := latest.waiting) is not None:
        transcript.event(waiting_line(view, waiting), at=waiting.at)
    return transcript


def waiting_line(view: ChatView, step: ToolStep) -> str:
    """``Claude is waiting for your approval: mv models/churn.pkl models/old/``."""
    return f"{view.persona_name()} is waiting for your approval: {approval_text(step)}"


def approval_text(step: ToolStep) -> str:
    """What the person is asked to allow, in one short line."""
    return shorten(step.summary or step.title, LINE_CHARS)


def add_tool_step(
    transcript: Transcript,
    title: str,
    arguments: str,
    status: str,
    output: str,
    error: str | None,
    *,
    cell_id: str | None = None,
) -> None:
    """A persona's tool call, and its result once it has one (a failed call with its error)."""
    transcript.tool_call(title, arguments, cell_id=cell_id)
    if status == "failed":
        transcript.tool_result(title, output, error=error or "failed", cell_id=cell_id)
    elif status == "completed":
        transcript.tool_result(title, output, cell_id=cell_id)


def _ended(turn: ChatTurn) -> bool:
    return turn.waiting is None and not turn.running and bool(turn.items)


def _add_turn(transcript: Transcript, turn: ChatTurn, *, ended: bool) -> None:
    if turn.prompt:
        transcript.user(turn.prompt)
    for item in turn.items:
        if isinstance(item, str):
            transcript.assistant(item)
            continue
        # The call's arguments as it made them: what it worked on is read from them.
        arguments = item.input or item.summary
        add_tool_step(transcript, item.title, arguments, item.status, item.output, item.error)
    if not ended:
        return
    replies = turn.replies
    failed = turn.failed
    if replies and _ERRORED_REPLY.match(replies[-1]):
        transcript.outcome("errored", shorten(replies[-1], LINE_CHARS))
    elif failed is not None and not replies:
        transcript.outcome("errored", failed.error)
    else:
        transcript.outcome("ok")
