"""The waiting long polls of the kernel feed, bounded per kernel and per server.

Each waiting ``GET …/kernels/{id}/events`` holds a socket (a file descriptor) and a task until
news or its timeout. Unbounded, ~1,100 of them exhaust a server with the common 1,024-descriptor
limit, for every user of it. So:

- a kernel holds at most ``per_kernel`` polls; one more answers its *oldest* at once (with the
  current feed), so a kernel whose old connection is still half-open after a reconnect never
  locks itself out;
- the server holds at most ``total``; beyond it :meth:`LongPolls.enter` raises
  :class:`PollsFull` and the handler answers 429 with ``Retry-After``.

Only used from the server's event loop: no locks. Each poll has its own ``asyncio.Event``, so a
notify wakes exactly the polls of that kernel, and a poll that hung up wakes only itself.
"""

from __future__ import annotations

import asyncio


class PollsFull(Exception):
    """The server already holds its limit of waiting polls."""


class Poll:
    """One waiting poll: woken by news for its kernel, by eviction or by its client leaving."""

    __slots__ = ("event", "evicted", "kernel_id")

    def __init__(self, kernel_id: str) -> None:
        self.kernel_id = kernel_id
        self.event = asyncio.Event()
        self.evicted = False
        """A newer poll of the same kernel took its place: answer now with the current feed."""


class LongPolls:
    """Every waiting poll, per kernel in arrival order (oldest first)."""

    def __init__(self, *, per_kernel: int, total: int) -> None:
        self.per_kernel = max(1, per_kernel)
        self.total = max(1, total)
        self._by_kernel: dict[str, dict[Poll, None]] = {}  # a dict is an ordered set
        self._count = 0
        self.evicted = 0
        """Polls answered early because their kernel opened one more than its bound."""
        self.refused = 0
        """Polls refused (429) because the server was full."""

    def enter(self, kernel_id: str) -> Poll:
        """Register a poll that is about to wait; raises :class:`PollsFull` past the bound."""
        waiting = self._by_kernel.get(kernel_id)
        if waiting is not None and len(waiting) >= self.per_kernel:
            # Replacing one of the kernel's own polls never grows the total: even a full
            # server lets a kernel reconnect.
            while len(waiting) >= self.per_kernel:
                self._evict(next(iter(waiting)))
        elif self._count >= self.total:
            self.refused += 1
            raise PollsFull(self.total)
        poll = Poll(kernel_id)
        self._by_kernel.setdefault(kernel_id, {})[poll] = None
        self._count += 1
        return poll

    def leave(self, poll: Poll) -> None:
        """Forget a poll that answered, failed or whose client hung up (idempotent)."""
        waiting = self._by_kernel.get(poll.kernel_id)
        if waiting is None or poll not in waiting:
            return
        del waiting[poll]
        self._count -= 1
        if not waiting:
            del self._by_kernel[poll.kernel_id]  # no empty entries left behind per kernel

    def notify(self, kernel_id: str) -> None:
        """News for ``kernel_id`` (or it went away): wake every poll waiting on it."""
        for poll in self._by_kernel.get(kernel_id, ()):
            poll.event.set()

    def count(self, kernel_id: str | None = None) -> int:
        """Polls waiting now, for one kernel or in all."""
        if kernel_id is None:
            return self._count
        return len(self._by_kernel.get(kernel_id, ()))

    def kernel_ids(self) -> set[str]:
        """Kernels with at least one waiting poll."""
        return set(self._by_kernel)

    def _evict(self, poll: Poll) -> None:
        poll.evicted = True
        self.evicted += 1
        self.leave(poll)
        poll.event.set()
