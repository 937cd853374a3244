"""Small text helpers shared by the context builder, the prompt and the offline engine."""

from __future__ import annotations


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


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
