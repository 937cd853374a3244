"""What we ask the model, and how its answer becomes the recap people see."""

from __future__ import annotations

import re

from ..redact import strip_reasoning
from ..textutil import printable, shorten

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
# Controls that separate words (CR, VT, FF, the file/group/record/unit separators, NEL) become
# line breaks before the controls are dropped, so that the words they separate stay apart.
_LINE_BREAKS = re.compile("[\r\v\f\x1c-\x1f\x85]")
# Markdown marks, each found in time linear in the text (a model can answer pages of blank
# lines or stars): heading marks at a line start, indented, repeated or behind other marks; a
# bullet; a run of emphasis/code characters holding a bold or code mark, dropped whole so that
# "*`*" cannot leave "**" behind ([^\S\n] is a space that does not end the line).
_MARKDOWN = re.compile(
    r"^(?:[^\S\n]|[*_`])*#+(?:[^\S\n](?:[^\S\n]|#)*|$)"
    r"|^[^\S\n]*[-*•][^\S\n]+"
    r"|(?<![*_`])(?=[*_`]*?(?:\*\*|__|`))[*_`]+",
    re.MULTILINE,
)
# Heading marks that only lead the line once other marks are gone ("#**"): the tidied recap
# is one line, so only its start can hold one.
_LEADING_HEADING = re.compile(r"(?:#+(?:\s+|$))+")
# A closing reasoning tag whose opening one is not in the answer: the chat template opened the
# block (DeepSeek-R1 style), so all before it is thinking.
_REASONING_END = re.compile(r"</(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
# Any recap or reasoning tag left inside the recap's body (a repeated opening tag, say).
_TAGS = re.compile(r"</?(?:recap|think|thinking|reasoning)\s*>", re.IGNORECASE)


def extract_recap(raw: str) -> str | None:
    """The recap inside the model's answer, or None when there is none to show.

    Both tags: the text between them. Opening tag only (the answer ran out of tokens): the rest
    after it. No tag at all: nothing, since untagged text is often the model thinking aloud and a
    missing recap is better than leaked reasoning. Reasoning blocks go first, including one
    whose opening tag the chat template supplied (everything up to a stray closing tag).
    """
    text = strip_reasoning(raw or "")
    ends = list(_REASONING_END.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    opening = _OPEN.search(text)
    if opening is None:
        return None
    body = text[opening.end() :]
    closing = _CLOSE.search(body)
    if closing is not None:
        body = body[: closing.start()]
    tidied = tidy(_TAGS.sub("", body))
    if _TAGS.search(tidied):
        # A tag that only shows once others, marks or controls are gone ("<re<recap>cap>",
        # "<th\x00ink>"): no model writes that, and it could hide reasoning; show nothing.
        return None
    heading = _LEADING_HEADING.match(tidied)
    if heading is not None:
        tidied = tidied[heading.end() :]
    return tidied or None


def tidy(text: str, limit: int = MAX_RECAP_CHARS) -> str:
    """Plain text on one line: markdown marks dropped, whitespace collapsed, capped at ``limit``.

    Terminal escapes, control and bidi characters go first: a recap is printed to terminals and
    stream outputs, and is stored, listed and sent on from there, so it must be inert text.
    """
    plain = _MARKDOWN.sub("", printable(_LINE_BREAKS.sub("\n", text)))
    return shorten(plain, limit)
