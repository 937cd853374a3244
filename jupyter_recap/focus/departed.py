"""What the agents board remembers of rows that left it.

A row dropped to keep the board's size is kept whole, *left out*: while its kernel or chat is
still there it still counts (the panel's "+N more", and the title's count when it needs the
person), the person's looking at its notebook still ends its absence, and it comes back to the
board as it was when its kernel reports again or when it needs the person more than a row on
the board does (the board's ``_balance``). A left-out row whose kernel or chat is no longer
listed keeps its notices: it goes on counting them where it stopped if it comes back, since the
page remembers the notices it gave, and a row that started again from zero would not be
notified again. Both lists are bounded: the oldest is forgotten (a left-out row forgotten so
keeps only its notices).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from .rows import Row, eviction_order

MAX_REMEMBERED = 4096
"""Rows whose notices (and rows left out) the board remembers after they left it."""


class Departed:
    """The rows that left the board: the left-out ones whole, the notices of the others."""

    def __init__(self, most: int = MAX_REMEMBERED) -> None:
        self.most = most
        self.notices: OrderedDict[str, tuple[int, bool]] = OrderedDict()
        """Row id → (notice, noticed in the current absence), of rows that are gone."""
        self.left_out: OrderedDict[str, Row] = OrderedDict()
        """Rows dropped to keep the board's size whose kernel (or chat) is still there, whole."""

    def dropped(self, row: Row) -> None:
        """The board dropped ``row`` to keep its size."""
        self.notices.pop(row.kernel_id, None)
        self.left_out[row.kernel_id] = row
        self.left_out.move_to_end(row.kernel_id)
        while len(self.left_out) > self.most:
            _, oldest = self.left_out.popitem(last=False)
            self._remember(oldest.kernel_id, oldest.notice, oldest.noticed)

    def take(self, row_id: str) -> Row | None:
        """The left-out row ``row_id``, taken back to the board (None when it is not one)."""
        return self.left_out.pop(row_id, None)

    def returned(self, row_id: str) -> tuple[int, bool]:
        """A row that had gone is on the board again: its (notice, noticed)."""
        return self.notices.pop(row_id, (0, False))

    def looked_at(self, row_id: str) -> bool:
        """The person looks at a row that is not on the board: its absence ends too. True when
        a left-out row needed the person and no longer does."""
        row = self.left_out.get(row_id)
        if row is not None:
            return row.looked_at()
        if row_id in self.notices:
            self.notices[row_id] = (self.notices[row_id][0], False)
        return False

    def gone(self, row_id: str) -> bool:
        """The row's kernel or chat is gone for good; True when it was counted as left out."""
        self.notices.pop(row_id, None)
        return self.left_out.pop(row_id, None) is not None

    def keep(self, alive: set[str]) -> bool:
        """Only rows whose kernel or chat is still there count as left out (a CLI agent's row
        stays: its source forgets it); True when fewer do. The others keep their notices."""
        gone = [
            row_id
            for row_id, row in self.left_out.items()
            if row_id not in alive and row.kind != "cli"
        ]
        for row_id in gone:
            row = self.left_out.pop(row_id)
            self._remember(row_id, row.notice, row.noticed)
        return bool(gone)

    def needing(self) -> int:
        """How many left-out rows need the person."""
        return sum(1 for row in self.left_out.values() if row.needs_you is not None)

    def first(self) -> Row | None:
        """The left-out row the board wants back first (the reverse of its eviction order)."""
        return max(self.left_out.values(), key=eviction_order, default=None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.left_out)

    def _remember(self, row_id: str, notice: int, noticed: bool) -> None:
        self.notices[row_id] = (notice, noticed)
        self.notices.move_to_end(row_id)
        while len(self.notices) > self.most:
            self.notices.popitem(last=False)
