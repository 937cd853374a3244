"""What changed between the cells the person last saw and the notebook now, as one line.

Cells are matched by id; cells without one (notebooks before nbformat 4.5) by their source,
each once. A matched cell whose source (or type) differs was edited; one whose execution count
changed ran (and failed, when an output is now an error); a cell of now with no match was added
(and ran, when it has an execution count); a cell of then with no match was deleted. A run whose
execution count is one of the person's own (their page sent it; its result reached the file
after they left) is not counted.

The line: ``While you were away: 2 cells added, 1 edited, 1 deleted, 3 ran (1 failed) — by
Claude via churn.chat``, parts that are zero left out. "2 cells added" links the first added
cell, "1 edited" the first edited one, "1 failed" the first cell whose run failed: where the
person goes first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..textutil import utf16_len
from ..wire import Link
from .cells import NO_COUNT, CellState

PREFIX = "While you were away: "
WHO_SHOWN = 3
"""Names of who touched the notebook the line gives (then "and others")."""


@dataclass(frozen=True)
class CellChange:
    """One cell of now that changed: what happened to it, and what the person saw before."""

    cell_id: str | None
    added: bool = False
    edited: bool = False
    ran: bool = False
    failed: bool = False
    before: bytes | None = None
    """The source hash of the cell the person saw (None for an added cell): the key of its
    kept text."""
    error: str | None = None
    """The cell's error line now, when its run failed."""
    state: tuple[bytes, int] = (b"", NO_COUNT)
    """The cell now: its source hash and execution count (a review compares them)."""


@dataclass(frozen=True)
class Change:
    """Counts of what changed, and the ids of the added, edited and first failed cells of now;
    each changed cell (``cells``, notebook order) and the source hashes of the cells the person
    saw that are gone (``gone``)."""

    added: list[str | None] = field(default_factory=list)
    edited: list[str | None] = field(default_factory=list)
    deleted: int = 0
    ran: int = 0
    failed: int = 0
    failed_cell: str | None = None
    """The first cell (notebook order) whose run failed, when the file says which."""
    # The counts above are what a line says; two changes that say the same are equal.
    cells: list[CellChange] = field(default_factory=list, compare=False)
    gone: list[bytes] = field(default_factory=list, compare=False)

    def __bool__(self) -> bool:
        return bool(self.added or self.edited or self.deleted or self.ran)


def diff(
    before: Sequence[CellState], now: Sequence[CellState], own_runs: Collection[int] = ()
) -> Change:
    """What changed from ``before`` (a fingerprint's cells) to ``now`` (with their ids);
    ``own_runs``: the execution counts of the person's own runs, which are no news."""
    # Queues: a notebook can hold two cells of one id (a copy edited by hand), matched in order.
    by_id: defaultdict[bytes, list[CellState]] = defaultdict(list)
    by_source: defaultdict[bytes, list[CellState]] = defaultdict(list)
    for cell in before:
        (by_id[cell.id_hash] if any(cell.id_hash) else by_source[cell.source_hash]).append(cell)
    matched: set[int] = set()
    added: list[str | None] = []
    edited: list[str | None] = []
    ran = failed = 0
    failed_cell: str | None = None
    cells: list[CellChange] = []
    for cell in now:
        queue = by_id[cell.id_hash] if any(cell.id_hash) else None
        if not queue:
            # No id, or one the old cells do not have: an id-less cell of then with this source
            # (a writer that gave ids to an nbformat 4.4 notebook changed nothing else).
            queue = by_source[cell.source_hash]
        old = queue.pop(0) if queue else None
        if old is not None:
            matched.add(id(old))
        edit = old is not None and old.source_hash != cell.source_hash
        last = NO_COUNT if old is None else old.count
        run = cell.count not in (NO_COUNT, last) and cell.count not in own_runs
        if old is None:
            added.append(cell.cell_id)
        if edit:
            edited.append(cell.cell_id)
        if run:
            ran += 1
            failed += cell.failed
            if cell.failed and failed_cell is None:
                failed_cell = cell.cell_id
        if old is None or edit or run:
            cells.append(
                CellChange(
                    cell.cell_id,
                    added=old is None,
                    edited=edit,
                    ran=run,
                    failed=run and cell.failed,
                    before=None if old is None else old.source_hash,
                    error=cell.error if run and cell.failed else None,
                    state=(cell.source_hash, cell.count),
                )
            )
    gone = [cell.source_hash for cell in before if id(cell) not in matched]
    return Change(added, edited, len(gone), ran, failed, failed_cell, cells, gone)


def change_line(change: Change, by: str | None) -> tuple[str, list[Link]]:
    """The line for ``change`` (``by``: who did it, e.g. ``by Claude via churn.chat`` or
    ``on disk``), with links to the first added, the first edited and the first failed cell."""
    counts: list[tuple[int, str, str | None]] = [
        (len(change.added), "added", change.added[0] if change.added else None),
        (len(change.edited), "edited", change.edited[0] if change.edited else None),
        (change.deleted, "deleted", None),
        (change.ran, "ran", None),
    ]
    parts: list[tuple[str, str | None]] = []
    for count, verb, cell_id in counts:
        if count:
            # The first part names what is counted: "2 cells added, 1 edited".
            noun = ("cell " if count == 1 else "cells ") if not parts else ""
            parts.append((f"{count} {noun}{verb}", cell_id))
    text = PREFIX
    links: list[Link] = []

    def add(part: str, cell_id: str | None) -> None:
        nonlocal text
        if cell_id is not None:
            start = utf16_len(text)
            links.append({"start": start, "end": start + utf16_len(part), "cell_id": cell_id})
        text += part

    for index, (part, cell_id) in enumerate(parts):
        if index:
            text += ", "
        add(part, cell_id)
    if change.ran and change.failed:
        text += " ("
        add(f"{change.failed} failed", change.failed_cell)
        text += ")"
    if by:
        text += f" — {by}"
    return text, links


def who_words(names: Sequence[str]) -> str | None:
    """``by Claude via churn.chat and Claude Code`` (most recent first), or None."""
    if not names:
        return None
    shown = list(names[:WHO_SHOWN])
    if len(names) > WHO_SHOWN:
        return f"by {', '.join(shown)} and others"
    if len(shown) == 1:
        return f"by {shown[0]}"
    return f"by {', '.join(shown[:-1])} and {shown[-1]}"
