"""Small text helpers shared by the context builder, the prompt, the offline engine and the
listings: shortening, sentences, a cost or a duration for people, text safe for a terminal."""

from __future__ import annotations

import functools
import math
import re

SHOWN_CHARS = 40
"""How much of something a person typed an error message quotes."""


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 12 s``, ``2 h 5 min``: how long something took, for people."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


#: The largest cost :func:`format_cost` writes out in figures.
SHOWN_COST_LIMIT = 1_000_000.0


def format_cost(usd: float | None) -> str:
    """A cost for people: ``~$0.0031``, ``~$1.24``, ``$0`` when free, ``n/a`` when unknown;
    a total past :data:`SHOWN_COST_LIMIT` is only said to be past it (no 300-digit figure)."""
    if usd is None or not math.isfinite(usd) or usd < 0:
        return "n/a"
    if usd > SHOWN_COST_LIMIT:
        return f"over ${SHOWN_COST_LIMIT:,.0f}"
    if usd == 0:
        return "$0"
    if usd < 0.0001:
        return "<$0.0001"
    if usd < 0.01:
        return f"~${usd:.4f}"
    return f"~${usd:,.2f}"


# A sentence ends at an ASCII mark followed by a space or the end, or at a full-width mark:
# Chinese and Japanese put no space after theirs. "orders.csv" and "3.5" stay whole.
@functools.cache
def _sentence_end() -> re.Pattern[str]:
    return re.compile(r"[.!?]+(?=\s|$)|[。！？]+")


# Abbreviations whose period ends no sentence (lower case, without the final period).
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "vs", "cf", "approx", "incl", "mr", "mrs", "ms", "dr", "st", "fig", "eq"}
)


def sentences(text: str, *, lines_end: bool = False) -> list[str]:
    """The sentences of ``text``, each on one line with its closing marks.

    A sentence ends at ``.``, ``!`` or ``?`` followed by a space or the end of the text, or at
    a full-width ``。``, ``！`` or ``？``; the period of a common abbreviation (``e.g.``) ends
    none. With ``lines_end`` a line break ends one too (prompts and replies are often lists
    without marks).
    """
    found: list[str] = []
    for block in text.splitlines() if lines_end else [text]:
        flat = " ".join(block.split())
        start = 0
        for match in _sentence_end().finditer(flat):
            if match.group() == "." and ends_abbreviation(flat[start : match.start()]):
                continue
            found.append(flat[start : match.end()].strip())
            start = match.end()
        found.append(flat[start:].strip())
    return [sentence for sentence in found if sentence]


def ends_abbreviation(before: str) -> bool:
    """Whether ``before`` ends with a word like ``e.g`` whose period ends no sentence."""
    words = before.rsplit(None, 1)
    return bool(words) and words[-1].lower().lstrip("(") in _ABBREVIATIONS


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


# Terminal escape sequences (CSI ``ESC [ … final`` and OSC ``ESC ] … BEL|ST``) are removed whole,
# so that no half of one is left to show as stray text; any other control character goes alone.
@functools.cache
def _escapes() -> re.Pattern[str]:
    return re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[@-_]")


#: The characters :func:`printable` removes: C0 and C1 controls (but tab and newline), DEL, and
#: the bidi embedding, override and isolate marks, which can reorder what a reader sees
#: ("Trojan Source").
UNSAFE_CHARS = frozenset(
    chr(c)
    for c in (
        *(c for c in range(0x20) if c not in (0x09, 0x0A)),
        *range(0x7F, 0xA0),
        *(0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)),
    )
)
_INVISIBLE = dict.fromkeys(map(ord, UNSAFE_CHARS))


# "ValueError: …", "pandas.errors.ParserError: …", "KeyboardInterrupt": how Python names what
# went wrong on the last line of a traceback.
@functools.cache
def _error_name() -> re.Pattern[str]:
    return re.compile(
        r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)\b"
    )


@functools.cache
def _error_word() -> re.Pattern[str]:
    return re.compile(r"(?i)\b(?:error|failed|failure|exception|fatal)\b")


def error_line(text: str) -> str:
    """The line of an error text that says what went wrong, stripped.

    A traceback opens with "Traceback (most recent call last):" and names the error on its last
    line; a test runner or a shell prints its logs first. So: the last line that names an
    exception, else the last line that says error or failed, else the last line.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    for pattern in (_error_name(), _error_word()):
        for line in reversed(lines):
            if pattern.search(line) if pattern is _error_word() else pattern.match(line):
                return line
    return lines[-1]


def printable(text: str) -> str:
    """``text`` safe to print to a terminal or a notebook's stream output.

    Escape sequences, control characters (tab and newline excepted) and bidi controls are
    removed: a recap, a title or a prompt can then neither retitle, clear or recolour a
    terminal, write to its clipboard, hide text, nor reorder what is read. JSON output keeps
    the exact text; this is for text shown to a person.
    """
    if text.isprintable():
        return text  # the common case: one C-level scan, nothing to copy
    return _escapes().sub("", text).translate(_INVISIBLE)


def printable_line(text: str, limit: int) -> str:
    """A name or a short text from outside (an agent, an MCP client, a chat, a hook) as it is
    kept and shown: :func:`printable`, on one line, cut to at most ``limit`` characters.

    Escapes are removed before the whitespace is collapsed: ``shorten`` alone would keep them,
    and a line break inside an escape must not split it into two harmless-looking halves.
    """
    return shorten(printable(text), limit)


# Words by which a follow-up points at the turns before it instead of saying what to do, in
# the languages the offline engine writes: "continue", "try again", "see above", "do the same
# for B", "Weiter.", "Ça plante encore.", "¿Y el downgrade?", "然后呢？".
@functools.cache
def _referring() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?<!\w)(?:continue|go on|keep going|carry on|proceed|go ahead|again|retry|same|above"
        r"|as before|that|this|it|those|these|them|too|also|and now|now what|what now|what next"
        r"|next|ok|okay|yes|weiter|nochmal|noch einmal|wieder|dasselbe|gleiche|oben|auch"
        r"|encore|pareil|même|ci-dessus|vas-y|continue|aussi|sigue|sigue|otra vez|lo mismo|igual"
        r"|arriba|de nuevo|continúa|también|de novo|mesmo|acima|continua|também|ancora|stesso"
        r"|sopra|di nuovo|anche|opnieuw|hetzelfde|verder|boven|nog een keer|ook)(?!\w)"
        r"|继续|再|同样|上面|然后|続け|もう一度|同じ|上の|次は"
    )


@functools.cache
def _cjk_char() -> re.Pattern[str]:
    return re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


_SHORT_WORDS = 3
_REFERRING_WORDS = 8


def refers_back(prompt: str) -> bool:
    """Whether ``prompt`` is a follow-up whose meaning lives in the turns before it.

    A prompt of a few words ("ok", "and now?", "run it") can only point back; a short one
    that says "again", "the same", "see above" or "continue" does too ("do the same for
    B-2002"). A prompt that spells out what to do stands on its own, however it starts. Only
    the head is read: a prompt longer than that is never short. Chinese and Japanese write
    no spaces, so there every two characters count as a word.
    """
    head = prompt[:200]
    if len(head) >= 200:
        return False
    cjk = len(_cjk_char().findall(head))
    words = len(_cjk_char().sub(" ", head).split()) + (cjk + 1) // 2
    if words <= _SHORT_WORDS:
        return True
    return words <= _REFERRING_WORDS and _referring().search(head) is not None


def utf16_len(text: str) -> int:
    """The length of ``text`` in UTF-16 code units: how a page (JavaScript) counts offsets."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
