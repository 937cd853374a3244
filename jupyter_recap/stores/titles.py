"""A stored session's living title: a few words on what the session is about now.

A session starts out titled by its first prompt. Each recap written into it says, in its first
sentence, what the work is (the recap prompt asks the model to open with the overall task, and
the offline engine opens with ``Task: …``), so that sentence, trimmed of its label and of the
lead-in models like to start with, becomes the title. No model is called: the title is pure
string work on text the session already holds (and that was redacted before it got here).

For example::

    "You were fixing the foreign key on orders. Next: rerun the migration."
        -> "Fixing the foreign key on orders"
    "Task: plot churn by cohort. The last agent turn errored: KeyError."
        -> "Plot churn by cohort"
    "タスク：注文データを整理する。次に集計を確認する。"
        -> "注文データを整理する"

Before the first recap, the title is the first prompt whose turn did not fail
(:class:`PromptTitle`): a request that was never answered — jupyter-ai refusing ``%ai fix``
with nothing to fix, a call that failed for want of a key — does not name the session.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ..redact import REDACTED
from ..textutil import ends_abbreviation, sentences
from .sessionfiles import TITLE_CHARS, SessionRecord, shorten_title

__all__ = ["PromptTitle", "first_sentence", "title_from_recap"]

#: Letters a title needs to say anything (``[redacted]`` does not count).
MIN_LETTERS = 3


# The closing marks a title drops: a question mark is kept, as part of what is said.
@functools.cache
def _closing() -> re.Pattern[str]:
    return re.compile(r"[.!?。！？]+$")


# A short label leading the sentence: one word of at most 14 characters, then a colon (an
# optional space before it, as French writes "Tâche :"). An ASCII colon must be followed by a
# space, so that "http://…" or "12:30" is no label; a full-width one needs nothing after it.
@functools.cache
def _label() -> re.Pattern[str]:
    return re.compile(r"^[^\W\d_][\w-]{0,13}(?:[^\S\n]?:(?=\s|$)|[^\S\n]?：)\s*")


_APOSTROPHE = "['’]"  # models write either


# What model-written recaps open with before they get to the work itself.
@functools.cache
def _lead_in() -> re.Pattern[str]:
    return re.compile(
        r"^(?:(?:in\s+this\s+(?:session|notebook)|so\s+far|here),?\s+)?"
        r"(?:"
        rf"you(?:\s+and\s+the\s+agent)?(?:\s+(?:were|are|have\s+been)|{_APOSTROPHE}(?:re|ve\s+been))"
        rf"|we(?:\s+(?:were|are|have\s+been)|{_APOSTROPHE}(?:re|ve\s+been))"
        r"|the\s+agent\s+(?:was|is|has\s+been)"
        r"|you\s+asked(?:\s+the\s+agent)?\s+to"
        r"|(?:the|your)\s+(?:task|goal)\s+(?:is|was)(?:\s+to)?"
        r")\s+"
        # "You were working on the churn plot" says no more than "The churn plot".
        r"(?:(?:still|currently|now)\s+)?(?:working\s+on\s+|in\s+the\s+middle\s+of\s+)?",
        re.IGNORECASE,
    )


# Where a long sentence can be cut and still read whole: a semicolon or a dash between clauses.
# (The separator alone: the space before it is trimmed afterwards, since a leading ``\s*`` would
# make a search through a long run of spaces quadratic.)
@functools.cache
def _clause_end() -> re.Pattern[str]:
    return re.compile(r"(?:;|；)\s+|(?<=\s)[—–-]\s+")


# A cut clause shorter than this says too little; the sentence is shortened instead.
_MIN_CLAUSE = 16

# Marks a title does not end with: the sentence's own period, what a cut clause leaves.
_TRAILING = " \t.,;:!。，；：！"


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` on one line, without its closing mark.

    A sentence ends at ``.``, ``!`` or ``?`` followed by a space or the end of the text, or at
    a full-width ``。``, ``！`` or ``？``; the period of a common abbreviation (``e.g.``) ends
    none. A question mark is kept: it is part of what the sentence says.
    """
    found = sentences(text)
    if not found:
        return ""
    first = found[0]
    mark = _closing().search(first)
    if mark is None or mark.group()[0] in "?？" or ends_abbreviation(first[: mark.start()]):
        return first
    return first[: mark.start()]


def title_from_recap(text: str, limit: int = TITLE_CHARS) -> str | None:
    """The title a recap gives its session, or None when the recap says nothing usable.

    The recap's first sentence, without a leading label (``Task:``, ``Aufgabe:``,
    ``Tâche :``, ``タスク：``) or an English lead-in (``You were``, ``You're``, ``The agent
    was``, ``You asked the agent to``, …), its first letter capitalised, on one line and at most
    ``limit`` characters (cut at a clause boundary when one is near, else at a word). None for
    a sentence of fewer than :data:`MIN_LETTERS` letters: the title the session had stays.
    """
    sentence = first_sentence(text)
    for _ in range(2):  # "Recap: Task: …"
        sentence = _label().sub("", sentence, count=1)
    sentence = _lead_in().sub("", sentence, count=1)
    sentence = _clause(sentence.strip(), limit).rstrip(_TRAILING)
    if sum(c.isalpha() for c in sentence.replace(REDACTED, "")) < MIN_LETTERS:
        return None
    return shorten_title(_capitalised(sentence), limit)


def _clause(sentence: str, limit: int) -> str:
    """``sentence``, or its first clause when the whole is too long and the clause is not."""
    if len(sentence) <= limit:
        return sentence
    match = _clause_end().search(sentence)
    if match is None:
        return sentence
    clause = sentence[: match.start()].rstrip()
    return clause if _MIN_CLAUSE <= len(clause) <= limit else sentence


def _capitalised(sentence: str) -> str:
    """``sentence`` with an upper-case first letter when its first word is a plain word.

    Names that are not ("orders.csv", "df.head()", "iPhone", "pH") are left as written.
    """
    word = sentence.split(" ", 1)[0].rstrip(",;:")
    if word.isalpha() and word.islower():
        return sentence[0].upper() + sentence[1:]
    return sentence


class PromptTitle:
    """Keeps a session's ``title`` and ``first_prompt`` to prompts whose turns did not fail.

    Fed the session's entries in order (as stored: dicts with ``kind``), it lets a prompt fill
    an empty ``title`` / ``first_prompt`` while its turn runs, so a running first turn is named,
    and takes it back when the turn ends ``errored``: the next prompt that works names the
    session instead. An interrupted turn keeps its name (the request was made). A recap's
    title (set by the caller) is never taken back.
    """

    def __init__(self) -> None:
        self._running: str | None = None
        """The prompt of the turn in progress, while it fills an empty field."""

    def fold(self, record: SessionRecord, item: Mapping[str, Any]) -> None:
        """Apply one stored entry to ``record``'s ``title`` and ``first_prompt``."""
        kind = item.get("kind")
        if kind == "user":
            text = item.get("text")
            prompt = shorten_title(text if isinstance(text, str) else "")
            self._running = None
            if prompt and (not record.first_prompt or not record.title):
                self._running = prompt
                record.first_prompt = record.first_prompt or prompt
                record.title = record.title or prompt
        elif kind == "outcome":
            running, self._running = self._running, None
            if running is not None and item.get("outcome") == "errored":
                if record.first_prompt == running:
                    record.first_prompt = ""
                if record.title == running:
                    record.title = ""
