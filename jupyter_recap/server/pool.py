"""The server's thread pool, whose threads end with the server.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so one
call stuck in a thread (a read of a file on a hung mount, a model call past its deadline) keeps
the server process from ending after SIGTERM: jupyter_server has stopped, the process has not.
This pool's threads are daemons: at stop, queued work is cancelled, work that runs is told to
stop through its own cancel token (see :class:`~jupyter_recap.server.RecapServer`), and the
server waits for it a bounded grace; whatever still runs then dies with the process.

Reads of files nobody vouched for cannot get stuck on a FIFO in the first place
(:mod:`jupyter_recap.untrusted` opens them non-blocking and refuses what is not a regular file):
this is the backstop for what no flag can make non-blocking.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any, TypeVar

_T = TypeVar("_T")
_Work = tuple[Future[Any], Callable[[], Any]]


class DaemonPool:
    """At most ``workers`` daemon threads running the callables given to :meth:`submit`."""

    def __init__(self, workers: int, *, name: str) -> None:
        self.workers = max(1, workers)
        self.name = name
        self._queue: SimpleQueue[_Work | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, function: Callable[[], _T]) -> Future[_T]:
        """Run ``function()`` on a thread of the pool; RuntimeError once it is shut down."""
        future: Future[_T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            self._queue.put((future, function))
            if self._idle == 0 and len(self._threads) < self.workers:
                thread = threading.Thread(
                    target=self._work,
                    name=f"{self.name}_{len(self._threads)}",
                    daemon=True,  # the point of this pool: see the module
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._idle = max(0, self._idle - 1)
        return future

    def shutdown(self, *, cancel_futures: bool = True) -> None:
        """No new work; queued work cancelled (``cancel_futures``); idle threads end. Never
        waits: a thread still running ends when its work returns, or with the process."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if cancel_futures:
                while not self._queue.empty():
                    work = self._queue.get_nowait()
                    if work is not None:
                        work[0].cancel()
            for _ in self._threads:
                self._queue.put(None)

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            future, function = work
            if future.set_running_or_notify_cancel():
                try:
                    result = function()
                except BaseException as error:  # noqa: BLE001 - handed to whoever awaits it
                    future.set_exception(error)
                else:
                    future.set_result(result)
            del work, future, function  # nothing of the last job kept alive while idle
            with self._lock:
                if self._closed:
                    return
                self._idle += 1
