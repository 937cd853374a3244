"""Whether a model's recap stays within what it was told.

A recap is read by someone who trusts it to name the real file, the real error, the real cell.
A model can write a plausible name that is nowhere in the session (``invoices_v3.ts`` for
``invoices.ts``, ``In[14]`` for a cell that does not exist). Before a model's recap is shown,
the identifiers it names are looked up in the context it was given:

- numbers of two digits or more (order numbers, line numbers, amounts): their digits, without
  thousands separators, must appear in the context (so "1,204" matches "1204", "91" matches
  "0.91", "199" matches "199.0");
- file names and paths (``name.ext``, ``dir/name``);
- error class names (``…Error``, ``…Exception``, ``…Warning``);
- cell references (``In[12]``): that cell must be in the context.

Words are not checked: a recap paraphrases, and a paraphrase is not an invention. A recap naming
one identifier the context does not hold is not shown as the model's (see
:mod:`.service`).
"""

from __future__ import annotations

import functools
import re

MAX_NAMED = 3
"""Ungrounded identifiers reported at most (the note names the first of them)."""


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    return (
        # A file name or path: a dotted name with a short alphabetic extension (a stem of two
        # characters or more: "e.g" is no file), or a path.
        re.compile(r"(?<![\w./-])(?:[\w-]+/)*[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/-])"),
        re.compile(r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]+"),
        re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)\b"),
    )


@functools.cache
def _number() -> re.Pattern[str]:
    return re.compile(r"\d[\d,_]*(?:\.\d+)?")


@functools.cache
def _cell() -> re.Pattern[str]:
    return re.compile(r"\bIn ?\[(\d{1,7})\]")


def _digits(token: str) -> str:
    """A number as its digits: separators out, a zero fraction dropped (199.0 -> 199)."""
    plain = token.replace(",", "").replace("_", "")
    if "." in plain:
        whole, _, fraction = plain.partition(".")
        plain = whole if not fraction.strip("0") else plain
    return plain


def ungrounded(recap: str, context: str) -> list[str]:
    """The identifiers ``recap`` names that ``context`` does not hold (at most
    :data:`MAX_NAMED`, in the order the recap names them); empty when it stays within it."""
    missing: list[str] = []

    def check(name: str, held: bool) -> None:
        if not held and name not in missing:
            missing.append(name)

    numbers = context.replace(",", "").replace("_", "")
    lowered = context.lower()
    cells = {match.group(1) for match in _cell().finditer(context)}
    spans: list[tuple[int, int]] = []
    for match in _cell().finditer(recap):
        spans.append(match.span())
        check(match.group(0), match.group(1) in cells)
    for pattern in _patterns():
        for match in pattern.finditer(recap):
            name = match.group(0).rstrip(".")
            if not any(start <= match.start() < end for start, end in spans):
                spans.append(match.span())
                check(name, name.lower() in lowered)
    for match in _number().finditer(recap):
        if any(start <= match.start() < end for start, end in spans):
            continue  # part of a file name or a cell reference, checked as that
        digits = _digits(match.group(0).rstrip("."))
        if sum(char.isdigit() for char in digits) >= 2:
            check(match.group(0).rstrip(".,"), digits in numbers)
    return missing[:MAX_NAMED]
