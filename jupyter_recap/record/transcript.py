"""The transcript of one notebook's agent session: prompts, replies, tool traffic, cells.

Entries are bounded when they are recorded, so an agent cell that prints 50 MB keeps only a few
kilobytes (its head and tail). The transcript keeps small indexes (where the prompts and the latest
summary are) so that building a recap context never walks the whole history.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

from .entry import (
    MAX_ENTRY_CHARS,
    Entry,
    Kind,
    Outcome,
    clip,
    first_code_line,
    is_finite_number,
    is_optional_text,
)

# Entries are defined in .entry; the rest of the package finds them here too.
__all__ = [
    "LATEST_PROMPTS",
    "MAX_ENTRY_CHARS",
    "MAX_FAILING",
    "OUTSIDE_KINDS",
    "SILENT_KINDS",
    "UNRESOLVED",
    "Entry",
    "Kind",
    "Listener",
    "Outcome",
    "Snapshot",
    "Transcript",
    "add_outside_entry",
    "clip",
    "current",
    "describe_error",
    "first_code_line",
    "is_finite_number",
    "is_optional_text",
    "set_current",
]

if TYPE_CHECKING:
    from .state import SessionState
    from .statefold import StateFolder

_now = time.time

#: How many unresolved failures a snapshot lists (the newest ones).
UNRESOLVED = 6

#: How many of the latest prompts a snapshot lists after the first: the latest one and the
#: earlier ones a context's framing may show (a bound, so a snapshot costs the same in any session).
LATEST_PROMPTS = 25

#: How many unresolved failures the transcript remembers at most.
MAX_FAILING = 64

#: Kinds that never reach the model: recaps already shown, and bookkeeping.
SILENT_KINDS: frozenset[str] = frozenset({"recap", "meta"})


Listener = Callable[["Transcript", Entry], None]


class Transcript:
    """An append-only, thread-safe record of one agent session.

    Agent frameworks running in background threads may append while a recap is being built;
    every append happens under a lock and readers work on a consistent snapshot of the indexes.
    """

    def __init__(self, entries: list[Entry] | None = None) -> None:
        self._lock = threading.RLock()
        self._entries: list[Entry] = []
        self._prompts: list[int] = []
        self._summary: int | None = None
        self._turns = 0
        self._revision = 0
        # The latest failure of each cell and tool that no later run of it fixed, oldest first
        # (a dict keeps insertion order; a failure moves to the end when it happens again).
        self._failing: dict[str, int] = {}
        self._retyped: dict[str, str] = {}  # failing cells without an id: their first line
        self._calls: dict[str, str] = {}  # each tool's latest arguments
        # The session's state, folded entry by entry: each entry once, when the state is next
        # read (the first read loads the state module; %load_ext and recording never do).
        self._folder: StateFolder | None = None
        self._folded = 0
        # (kinds or None for all, listener), and the listeners of each kind worked out from
        # them: both replaced on change, so append looks up one tuple, without copying.
        self._listeners: tuple[tuple[frozenset[str] | None, Listener], ...] = ()
        self._routes: dict[str, tuple[Listener, ...]] = {}
        self.active_model: str | None = None
        """The model named by the most recent agent prompt (``provider:model``), if any."""
        for entry in entries or ():
            self.append(entry)

    # -- recording -------------------------------------------------------------------------

    def append(self, entry: Entry) -> Entry:
        """Add ``entry`` (its text bounded) and tell the listeners."""
        if len(entry.text) > MAX_ENTRY_CHARS or len(entry.error or "") > MAX_ENTRY_CHARS:
            entry = Entry(
                kind=entry.kind,
                text=clip(entry.text),
                time=entry.time,
                cell_id=entry.cell_id,
                name=entry.name,
                error=clip(entry.error) if entry.error else entry.error,
                count=entry.count,
                outcome=entry.outcome,
            )
        with self._lock:
            self._add(entry)
            listeners = self._routes.get(entry.kind, ())
        for listener in listeners:
            listener(self, entry)
        return entry

    def restore(self, entries: Iterable[Entry]) -> None:
        """Replace the contents with stored ``entries`` (a resumed session), telling no one.

        Listeners react to live activity (a prompt starts a turn); history brought back from
        disk is not activity.
        """
        with self._lock:
            self._reset()
            for entry in entries:
                self._add(entry)

    def _add(self, entry: Entry) -> None:
        """Append and keep the indexes current; the caller holds the lock."""
        index = len(self._entries)
        self._entries.append(entry)
        if entry.kind not in SILENT_KINDS:
            self._revision += 1
        if entry.kind == "user":
            self._prompts.append(index)
            if entry.name:
                self.active_model = entry.name
        elif entry.kind == "summary":
            self._summary = index
        elif entry.kind == "outcome":
            self._turns += 1
        elif entry.kind == "tool_call":
            self._calls[entry.name or ""] = entry.text
        elif entry.kind == "code" or entry.kind == "tool_result":
            if entry.kind == "code":
                key = "cell:" + (entry.cell_id or entry.text.strip())
            else:  # the same tool asked the same thing again
                key = f"tool:{entry.name}:{self._calls.get(entry.name or '', '')}"
            self._failing.pop(key, None)
            self._retyped.pop(key, None)
            if entry.error:
                self._failing[key] = index
                if entry.kind == "code" and entry.cell_id is None:
                    self._retyped[key] = first_code_line(entry.text)
                if len(self._failing) > MAX_FAILING:  # the oldest is the least likely to matter
                    oldest = next(iter(self._failing))
                    del self._failing[oldest]
                    self._retyped.pop(oldest, None)
            elif self._retyped and entry.kind == "code" and entry.cell_id is None:
                # Without cell ids (terminal IPython) a fixed cell is typed again as a new one:
                # a later cell that ran cleanly with the failed one's first line fixed it.
                for failed, line in list(self._retyped.items()):
                    if line and line in entry.text:
                        del self._retyped[failed]
                        del self._failing[failed]

    def user(self, text: str, *, model: str | None = None, cell_id: str | None = None) -> Entry:
        """Record a prompt to the agent; ``model`` (``provider:model``) becomes the active one."""
        return self.append(Entry("user", text, cell_id=cell_id, name=model))

    def assistant(self, text: str, *, cell_id: str | None = None) -> Entry:
        """Record the agent's reply text."""
        return self.append(Entry("assistant", text, cell_id=cell_id))

    def tool_call(self, name: str, args: Any = None, *, cell_id: str | None = None) -> Entry:
        """Record a tool call; ``args`` is shown on one line."""
        return self.append(Entry("tool_call", _one_line_args(args), cell_id=cell_id, name=name))

    def tool_result(
        self, name: str, result: Any = "", *, error: bool | str = False, cell_id: str | None = None
    ) -> Entry:
        """Record a tool's result; ``error`` is True or the error text when the tool failed."""
        text = result if isinstance(result, str) else repr(result)
        err = (error if isinstance(error, str) else text or "failed") if error else None
        return self.append(Entry("tool_result", text, cell_id=cell_id, name=name, error=err))

    def code(
        self,
        source: str,
        *,
        error: str | None = None,
        count: int | None = None,
        cell_id: str | None = None,
    ) -> Entry:
        """Record an ordinary cell (its source) and, when it failed, the error."""
        # Positional, with the time given: one of these is made for every cell.
        return self.append(Entry("code", source, _now(), cell_id, None, error, count))

    def summary(self, text: str) -> Entry:
        """Record a compaction or branch summary: distilled framing for later recaps."""
        return self.append(Entry("summary", text))

    def outcome(
        self,
        outcome: Outcome,
        error: str | None = None,
        *,
        cell_id: str | None = None,
        count: int | None = None,
    ) -> Entry:
        """Record how an agent turn ended: ``ok``, ``errored`` (with the error) or ``aborted``;
        ``count`` is the agent cell's ``In[n]``, kept so a resumed session can still name it."""
        return self.append(
            Entry("outcome", "", cell_id=cell_id, error=error, outcome=outcome, count=count)
        )

    def recap(self, text: str, *, model: str | None = None) -> Entry:
        """Record a recap the person was shown; never part of the next recap's context."""
        return self.append(Entry("recap", text, name=model))

    def meta(self, text: str) -> Entry:
        """Record bookkeeping that must not count as activity."""
        return self.append(Entry("meta", text))

    def event(self, text: str, *, at: float | None = None, cell_id: str | None = None) -> Entry:
        """Record something that happened around the work, not in it: the kernel restarted, a
        cell ran for minutes. Recaps see it; it starts or ends no turn."""
        return self.append(Entry("event", text, _now() if at is None else at, cell_id))

    @contextmanager
    def turn(self, prompt: str, *, model: str | None = None) -> Iterator[Transcript]:
        """Record one agent turn run through the API: the prompt now, the outcome at the end.

        ``with t.turn("fix the FK"): ...`` marks the turn as running (automatic recaps wait
        and ``%recap`` is refused meanwhile); an exception marks it errored, an interrupt
        aborted, and is re-raised.
        """
        self.user(prompt, model=model)
        try:
            yield self
        except KeyboardInterrupt:
            self.outcome("aborted")
            raise
        except BaseException as error:
            self.outcome("errored", describe_error(error))
            raise
        self.outcome("ok")

    def set_model(self, model: str | None) -> None:
        """Set the active model without a prompt (for agent frameworks using the API)."""
        self.active_model = model

    def subscribe(
        self, listener: Listener, kinds: Iterable[str] | None = None
    ) -> Callable[[], None]:
        """Call ``listener(transcript, entry)`` after each append (of ``kinds`` only, if given).

        Returns a function that unsubscribes.
        """
        item = (frozenset(kinds) if kinds is not None else None, listener)
        with self._lock:
            self._set_listeners((*self._listeners, item))

        def unsubscribe() -> None:
            with self._lock:
                self._set_listeners(tuple(i for i in self._listeners if i is not item))

        return unsubscribe

    def _set_listeners(self, listeners: tuple[tuple[frozenset[str] | None, Listener], ...]) -> None:
        self._listeners = listeners
        self._routes = {
            kind: tuple(fn for kinds, fn in listeners if kinds is None or kind in kinds)
            for kind in get_args(Kind)
        }

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __getitem__(self, index: int) -> Entry:
        return self._entries[index]

    @contextmanager
    def locked(self) -> Iterator[list[Entry]]:
        """Hold the lock and read the live entry list (no copy); do not modify it."""
        with self._lock:
            yield self._entries

    @property
    def entries(self) -> list[Entry]:
        """A copy of all entries, oldest first."""
        with self._lock:
            return list(self._entries)

    @property
    def prompt_count(self) -> int:
        """How many prompts the agent was given."""
        return len(self._prompts)

    def snapshot(self) -> Snapshot:
        """The indexes and the entry count, taken together under the lock."""
        with self._lock:
            return Snapshot(
                size=len(self._entries),
                prompts=tuple(
                    self._prompts
                    if len(self._prompts) <= LATEST_PROMPTS + 1
                    else self._prompts[:1] + self._prompts[-LATEST_PROMPTS:]
                ),
                prompt_count=len(self._prompts),
                summary=self._summary,
                unresolved=tuple(itertools.islice(reversed(self._failing.values()), UNRESOLVED))[
                    ::-1
                ],
            )

    @property
    def state(self) -> SessionState:
        """The session's state as it stands (see :mod:`.state`). The entries since the last
        read are folded in, each once: the cost follows what happened since, not the
        session's length."""
        with self._lock:
            if self._folder is None:
                from .statefold import StateFolder  # here: a recap's first read loads it

                self._folder = StateFolder()
            for entry in self._entries[self._folded :]:
                self._folder.add(entry)
            self._folded = len(self._entries)
            return self._folder.state

    @property
    def revision(self) -> int:
        """Grows with every entry a recap can see (and on restore or clear): equal revisions,
        equal context, so a context built once is reused until the next change."""
        return self._revision

    @property
    def completed_turns(self) -> int:
        """Agent turns that have an outcome recorded."""
        return self._turns

    def clear(self) -> None:
        """Forget everything (a new session)."""
        with self._lock:
            self._reset()

    def _reset(self) -> None:
        self._revision += 1  # a new story: whatever was built from the old one is stale
        self._entries.clear()
        self._prompts.clear()
        self._summary = None
        self._turns = 0
        self._failing.clear()
        self._retyped.clear()
        self._calls.clear()
        self._folder = None
        self._folded = 0
        self.active_model = None

    def to_list(self) -> list[dict[str, Any]]:
        """All entries as JSON-ready dicts."""
        return [e.to_dict() for e in self.entries]

    @classmethod
    def from_list(cls, data: list[dict[str, Any]]) -> Transcript:
        """Rebuild a transcript from :meth:`to_list` output."""
        return cls([Entry.from_dict(d) for d in data])


class Snapshot(NamedTuple):
    """Where things are in a transcript at one moment (see :meth:`Transcript.snapshot`).

    A named tuple: only a draft reads one, and a frozen dataclass would compile its methods at
    every `%load_ext` (about 0.7 ms here)."""

    size: int
    prompts: tuple[int, ...]
    """The first prompt's index followed by the last few prompts' indexes."""
    prompt_count: int
    summary: int | None
    unresolved: tuple[int, ...] = ()
    """The newest few failures that no later run of the same cell (same id, else same source)
    or tool (same name and arguments) fixed, oldest first."""


def describe_error(error: BaseException) -> str:
    """``Type: message`` on one line."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _one_line_args(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, dict):
        return ", ".join(f"{k}={v!r}" for k, v in args.items())
    return args if isinstance(args, str) else repr(args)


_current: Transcript | None = None
_current_lock = threading.Lock()


def current() -> Transcript:
    """The live transcript of this kernel's session (created on first use)."""
    global _current
    with _current_lock:
        if _current is None:
            _current = Transcript()
        return _current


def set_current(transcript: Transcript | None) -> None:
    """Replace the live transcript (used by the extension when a session is resumed)."""
    global _current
    with _current_lock:
        _current = transcript


OUTSIDE_KINDS = frozenset({"user", "assistant", "tool_call", "tool_result", "outcome", "event"})
"""Kinds of entry something outside the kernel may add (see ``wire.OutsideEntry``)."""


def add_outside_entry(transcript: Transcript, entry: object, *, cell_id: str | None = None) -> bool:
    """Append ``entry`` (an ``OutsideEntry`` as received: checked here) to ``transcript``;
    False, and nothing appended, when it is not one."""
    if not isinstance(entry, dict):
        return False
    kind, text, name, error = (entry.get(key) for key in ("kind", "text", "name", "error"))
    if kind not in OUTSIDE_KINDS or not isinstance(text, str):
        return False
    if not isinstance(name, (str, type(None))) or not isinstance(error, (str, type(None))):
        return False
    name = clip(name, 200) if name else None
    if kind in ("tool_call", "tool_result") and not name:
        return False
    if kind == "user":
        transcript.user(text, cell_id=cell_id)
    elif kind == "assistant":
        transcript.assistant(text, cell_id=cell_id)
    elif kind == "tool_call":
        transcript.tool_call(str(name), text, cell_id=cell_id)
    elif kind == "tool_result":
        transcript.tool_result(str(name), text, error=error or False, cell_id=cell_id)
    elif kind == "outcome":
        if text not in ("ok", "errored", "aborted"):
            return False
        transcript.outcome(text, error, cell_id=cell_id)  # type: ignore[arg-type]
    else:
        transcript.event(text, cell_id=cell_id)
    return True
