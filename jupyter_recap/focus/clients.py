"""The browser tabs that report one kernel's focus, and the focus they make together.

Each (tab, notebook) pair reporting for a kernel says whether that notebook is focused; the
kernel is focused when any pair is. A pair is kept while it is heard from (a report, its
heartbeat, or the person typing in its tab), at most ``most`` of them: the least recently heard
from goes first, and a pair silent past the hub's time-out is forgotten. Pure state for the
focus hub (:mod:`.hub`), which turns each change of the aggregate into an event.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(slots=True)
class _Pair:
    focused: bool
    seen: float


class Clients:
    """One kernel's reporting (tab, notebook) pairs, the least recently heard from first."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._pairs: OrderedDict[tuple[str, str], _Pair] = OrderedDict()
        self.focused: bool | None = None
        """The aggregate; ``None`` until some pair has reported."""

    def __len__(self) -> int:
        return len(self._pairs)

    def heard(self, client_id: str, path: str, focused: bool, now: float) -> None:
        """One notebook's focus in one tab (also its heartbeat)."""
        key = (client_id, path)
        pair = self._pairs.pop(key, None)
        if pair is None:
            pair = _Pair(focused, now)
        else:
            pair.focused, pair.seen = focused, now
        self._pairs[key] = pair  # most recently heard from last: the cap drops the oldest
        while len(self._pairs) > self.most:
            self._pairs.popitem(last=False)

    def alive(self, client_id: str, now: float) -> None:
        """The tab is alive (the person typed in it): each of its pairs was heard from now."""
        for key in [key for key in self._pairs if key[0] == client_id]:
            pair = self._pairs.pop(key)
            pair.seen = now
            self._pairs[key] = pair  # keep the order by last word (see expire)

    def expire(self, limit: float) -> bool:
        """Forget the pairs last heard from before ``limit``; True when any was."""
        # Pairs are ordered by their last word, oldest first: stop at the first fresh one, so
        # a heartbeat costs O(expired) rather than a scan of every tab.
        expired = False
        while self._pairs:
            oldest = next(iter(self._pairs.values()))
            if oldest.seen >= limit:
                break
            self._pairs.popitem(last=False)
            expired = True
        return expired

    def refocus(self) -> bool:
        """Work the aggregate out again; True when it changed."""
        # Once a pair has reported, the aggregate stays a bool: every pair gone is "away".
        focused = any(pair.focused for pair in self._pairs.values())
        if focused == self.focused:
            return False
        self.focused = focused
        return True
