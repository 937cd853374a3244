"""What a chat's agent did in a notebook, in one line with links to the cells it touched.

A persona edits and runs cells through tools (``edit_cell``, ``run_cell``, Claude Code's
``NotebookEdit``, …) whose calls name the notebook (their ``locations`` or their input's
path) and the cell. For the notebook the person comes back to, those calls since they last
looked become one line: ``Claude (churn.chat) edited In[7] and ran it; it failed: KeyError:
'region'``. The cell labels come from the caller, who can read the notebook.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..textutil import error_line, shorten, utf16_len
from ..wire import Link, OutsideActivity
from .document import ChatView, ToolStep

Label = Callable[[str, str], str | None]
"""``(notebook path, cell id)`` → how the person knows the cell (``In[7]``), None if unknown."""

ERROR_CHARS = 120
MAX_NAMED = 4
"""Cells named in a line; more are counted ("and 3 more")."""

_EDIT = ("edit", "overwrite", "update_cell", "set_cell", "replace", "modify", "write_cell")
_ADD = ("add_cell", "insert", "create_cell", "append_cell", "new_cell")
_DELETE = ("delete", "remove_cell")
_RUN = ("run", "execute")


@dataclass(slots=True)
class _Touches:
    edited: list[str] = field(default_factory=list)
    added: list[str | None] = field(default_factory=list)
    deleted: list[str | None] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    failed: str | None = None
    at: float = 0.0
    ids: dict[str, str] = field(default_factory=dict)
    """A label shown → the id of its cell (for the links)."""


def notebook_path(path: str, root: str) -> str | None:
    """A tool's notebook path relative to the server's root (``/`` separated), or None when
    it is not a notebook or lies outside the root."""
    if not path.endswith(".ipynb"):
        return None
    clean = posixpath.normpath(path.replace("\\", "/"))
    if posixpath.isabs(clean):
        base = posixpath.normpath(root.replace("\\", "/"))
        if not base or not (clean == base or clean.startswith(base.rstrip("/") + "/")):
            return None
        clean = posixpath.relpath(clean, base)
    return None if clean.startswith("../") or clean == ".." else clean.lstrip("./") or None


def outside_activity(
    view: ChatView,
    chat: str,
    *,
    root: str,
    since: Callable[[str], float],
    label: Label,
) -> dict[str, OutsideActivity]:
    """Per notebook, the line for the tool calls of ``view`` after ``since(path)`` (when the
    person last looked at that notebook). ``chat`` is the chat's name, ``root`` the server's
    root folder (tools name absolute paths)."""
    touched: dict[str, _Touches] = {}
    persona = ""
    for turn in view.turns:
        for step in turn.steps:
            for path in _notebooks(step, root):
                if step.at <= since(path) or step.status in ("pending", "in_progress"):
                    continue
                persona = view.persona_name(turn)
                _note(touched.setdefault(path, _Touches()), step, path, label)
    return {
        path: _line(f"{persona} ({chat})", touches)
        for path, touches in touched.items()
        if touches.edited or touches.added or touches.deleted or touches.ran
    }


def _notebooks(step: ToolStep, root: str) -> Iterable[str]:
    seen = {notebook_path(path, root) for path in step.paths}
    return sorted(path for path in seen if path)


def _note(touches: _Touches, step: ToolStep, path: str, label: Label) -> None:
    name = step.title.lower()
    cell = label(path, step.cell_id) if step.cell_id else None
    if cell is not None and step.cell_id:
        touches.ids[cell] = step.cell_id
    touches.at = max(touches.at, step.at)
    mode = _mode(step)
    if mode == "delete":
        touches.deleted.append(cell)
    elif mode == "add":
        touches.added.append(cell)
    elif mode == "edit" and cell is not None and cell not in touches.edited:
        touches.edited.append(cell)
    if any(word in name for word in _RUN) or step.kind == "execute":
        if cell is not None and cell not in touches.ran:
            touches.ran.append(cell)
        elif cell is None:
            touches.ran.append("")
        if step.status == "failed":
            touches.failed = step.error or "an error"
        elif cell is not None:
            touches.failed = None  # a later run of the notebook went through


def _mode(step: ToolStep) -> str | None:
    name = step.title.lower()
    edit_mode = ""
    if "notebookedit" in name.replace("_", ""):
        # Claude Code's NotebookEdit says what it does in edit_mode (replace, insert, delete).
        edit_mode = "insert" if '"edit_mode":"insert"' in step.input else ""
        edit_mode = "delete" if '"edit_mode":"delete"' in step.input else edit_mode
        return {"insert": "add", "delete": "delete"}.get(edit_mode, "edit")
    if any(word in name for word in _DELETE) or step.kind == "delete":
        return "delete"
    if any(word in name for word in _ADD):
        return "add"
    if any(word in name for word in _EDIT) or step.kind == "edit":
        return "edit"
    return None


def _line(who: str, touches: _Touches) -> OutsideActivity:
    """``who`` and what it did, with the cell labels as links (their spans, UTF-16)."""
    pieces: list[tuple[str, list[str]]] = []  # (words with {} for each named cell, cells)
    if touches.edited:
        pieces.append(_named("edited", touches.edited))
    if touches.added:
        pieces.append(_counted("added", touches.added))
    if touches.deleted:
        pieces.append(_counted("deleted", [None] * len(touches.deleted)))
    ran = [cell for cell in touches.ran if cell]
    if touches.ran:
        if ran and ran == touches.edited:
            pieces.append(("ran it" if len(ran) == 1 else "ran them", []))
        elif ran:
            pieces.append(_named("ran", ran))
        else:
            pieces.append(("ran the notebook", []))
    words = [piece for piece, _ in pieces]
    sentence = " ".join(words) if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    cells = [cell for _, named in pieces for cell in named]
    text = f"{who} " + sentence.format(*cells) if cells else f"{who} {sentence}"
    if touches.failed is not None:
        text += "; it failed: " + shorten(error_line(touches.failed), ERROR_CHARS)
    return {"text": text, "links": _links(text, cells, touches.ids), "at": round(touches.at, 3)}


def _named(verb: str, cells: list[str]) -> tuple[str, list[str]]:
    shown = cells[:MAX_NAMED]
    more = len(cells) - len(shown)
    slots = ", ".join("{}" for _ in shown)
    return f"{verb} {slots}" + (f" and {more} more" if more else ""), shown


def _counted(verb: str, cells: list[str | None]) -> tuple[str, list[str]]:
    named = [cell for cell in cells if cell]
    if named and len(named) == len(cells):
        return _named(verb, named)
    count = len(cells)
    return f"{verb} {count} cell{'s' if count != 1 else ''}", []


def _links(text: str, cells: list[str], ids: dict[str, str]) -> list[Link]:
    """Spans of ``text`` naming ``cells`` (in order), as UTF-16 offsets, for the page."""
    links: list[Link] = []
    position = 0
    for cell in cells:
        start = text.find(cell, position)
        if start < 0:
            continue
        position = start + len(cell)
        if cell in ids:
            span = {"start": utf16_len(text[:start]), "end": utf16_len(text[:position])}
            links.append({**span, "cell_id": ids[cell]})  # type: ignore[typeddict-item]
    return links
