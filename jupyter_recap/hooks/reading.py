"""Reading a hook payload's text and paths: every text the spool keeps goes through here.

Texts are redacted (over a head a little past the cut, never the whole of a 1 MB payload),
made printable and bounded; paths are absolute and normal, or nothing. Shared by the events'
readers (:mod:`.events`) and the tool calls' (:mod:`.calls`); on the hook command's path, so
only the standard library's light modules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..redact import Redactor
from ..textutil import UNSAFE_CHARS, printable, shorten

NAME_CHARS = 80
"""An agent's or a tool's name."""
PATH_CHARS = 4096

_UNSAFE_IN_PATH = frozenset(UNSAFE_CHARS) | {"\n", "\t"}


def resolve(raw: str, cwd: str | None) -> str | None:
    """``raw`` (a path or a ``file://`` URI a tool names) as an absolute, normal path; None when
    it cannot be one (relative with no cwd, too long, control characters)."""
    if len(raw) > 3 * PATH_CHARS:
        return None
    if raw.startswith("file://"):
        from urllib.parse import unquote  # only for a URI: the hook's path stays light

        raw = unquote(raw[len("file://") :])
    if len(raw) > PATH_CHARS or any(c in _UNSAFE_IN_PATH for c in raw):
        return None
    if not os.path.isabs(raw):
        if cwd is None:
            return None
        raw = os.path.join(cwd, raw)
    return os.path.normpath(raw)


def absolute(value: object) -> str | None:
    """An absolute path given as is (a cwd, a spool field), normalised; None if not one."""
    if not isinstance(value, str) or not value or not os.path.isabs(value):
        return None
    return resolve(value, None)


def notebook_path(path: str | None) -> str | None:
    return path if path is not None and path.lower().endswith(".ipynb") else None


def clean_block(redact: Redactor, value: object, limit: int) -> str:
    """Text that keeps its lines (a reply's "Next:" line matters): redacted over a head a
    little past the cut (never the whole of a 1 MB payload, never cut inside a secret),
    printable, at most ``limit`` characters."""
    if not isinstance(value, str) or not value:
        return ""
    head, cut = redact.head(value, limit)
    # A lone surrogate (JSON lets "\\ud800" through) could be written to no file.
    text = printable(head.encode("utf-8", "replace").decode("utf-8")).strip()
    if cut or len(text) > limit:
        text = text[:limit].rstrip() + "…"
    return text


def clean_line(redact: Redactor, value: object, limit: int) -> str:
    """One line of at most ``limit`` characters, redacted and printable."""
    return shorten(clean_block(redact, value, limit + 64), limit)


def spool_line(value: object, limit: int) -> str:
    """A spool field: one printable line of at most ``limit`` characters (already redacted)."""
    if not isinstance(value, str):
        return ""
    return shorten(printable(value[: limit + 64].encode("utf-8", "replace").decode()), limit)


def spool_block(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    return printable(value[:limit].encode("utf-8", "replace").decode()).strip()


def first_string(data: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((v for k in keys if isinstance(v := data.get(k), str) and v.strip()), None)


def first_text(data: Mapping[str, Any], keys: tuple[str, ...], limit: int) -> str:
    value = first_string(data, keys)
    return spool_line(value, limit) if value is not None else ""
