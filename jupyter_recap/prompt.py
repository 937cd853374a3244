"""What we ask the model, and how its answer becomes the recap people see."""

from __future__ import annotations

import re

from .redact import strip_reasoning
from .textutil import shorten

#: Longest recap shown; longer answers are cut at a word boundary.
MAX_RECAP_CHARS = 400

SYSTEM_PROMPT = (
    "You write the short recap a person reads when they come back to a notebook in which an "
    "AI agent has been working. You only summarise; you never continue the work."
)

INSTRUCTIONS = """\
The person left this notebook and is returning to it. Using the transcript above, tell them
where things stand so they can pick up again.

Rules:
- One to three short sentences of plain text: no markdown, no lists, no headings, no preamble.
- Open with the overall task: what they are building, fixing or investigating.
- Close with the concrete next step, when the transcript shows one. When the task framing
  lists tasks, the next step is the task in progress unless the recent activity says otherwise,
  and the progress (for example "3 of 5 tasks done") is worth a few words.
- Project notes are background from earlier sessions: use them only where they bear on the
  next step.
- Orient rather than report: do not list what was done and do not replay tool calls.
- If the last agent turn errored or was interrupted, say so plainly (for example "errored at …").
- Name files, functions or cells where that helps.
- Write in the language the person used in the conversation.
- Put the recap between <recap> and </recap> and write nothing outside the tags."""


def user_message(context: str) -> str:
    """The single user message: the transcript, then the instructions."""
    return f"<transcript>\n{context}\n</transcript>\n\n{INSTRUCTIONS}"


_OPEN = re.compile(r"<recap\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"</recap\s*>", re.IGNORECASE)
_MARKDOWN = re.compile(r"(\*\*|__|`+|^#+\s+|^\s*[-*•]\s+)", re.MULTILINE)


def extract_recap(raw: str) -> str | None:
    """The recap inside the model's answer, or None when there is none to show.

    Both tags: the text between them. Opening tag only (the answer ran out of tokens): the rest
    after it. No tag at all: nothing, since untagged text is often the model thinking aloud and a
    missing recap is better than leaked reasoning.
    """
    text = strip_reasoning(raw or "")
    opening = _OPEN.search(text)
    if opening is None:
        return None
    body = text[opening.end() :]
    closing = _CLOSE.search(body)
    if closing is not None:
        body = body[: closing.start()]
    tidied = tidy(body)
    return tidied or None


def tidy(text: str, limit: int = MAX_RECAP_CHARS) -> str:
    """Plain text on one line: markdown marks dropped, whitespace collapsed, capped at ``limit``."""
    plain = _MARKDOWN.sub("", text)
    return shorten(plain, limit)
