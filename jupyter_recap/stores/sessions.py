"""The session store: one record per notebook agent session, kept private under the data dir.

A :class:`SessionWriter` follows a live :class:`~jupyter_recap.record.transcript.Transcript` and
persists it, debounced: a burst of appends becomes one write of the new entries only (the
history is never rewritten), and a session without a prompt is never written at all. A
:class:`SessionStore` lists, resolves and loads what was written. The file layout and the crash
safety live in :mod:`jupyter_recap.stores.sessionfiles`.
"""

from __future__ import annotations

import atexit
import builtins
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..debuglog import get_logger
from ..errors import StoreError, StoreWriteError, UnsafeStoreError
from ..record.transcript import Entry, Transcript
from ..redact import Redactor
from . import privatefs
from . import sessionfiles as files
from .sessionfiles import (
    AppendFile,
    SessionInUse,
    SessionRecord,
    check_path,
    shorten_title,
)
from .titles import PromptTitle, title_from_recap

if TYPE_CHECKING:
    from .listings import SessionSummary

__all__ = [
    "DEBOUNCE_SECONDS",
    "SessionInUse",
    "SessionRecord",
    "SessionStore",
    "SessionWriter",
    "WriterStatus",
    "latest_for",
    "list_sessions",
    "load",
    "shorten_title",
]

DEBOUNCE_SECONDS = 0.4
#: Longest wait between two attempts to write what a failed write (a full disk) left pending.
MAX_RETRY_SECONDS = 60.0


LISTED_SESSIONS = 15
"""Sessions a listing shows unless asked for more (``%recap sessions``, ``jupyter recap
--sessions``, ``GET sessions``)."""


class SessionStore:
    """The sessions in one directory (default:
    :func:`~jupyter_recap.stores.sessionfiles.store_dir`)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else files.store_dir()

    def exists(self) -> bool:
        """Whether there is a store to read: False when it was never created; UnsafeStoreError
        when someone else could have written it (nothing in it is then read)."""
        try:
            os.lstat(self.root)
        except FileNotFoundError:
            return False
        privatefs.check_dir(self.root)
        return True

    def claim(self, session_id: str) -> AppendFile:
        """Take ``session_id`` for this process: its transcript file, opened and locked.

        SessionInUse when a live kernel holds it; the lock goes with the file (closing it, or
        the process ending, releases it).
        """
        files.ensure_dir(self.root)
        return AppendFile(self.entries_path(session_id))

    def claim_if_writable(self, session_id: str) -> AppendFile | None:
        """:meth:`claim`, or None when the store cannot be written now (read-only, full): the
        session can still be resumed, and its writer claims it once it can write. A failure
        that will not pass (a link or a directory where the record should be) is raised."""
        try:
            return self.claim(session_id)
        except StoreWriteError as error:
            if not files.is_passing(error):
                raise
            get_logger().warning("sessions: %s; resuming without writing for now", error)
            return None

    def header_path(self, session_id: str) -> Path:
        return self.root / (session_id + files.HEADER_SUFFIX)

    def entries_path(self, session_id: str) -> Path:
        return self.root / (session_id + files.ENTRIES_SUFFIX)

    def resolve(self, id_or_prefix: str) -> str:
        """The one stored id starting with ``id_or_prefix``; StoreError if none or several."""
        prefix = files.check_prefix(id_or_prefix)
        self.exists()  # UnsafeStoreError before anything in it is believed
        matches = [i for i in files.session_ids(self.root) if i.startswith(prefix)]
        if not matches:
            raise StoreError(f"no session matches {prefix!r}")
        if len(matches) > 1:
            raise StoreError(f"{prefix!r} is ambiguous: {len(matches)} sessions match")
        return matches[0]

    def header(self, session_id: str) -> SessionRecord | None:
        """The stored header of ``session_id`` (a full id), or None if absent or unreadable."""
        path = self.header_path(session_id)
        data = files.read_header(path)
        if data is None:
            return None
        try:
            return SessionRecord.from_dict(data)
        except ValueError as error:
            get_logger().warning("sessions: skipping malformed record %s: %s", path.name, error)
            return None

    def records(self, notebook_path: str | None = None) -> builtins.list[SessionRecord]:
        """Every readable header (of one notebook, if given), newest first; never the entries."""
        wanted = check_path(notebook_path) if notebook_path is not None else None
        if not self.exists():
            return []
        found = (self.header(i) for i in files.session_ids(self.root))
        records = [r for r in found if r and (wanted is None or r.notebook == wanted)]
        records.sort(key=lambda r: (r.updated, r.id), reverse=True)
        return records

    def latest_for(self, notebook_path: str) -> SessionRecord | None:
        """The most recently updated session of ``notebook_path`` that has prompts."""
        return next((r for r in self.records(notebook_path) if r.turns > 0), None)

    def load(self, id_or_prefix: str) -> tuple[SessionRecord, Transcript]:
        """A stored session and its transcript; unreadable lines are skipped with a warning."""
        session_id = self.resolve(id_or_prefix)
        record = self.header(session_id)
        if record is None:
            raise StoreError(f"session {session_id} cannot be read")
        entries: builtins.list[Entry] = []
        for item in files.read_lines(self.entries_path(session_id)):
            try:
                entries.append(Entry.from_dict(item))
            except ValueError as error:
                get_logger().warning(
                    "sessions: skipping a malformed entry in %s: %s", session_id, error
                )
        record.entries = len(entries)
        record.turns = sum(1 for e in entries if e.kind == "user")
        return record, Transcript(entries)

    def list(
        self, notebook_path: str | None = None, limit: int = LISTED_SESSIONS
    ) -> builtins.list[SessionSummary]:
        """Summaries of the newest ``limit`` sessions (of one notebook, if given)."""
        from .listings import SessionSummary

        return [SessionSummary.of(r) for r in self.records(notebook_path)[: max(limit, 0)]]


def load(id_or_prefix: str) -> tuple[SessionRecord, Transcript]:
    """:meth:`SessionStore.load` on the default store."""
    return SessionStore().load(id_or_prefix)


def latest_for(notebook_path: str) -> SessionRecord | None:
    """:meth:`SessionStore.latest_for` on the default store."""
    return SessionStore().latest_for(notebook_path)


def list_sessions(
    notebook_path: str | None = None, limit: int = LISTED_SESSIONS
) -> list[SessionSummary]:
    """:meth:`SessionStore.list` on the default store."""
    return SessionStore().list(notebook_path, limit)


def _kernel_id_from_argv() -> str | None:
    for arg in sys.argv:
        if not arg.endswith(".json"):  # the pattern compiles only for a connection file's name
            continue
        match = re.search(r"kernel-([0-9A-Za-z-]+)\.json$", arg)
        if match:
            return match.group(1)
    return None


_SCHEDULING_KINDS = (
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "outcome",
    "summary",
    "recap",
    "meta",
    "event",
)


class Scheduler(Protocol):
    """Runs a call at a :func:`time.monotonic` time on some thread; the returned job has
    ``cancel()`` (the kernel's worker, :class:`jupyter_recap.ipython.worker.Worker`)."""

    def call_at(self, when: float, fn: Callable[[], object]) -> Any: ...


class WriterStatus(NamedTuple):
    """Where a session's record stands, for ``%recap save`` and ``%recap status``.

    A named tuple rather than a frozen dataclass: it is made at every `%load_ext` with this
    module, and a dataclass compiles its methods then (about 0.7 ms here)."""

    session_id: str
    on_disk: int
    """Entries written to the record."""
    pending: int
    """Entries recorded but not written yet (waiting for the debounce, or for space)."""
    stored: bool
    """Whether the record exists on disk at all."""
    error: str | None = None
    """Why the latest write failed, when it did (the entries wait and are retried)."""
    prompts: int = 0
    """Prompts in the live transcript: a session without any is never written."""


class SessionWriter:
    """Persists one live transcript as a session record, ``delay`` seconds after a burst starts.

    ``record`` continues a stored session (from :meth:`SessionStore.load`; its entries are on
    disk already, and ``file`` is its claimed transcript file — claimed here when not given,
    which raises SessionInUse if another kernel holds it). Otherwise a new session gets a fresh
    UUIDv7 id (``parent``: the session it was forked from) and every entry the transcript
    already holds is written with the first flush. ``history``: how many of the transcript's
    first entries belong to the earlier sessions framing this one (its ``framed_by``, see
    :mod:`~jupyter_recap.stores.story`); they are never written into this record.

    What is written is redacted with this process's :class:`~jupyter_recap.redact.Redactor`
    (the kernel's own keys included), so no secret-looking text reaches the disk, and from
    there other processes. Writes never raise: a failure is logged, the entries are kept, and
    the write is retried with a growing pause until it succeeds; a partly written batch is cut
    back first, so nothing is duplicated. ``writes`` counts successful writes and ``on_write``
    (if set) is called after each one.
    """

    def __init__(
        self,
        transcript: Transcript,
        *,
        store: SessionStore | None = None,
        record: SessionRecord | None = None,
        file: AppendFile | None = None,
        notebook: str | None = None,
        kernel_id: str | None = None,
        parent: str | None = None,
        history: int = 0,
        delay: float = DEBOUNCE_SECONDS,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.store = store or SessionStore()
        self._history = max(0, min(history, len(transcript)))
        """Entries of the earlier sessions framing this one: read, never written here."""
        with transcript.locked() as entries:
            self._history_prompts = sum(e.kind == "user" for e in entries[: self._history])
        self._scheduler = scheduler
        """Runs the debounced writes (the kernel's one worker thread); None: a thread of the
        writer's own, started with the first write."""
        self._job: Any = None
        self.delay = delay
        self.writes = 0
        self.on_write: Callable[[int], None] | None = None
        self.error: str | None = None
        """Why the latest write failed (None once one succeeds)."""
        self._cond = threading.Condition()
        self._io_lock = threading.Lock()
        self._deadline: float | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._retry = 0.0
        self._file: AppendFile | None = file
        self._titles = PromptTitle()
        if record is None:
            now = time.time()
            nb = notebook if notebook is not None else os.environ.get("JPY_SESSION_NAME") or None
            record = SessionRecord(
                id=files.uuid7(),
                created=now,
                updated=now,
                notebook=check_path(nb) if nb else None,
                cwd=os.getcwd(),
                kernel_id=kernel_id if kernel_id is not None else _kernel_id_from_argv(),
                parent=parent,
            )
            self._on_disk = False
            self._written = self._history  # every entry of its own is still to be written
        else:
            if self._file is None:  # SessionInUse: another kernel's
                self._file = self.store.claim_if_writable(record.id)
            self._on_disk = True
            self._written = len(transcript)  # restored from this record: on disk already
        self.record = record
        self._dirty = False  # the header has changes not yet written
        # Ordinary cells (``code`` entries) do not schedule a write of their own: they ride
        # along with the next agent activity, ``flush()`` or ``close()``. They are the bulk of
        # a notebook's cells, and this keeps persistence off their per-cell cost.
        self._unsubscribe = transcript.subscribe(self._on_entry, kinds=_SCHEDULING_KINDS)
        self._transcript = transcript
        ref = weakref.ref(self)
        self._atexit = lambda: w.close() if (w := ref()) else None
        atexit.register(self._atexit)

    @property
    def id(self) -> str:
        return self.record.id

    def status(self) -> WriterStatus:
        """What is on disk, what waits, and the latest failure."""
        with self._cond:
            written = self._written
        return WriterStatus(
            self.id,
            on_disk=written,
            pending=max(0, len(self._transcript) - written),
            stored=self._on_disk,
            error=self.error,
            prompts=max(self._own_prompts(), self.record.turns),
        )

    def _own_prompts(self) -> int:
        """Prompts of this session in the live transcript (not of the sessions framing it)."""
        return self._transcript.prompt_count - self._history_prompts

    def add_tokens(self, tokens_in: int = 0, tokens_out: int = 0) -> None:
        """Count tokens spent in this session (written with the next flush)."""
        with self._cond:
            self.record.tokens_in += tokens_in
            self.record.tokens_out += tokens_out
            self._dirty = True
        self._schedule()

    def set_tasks(self, tasks: list[Any]) -> None:
        """Replace the task list slot (written with the next flush)."""
        with self._cond:
            self.record.tasks = list(tasks)
            self._dirty = True
        self._schedule()

    def _on_entry(self, transcript: Transcript, entry: Entry) -> None:
        # Runs after every recorded cell, so it does next to nothing: the entries are read
        # from the transcript when the flush comes, and a flush already scheduled covers this
        # one too (a long burst is written every ``delay`` seconds rather than never).
        if self._deadline is None:
            self._schedule()

    def _schedule(self, delay: float | None = None) -> None:
        with self._cond:
            if self._closed:
                return
            idle = self._deadline is None
            self._deadline = time.monotonic() + (self.delay if delay is None else delay)
            if self._scheduler is not None:
                if self._job is not None:
                    self._job.cancel()
                self._job = self._scheduler.call_at(self._deadline, self._fire)
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="jupyter-recap-sessions", daemon=True
                )
                self._thread.start()
            elif idle:
                self._cond.notify()

    def _fire(self) -> None:
        """The debounce ended (on the scheduler's thread): write."""
        with self._cond:
            if self._closed or self._deadline is None:
                return
            self._deadline = self._job = None
        self.flush()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._deadline is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                remaining = self._deadline - time.monotonic() if self._deadline else 0.0
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self._deadline = None
            self.flush()

    def flush(self) -> bool:
        """Write the pending entries and header now; False if nothing was written.

        After a failure (see :attr:`error`) the write is retried by itself, after 1 s and then
        twice as long each time up to a minute; a refused store (UnsafeStoreError) is not
        retried until the next activity or flush.
        """
        with self._io_lock:
            try:
                written = self._write()
            except Exception as error:  # noqa: BLE001 - persistence must never break the caller
                self._failed(error)
                return False
        if written:
            self.error, self._retry = None, 0.0
        return written

    def _failed(self, error: Exception) -> None:
        message = (
            str(error) if isinstance(error, StoreError) else f"{type(error).__name__}: {error}"
        )
        if message != self.error:  # one log line per distinct failure, not one per attempt
            log = get_logger()
            if isinstance(error, StoreError):
                log.warning("sessions: could not write session %s: %s", self.id, message)
            else:
                log.exception("sessions: could not write session %s", self.id)
        self.error = message
        if not isinstance(error, UnsafeStoreError):
            self._retry = min(max(1.0, self._retry * 2), MAX_RETRY_SECONDS)
            self._schedule(self._retry)

    def _write(self) -> bool:
        # A session without an agent prompt is never written; the transcript counts its
        # prompts, so this costs nothing however many ordinary cells wait to be written.
        if self.record.turns == 0 and self._own_prompts() <= 0:
            return False
        with self._transcript.locked() as entries:
            batch = entries[self._written :]
        with self._cond:
            dirty = self._dirty
        if not (batch or dirty or not self._on_disk):
            return False
        # The environment is read at every write: a key set in the notebook a minute ago is a
        # secret now. Redaction is idempotent, so text already redacted is left as it is.
        clean = Redactor()
        if self._file is not None and self._file.replaced():
            # The transcript file was deleted or replaced behind our back: write the whole
            # story again into a new one rather than into a file nobody can find.
            self._file.close()
            self._file = None
            with self._cond:
                self._written = self._history
            with self._transcript.locked() as entries:
                batch = entries[self._history :]
            self.record.entries = self.record.turns = self.record.recaps = 0
        if batch:
            if self._file is None:
                files.ensure_dir(self.store.root)
                files.sweep_temp_files(self.store.root)  # once per session: leftovers of kills
                try:
                    self._file = self.store.claim(self.id)
                except SessionInUse:
                    # Another kernel took the session while we could not write: continue the
                    # story as a new session of our own rather than interleave with it.
                    batch = self._fork()
                    self._file = self.store.claim(self.id)
            items = [_scrubbed(entry, clean) for entry in batch]
            lines = [files.json_bytes(item) for item in items]
            self._file.append(lines)
            with self._cond:
                self._written += len(batch)
                self._fold(items)
        with self._cond:
            self.record.updated = time.time()
            self._dirty = True
            header = self.record.to_dict()
        header["tasks"] = [_scrubbed_task(task, clean) for task in header["tasks"]]
        for key in ("title", "first_prompt", "last_recap"):
            if header[key]:
                header[key] = clean(header[key])
        data = files.json_bytes(header)
        files.ensure_dir(self.store.root)
        files.write_atomic(self.store.header_path(self.id), data)
        with self._cond:
            self._dirty = False
        self._on_disk = True
        self.writes += 1
        if self.on_write is not None:
            self.on_write(self.writes)
        return True

    def _fork(self) -> list[Entry]:
        """Become a new session (``parent``: the current one) holding the whole transcript but
        the sessions framing it, which frame the new one too; returns the entries to write."""
        old = self.record
        now = time.time()
        self.record = SessionRecord(
            id=files.uuid7(),
            created=now,
            updated=now,
            notebook=old.notebook,
            cwd=old.cwd,
            kernel_id=old.kernel_id,
            tasks=old.tasks,
            parent=old.id,
            framed_by=list(old.framed_by),
        )
        get_logger().info(
            "sessions: %s is held by another kernel; continuing as %s", old.id, self.id
        )
        with self._cond:
            self._written = self._history
        self._on_disk = False
        self._titles = PromptTitle()
        with self._transcript.locked() as entries:
            return entries[self._history :]

    def _fold(self, items: list[dict[str, Any]]) -> None:
        """Count what a written batch adds to the header (from the redacted text)."""
        record = self.record
        record.entries += len(items)
        for item in items:
            kind = item["kind"]
            if kind == "user":
                record.turns += 1
                # A prompt names the session unless its turn fails (PromptTitle).
                self._titles.fold(record, item)
                record.model = item.get("name") or record.model
            elif kind == "outcome":
                self._titles.fold(record, item)
            elif kind == "recap":
                record.recaps += 1
                record.last_recap = item.get("text", "")
                # The first prompt stops saying what a long session is about; the latest
                # recap says it (a recap with nothing usable leaves the title as it was).
                record.title = title_from_recap(record.last_recap) or record.title
        record.model = self._transcript.active_model or record.model

    def close(self) -> None:
        """Stop following the transcript, write what is pending and release the session
        (idempotent)."""
        self._unsubscribe()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
            if self._job is not None:
                self._job.cancel()
                self._job = None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self.flush()
        with self._io_lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        atexit.unregister(self._atexit)


def _scrubbed(entry: Entry, clean: Redactor) -> dict[str, Any]:
    """``entry`` as stored: its dict with the text and error redacted."""
    item = entry.to_dict()
    for key in ("text", "error"):
        value = item.get(key)
        if value:
            item[key] = clean(value)
    return item


def _scrubbed_task(task: object, clean: Redactor) -> object:
    if not isinstance(task, dict):
        return task
    return {
        k: clean(v) if k in ("text", "note") and isinstance(v, str) else v for k, v in task.items()
    }
