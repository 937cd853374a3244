"""The offline engine: a deterministic recap built from the transcript alone, no network.

It says what the task is (the latest summary or the first prompt), how the last agent turn ended
when it did not end well, and the next step when the transcript states one: a "next:" line in the
latest reply, an open task, or the cell that failed last.
"""

from __future__ import annotations

import re

from ..record.transcript import Entry, Transcript
from ..textutil import first_line, shorten
from .prompt import tidy
from .redact import Redactor, strip_reasoning

_NEXT = re.compile(r"(?im)(?:^|[\s(])(?:next(?:\s+steps?)?|todo|then)\s*[:\-–—]\s*(?P<step>[^\n]+)")
_NEXT_SENTENCE = re.compile(
    r"(?i)\b(?:next,?\s+(?:I|we|you)\s+(?:will|should|need to)\s+)(?P<step>[^.!?\n]+)"
)
_GOAL = re.compile(r"(?i)^\s*(?:goal|task|objective)\s*[:\-–—]\s*")
_WINDOW = 200


def _sentence(text: str) -> str:
    """End ``text`` with exactly one sentence mark."""
    text = text.rstrip()
    return text if text.endswith((".", "?", "!", "…")) else text + "."


def _gist(text: str, limit: int) -> str:
    """The first sentence of ``text`` when it fits in ``limit``, else ``text`` shortened."""
    flat = " ".join(text.split())
    first = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
    return first if len(first) <= limit else shorten(flat, limit)


def _latest(entries: list[Entry], start: int, kinds: set[str]) -> Entry | None:
    for entry in reversed(entries[start:]):
        if entry.kind in kinds:
            return entry
    return None


def _next_step(reply: Entry | None) -> str | None:
    if reply is None:
        return None
    text = strip_reasoning(reply.text)
    matches = list(_NEXT.finditer(text)) or list(_NEXT_SENTENCE.finditer(text))
    if not matches:
        return None
    step = _gist(matches[-1].group("step").strip(), 180)
    return step.rstrip(".") or None


def offline_recap(transcript: Transcript, *, open_task: str | None = None) -> str | None:
    """A 1–3 sentence recap of ``transcript``, or None when there is nothing to say."""
    clean = Redactor()
    with transcript.locked() as entries:
        snap = transcript.snapshot()
        # Only the tail matters for how things ended; the framing comes from the indexes.
        start = max(0, snap.size - _WINDOW)
        if snap.prompts:
            start = min(start, snap.prompts[-1])
        first = entries[snap.prompts[0]] if snap.prompts else None
        latest = entries[snap.prompts[-1]] if snap.prompts else None
        summary = entries[snap.summary] if snap.summary is not None else None
        tail = entries[start:]
    if first is None and summary is None and not any(e.kind == "code" for e in tail):
        return None

    sentences: list[str] = []
    if summary is not None:
        sentences.append(_sentence("Task: " + _gist(_GOAL.sub("", clean(summary.text)), 200)))
    elif first is not None:
        sentences.append(_sentence("Task: " + _gist(clean(first.text), 200)))

    ending = _latest(tail, 0, {"outcome", "code", "user"})
    failure: str | None = None
    if ending is not None and ending.kind == "outcome":
        if ending.outcome == "aborted":
            sentences.append("The last agent turn was interrupted before it finished.")
        elif ending.outcome == "errored":
            error = shorten(clean(ending.error or "an error"), 120)
            sentences.append(_sentence(f"The last agent turn errored: {error}"))
    elif ending is not None and ending.kind == "code" and ending.error:
        label = f"In[{ending.count}]" if ending.count is not None else "the last cell"
        failure = f"{label} ({shorten(clean(first_line(ending.text)), 60)})"
        sentences.append(_sentence(f"{label} failed with {shorten(clean(ending.error), 100)}"))
    elif first is None and summary is None:
        code = _latest(tail, 0, {"code"})
        if code is not None:
            sentences.append(
                _sentence("Last cell run: " + shorten(clean(first_line(code.text)), 100))
            )

    step = _next_step(_latest(tail, 0, {"assistant"}))
    if not step and not open_task and latest is not None and latest is not first:
        # Without a stated next step, the latest ask is the best hint of where things stand.
        sentences.insert(1, _sentence("Latest ask: " + _gist(clean(latest.text), 120)))
    if step:
        sentences.append(_sentence(f"Next: {clean(step)}"))
    elif open_task:
        sentences.append(_sentence(f"Next: {shorten(clean(open_task), 140)}"))
    elif failure:
        sentences.append(f"Next: fix {failure} and run it again.")
    elif ending is not None and ending.kind == "outcome" and ending.outcome != "ok":
        sentences.append("Next: look at that error, then rerun the agent cell.")
    text = tidy(" ".join(sentences))
    return text or None
