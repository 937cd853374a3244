"""What the agents board remembers of rows that left it.

A row dropped to keep the board's size, or whose kernel or chat went away, may come back (the
kernel reports again, the chat is opened again). It then goes on counting its notices where it
stopped: the page remembers the notices it gave, so a row that started again from zero would
not be notified again. The rows dropped only for the size, while their kernel or chat is still
there, are counted too (the panel's "+N more"). Both lists are bounded: the oldest is forgotten.
"""

from __future__ import annotations

from collections import OrderedDict

MAX_REMEMBERED = 4096
"""Rows whose notices (and whose leaving out) the board remembers after they left it."""


class Departed:
    """The rows that left the board: their notices, and which of them were left out."""

    def __init__(self, most: int = MAX_REMEMBERED) -> None:
        self.most = most
        self.notices: OrderedDict[str, tuple[int, bool]] = OrderedDict()
        """Row id → (notice, noticed in the current absence)."""
        self.left_out: OrderedDict[str, None] = OrderedDict()
        """Rows dropped to keep the board's size whose kernel (or chat) is still there."""

    def dropped(self, row_id: str, notice: int, noticed: bool) -> None:
        """The board dropped the row to keep its size."""
        self.notices[row_id] = (notice, noticed)
        self.left_out[row_id] = None
        for remembered in (self.notices, self.left_out):
            while len(remembered) > self.most:
                remembered.popitem(last=False)

    def returned(self, row_id: str) -> tuple[int, bool, bool]:
        """The row is on the board again: its (notice, noticed), and whether it was left out
        (then it no longer is)."""
        notice, noticed = self.notices.pop(row_id, (0, False))
        return notice, noticed, self.left_out.pop(row_id, None) is not None

    def looked_at(self, row_id: str) -> None:
        """The person looks at a row that is not on the board: its absence ends too."""
        if row_id in self.notices:
            self.notices[row_id] = (self.notices[row_id][0], False)

    def gone(self, row_id: str) -> bool:
        """The row's kernel or chat is gone for good; True when it was counted as left out."""
        self.notices.pop(row_id, None)
        return self.left_out.pop(row_id, None) is not None

    def keep(self, alive: set[str]) -> bool:
        """Only rows whose kernel or chat is still there count as left out; True when fewer do."""
        gone = [row_id for row_id in self.left_out if row_id not in alive]
        for row_id in gone:
            del self.left_out[row_id]
        return bool(gone)
