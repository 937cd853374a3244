"""One background thread for the extension's small jobs: timers, state reports, session writes.

An idle kernel with the extension loaded used to keep a thread per concern (the trigger timer,
the state reporter, the session writer's debounce) plus a timer thread per request to the
server. Each of them sleeps nearly all the time; together they cost memory and a crowded
``Threads`` line for nothing. A :class:`Worker` runs them all, one after the other, on one
daemon thread that sleeps on a condition until the next job is due — so an idle kernel costs
this thread and the focus feed's (its blocking long poll), and nothing else.

Jobs must be short: they share the thread. Nothing here may block for long (a model call runs
in a draft's own thread; a state report to the loopback server takes milliseconds, and its
retries are scheduled, not slept). A job that raises is logged and the others go on.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Job:
    """A scheduled call; :meth:`cancel` before it runs and it never does."""

    __slots__ = ("cancelled", "fn", "when")

    def __init__(self, when: float, fn: Callable[[], object]) -> None:
        self.when = when
        """When it is due, in :func:`time.monotonic` seconds."""
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Worker:
    """Runs scheduled calls in order of their due time on one daemon thread.

    The thread starts with the first job scheduled (a worker nothing used costs nothing) and
    ends with :meth:`stop`; jobs scheduled after that are dropped.
    """

    def __init__(self, name: str = "jupyter-recap-worker") -> None:
        self.name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Job]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def thread(self) -> threading.Thread | None:
        """The running thread, if it was started and not stopped."""
        return self._thread

    def call_at(self, when: float, fn: Callable[[], object]) -> Job:
        """Run ``fn()`` on the worker's thread at ``when`` (:func:`time.monotonic` seconds)."""
        job = Job(when, fn)
        with self._cond:
            if self._stopped:
                job.cancelled = True
                return job
            heapq.heappush(self._heap, (when, next(self._order), job))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif self._heap[0][2] is job:  # the new first one: wake the thread to re-time
                self._cond.notify()
        return job

    def call_later(self, delay: float, fn: Callable[[], object]) -> Job:
        return self.call_at(time.monotonic() + max(0.0, delay), fn)

    def call_soon(self, fn: Callable[[], object]) -> Job:
        return self.call_at(time.monotonic(), fn)

    def stop(self, timeout: float = 5.0) -> None:
        """Drop the jobs not yet run and end the thread (waits for a job that is running)."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def on_thread(self) -> bool:
        """Whether the caller runs on this worker's thread."""
        return self._thread is threading.current_thread()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    if not self._heap:
                        self._cond.wait()
                        continue
                    when, _, job = self._heap[0]
                    if job.cancelled:
                        heapq.heappop(self._heap)
                        continue
                    remaining = when - time.monotonic()
                    if remaining > 0:
                        self._cond.wait(remaining)
                        continue
                    heapq.heappop(self._heap)
                    break
            try:
                job.fn()
            except Exception:  # noqa: BLE001 - one failing job must not end the others
                from ..debuglog import get_logger

                get_logger().exception("worker: a background job failed")
