"""The readable text of a cell's outputs, one rule for the live kernel and for saved notebooks.

A recap reads what a cell showed: markdown, else plain text, else a richer text format. Widgets
and images have no readable text (their ``text/plain`` is a placeholder such as
``<Figure size 640x480 with 1 Axes>``), so both the recorder and ``jupyter recap NOTEBOOK`` skip
them the same way.
"""

from __future__ import annotations

import json
import re

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# IPython colours tracebacks and sometimes error values; the transcript wants plain text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The text/plain of a rich display object is a repr with no content: "<IPython...HTML object>".
_OBJECT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")
# Richer formats jupyter-ai can return (-f html/math/json), tried when text/plain is a repr.
_FALLBACK_MIMES = ("text/latex", "text/html", "application/json")


def multiline_text(value: object) -> str:
    """nbformat multiline strings are a str or a list of str (anything else: empty)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI.sub("", text)


def bundle_text(data: object) -> str:
    """The readable text of a display bundle: markdown, else plain text, else a rich format."""
    if not isinstance(data, dict):
        return ""
    if WIDGET_MIME in data:
        return ""
    if "text/markdown" in data:
        return multiline_text(data["text/markdown"])
    if any(isinstance(mime, str) and mime.startswith("image/") for mime in data):
        return ""
    plain = strip_ansi(multiline_text(data.get("text/plain"))).strip()
    if plain and not _OBJECT_REPR.match(plain):
        return plain
    for mime in _FALLBACK_MIMES:
        if mime in data:
            value = data[mime]
            return value if isinstance(value, str) else multiline_text(value) or json.dumps(value)
    return ""
