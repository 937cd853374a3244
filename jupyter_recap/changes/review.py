"""The cells a person has to review in one notebook: a mark on each cell someone else changed
since they last saw it, kept until they have seen it, back when it changes again.

The change tracker diffs the notebook against what the person saw when they left
(:func:`..changes.diff.diff`), again at each read while they are away. A :class:`Review` turns
those diffs into marks:

- a mark is the cell's id, what happened to it (added, edited, ran, failed), who did it, and
  the source hash of the cell the person saw (the key of its kept text, for the diff);
- a mark is *reviewed* at the state the cell had when the person saw it (its source hash and
  execution count now); when the cell changes again its state differs, and the mark is back;
- when the person's view is taken again (they leave, or their page saves), the diff starts
  from the new view: the marks not yet reviewed are *settled* and carried on, each keeping
  what the person saw first, so nothing unreviewed is lost by a save; reviewed ones go;
- the cells gone since the person's view are listed with their last-seen text, and carried
  over their page's saves until they leave again (they have had the list in front of them).

Pure: the tracker (``server/outside/changes.py``) reads the file and keeps the texts
(:mod:`..stores.seentext`); this module only says which cells carry which mark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..textutil import printable, shorten
from ..wire import CellMark, ChangeKind, ChangeReview, DeletedCell
from .diff import CellChange, Change

ERROR_CHARS = 300
"""A failed run's error line, as a mark carries it."""
BEFORE_CHARS = 200_000
"""One cell's last-seen text in an answer (a larger one is cut, and says so)."""
MAX_GONE = 200
"""Deleted cells listed per notebook (the first ones)."""

CellVersion = tuple[bytes, int]
"""A cell's state as a review compares it: its source hash and execution count now."""


@dataclass
class Mark:
    """One changed cell (see the module's docstring)."""

    cell_id: str
    added: bool
    edited: bool
    ran: bool
    failed: bool
    before: bytes | None
    """The source hash of the cell the person saw (None: added since)."""
    who: str | None
    """Who changed it: "Claude via churn.chat", "another client of the kernel", "on disk"."""
    error: str | None
    state: CellVersion

    @property
    def kind(self) -> ChangeKind:
        """The mark's one word: a failed run first; else new; else edited; else ran."""
        if self.failed:
            return "failed"
        if self.added:
            return "added"
        return "edited" if self.edited else "ran"

    def label(self) -> str:
        """``edited, ran, failed — Claude via churn.chat``."""
        done = (("added", self.added), ("edited", self.edited), ("ran", self.ran))
        words = [word for word, happened in done if happened]
        if self.failed:
            words.append("failed")
        what = ", ".join(words)
        return f"{what} — {self.who}" if self.who else what

    def joined(self, later: Mark) -> Mark:
        """This unreviewed mark with what happened to its cell since: the person still has
        to see all of it, against what they saw first."""
        added = self.added or later.added  # a cell they never saw is new, edited or not
        failed = later.failed if later.ran else self.failed  # the latest run says
        return dataclasses.replace(
            later,
            added=added,
            edited=not added and (self.edited or later.edited),
            ran=self.ran or later.ran,
            failed=failed,
            before=self.before,
            error=(later.error if later.ran else self.error) if failed else None,
        )


@dataclass(frozen=True)
class Gone:
    """A cell the person saw that is gone."""

    before: bytes
    who: str | None


class Review:
    """One notebook's marks (see the module's docstring)."""

    def __init__(self) -> None:
        self.settled: dict[str, Mark] = {}
        """Unreviewed marks carried from before the person's latest view."""
        self.current: dict[str, Mark] = {}
        """Marks of the latest diff (from the person's latest view to the notebook now)."""
        self.order: list[str] = []
        """The notebook's cell ids now, in order."""
        self.reviewed: dict[str, CellVersion] = {}
        """Cell id → its state when the person saw it."""
        self.settled_gone: list[Gone] = []
        self.gone: list[Gone] = []

    # -- what the tracker says ---------------------------------------------------------------

    def update(
        self,
        change: Change,
        who: str | None,
        order: Sequence[str | None],
        writers: Mapping[str, str] | None = None,
    ) -> None:
        """The notebook's latest diff from the person's view (``who``: who changed it, in
        words; ``order``: the ids of its cells now; ``writers``: who wrote a cell, where that
        is known of the cell itself)."""
        self.order = [cell_id for cell_id in order if cell_id]
        writers = writers or {}
        self.current = {
            cell.cell_id: _mark(cell, writers.get(cell.cell_id, who))
            for cell in change.cells
            if cell.cell_id is not None
        }
        self.gone = [Gone(before, who) for before in change.gone[:MAX_GONE]]

    def viewed_again(self, *, leaving: bool) -> None:
        """The person's view is taken again (they left, or their page saved): carry what is
        not reviewed yet; the cells gone stay listed over a save, not past their leaving."""
        self.settled = {
            cell_id: mark for cell_id, mark in self.marks().items() if not self._seen(mark)
        }
        self.current = {}
        self.reviewed = {}
        self.settled_gone = [] if leaving else (self.settled_gone + self.gone)[:MAX_GONE]
        self.gone = []

    def mark_reviewed(self, cell_ids: Iterable[str]) -> None:
        """The person saw these cells (on screen a second, or selected)."""
        marks = self.marks()
        for cell_id in cell_ids:
            mark = marks.get(cell_id)
            if mark is not None:
                self.reviewed[cell_id] = mark.state

    # -- what the page reads -----------------------------------------------------------------

    def marks(self) -> dict[str, Mark]:
        """Every mark, settled ones joined with what happened since."""
        joined = dict(self.settled)
        for cell_id, mark in self.current.items():
            earlier = joined.get(cell_id)
            joined[cell_id] = earlier.joined(mark) if earlier is not None else mark
        return joined

    def open_marks(self) -> int:
        """Marks not reviewed yet (of cells in the notebook now)."""
        present = set(self.order)
        return sum(1 for m in self.marks().values() if m.cell_id in present and not self._seen(m))

    def all_gone(self) -> list[Gone]:
        return (self.settled_gone + self.gone)[:MAX_GONE]

    def needed_texts(self) -> set[bytes]:
        """The kept texts an answer may show: what the person saw of each marked or gone cell."""
        keys = {mark.before for mark in self.marks().values() if mark.before is not None}
        return keys | {gone.before for gone in self.all_gone()}

    def settled_down(self) -> bool:
        """Nothing left to review: no open mark and no deleted cell listed."""
        return not self.open_marks() and not self.all_gone()

    def answer(
        self, path: str, texts: Mapping[bytes, str] | None, note: str | None = None
    ) -> ChangeReview:
        """``GET changes``'s answer; ``texts``: the kept texts by source hash (None: none kept,
        ``note`` says why)."""
        marks = self.marks()
        cells: list[CellMark] = []
        for cell_id in self.order:
            mark = marks.get(cell_id)
            if mark is None:
                continue
            cells.append(
                {
                    "cell_id": cell_id,
                    "change": mark.kind,
                    "label": printable(mark.label()),
                    "before": _text(texts, mark.before),
                    "error": shorten(printable(mark.error), ERROR_CHARS) if mark.error else None,
                    "reviewed": self._seen(mark),
                }
            )
        deleted: list[DeletedCell] = [
            {"source": _text(texts, gone.before), "label": printable(_gone_label(gone))}
            for gone in self.all_gone()
        ]
        return {
            "path": path,
            "cells": cells,
            "deleted": deleted,
            "reviewed": sum(cell["reviewed"] for cell in cells),
            "total": len(cells),
            "diffs": texts is not None,
            "note": note if texts is None else None,
        }

    def _seen(self, mark: Mark) -> bool:
        return self.reviewed.get(mark.cell_id) == mark.state


def _mark(cell: CellChange, who: str | None) -> Mark:
    return Mark(
        cell_id=cell.cell_id or "",
        added=cell.added,
        edited=cell.edited,
        ran=cell.ran,
        failed=cell.failed,
        before=cell.before,
        who=who,
        error=cell.error,
        state=cell.state,
    )


def _gone_label(gone: Gone) -> str:
    return f"deleted — {gone.who}" if gone.who else "deleted"


def _text(texts: Mapping[bytes, str] | None, key: bytes | None) -> str | None:
    if texts is None or key is None:
        return None
    text = texts.get(key)
    if text is None or len(text) <= BEFORE_CHARS:
        return text
    return text[:BEFORE_CHARS] + "\n… (cut: the cell was longer)"
