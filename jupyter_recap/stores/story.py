"""A notebook's story: its newest stored session, framed by earlier ones when that one is short.

A kernel continues its notebook's newest session, so a notebook usually has one session that
grows across restarts. Another begins when a second kernel runs the notebook while the first
holds that session: a quick side run in a bare kernel, a second tab. Its few throwaway prompts
become the newest session, and told alone, the recap after the next restart (or ``jupyter recap
NOTEBOOK``) would be about them rather than the notebook's work. So a notebook's recap tells
its story:

- the newest session with readable prompts always ends it: its latest prompt is the recap's
  recent detail, and a kernel continues it;
- when that session is short (:func:`is_short`: too little said to tell what the notebook is
  for), the notebook's latest substantial session before it frames it, with the short sessions
  between the two (the nearest ones, up to :data:`MAX_SESSIONS` sessions in all);
- when no earlier session is substantial, the newest is the story alone: a few short sessions
  together say no more than the latest of them;
- a kernel that continues a session with a frame records the frame in the session's header
  (``framed_by``), and that frame is the story's from then on: once the continued session has
  grown, the side run's first prompt must not become the notebook's task;
- a session forked from one in the story, or one that a story's session was forked from, holds
  the same entries: it is left out.

One session alone is always a choice: ``jupyter recap ID``, ``jupyter recap NOTEBOOK --session
ID``, ``%recap resume ID``. Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import RecapError
from ..record.transcript import Entry, Transcript

if TYPE_CHECKING:
    from .sessionfiles import SessionRecord
    from .sessions import SessionStore

__all__ = [
    "MAX_SESSIONS",
    "STORY_CHARS",
    "STORY_TURNS",
    "Story",
    "dialog_size",
    "frame",
    "is_short",
    "notebook_story",
    "sources_line",
]

STORY_TURNS = 4
"""A session with fewer prompts than this is short: a quick try of a cell or a model, not the
notebook's work (a recap's task and next step need a few rounds to be worth telling alone)."""

STORY_CHARS = 500
"""A session whose prompts and replies hold fewer characters than this is short however many
prompts it has ("hi", "again", "test"): it takes about a paragraph of dialog, a few one-line
asks with one-line answers, to say what a piece of work is about."""

MAX_SESSIONS = 6
"""The most sessions a story draws from: the newest, the substantial one, the short ones nearest
the newest between them. The context a model sees is capped anyway; this bounds the reading."""

MAX_PROBES = 8
"""Sessions read in full while looking back for a substantial one (a header alone tells a session
with few prompts, not one with many tiny ones)."""

Loader = Callable[[str], "tuple[SessionRecord, Transcript]"]
"""Reads a stored session by id (:meth:`SessionStore.load`); RecapError or OSError if it cannot."""

Skipped = Callable[[str, str], None]
"""Told of a session left out of a story: its id and why (unreadable, no readable prompts)."""


def dialog_size(entries: Iterable[Entry]) -> tuple[int, int]:
    """The prompts of ``entries`` and the characters of their prompts and replies."""
    prompts = chars = 0
    for entry in entries:
        if entry.kind == "user":
            prompts += 1
            chars += len(entry.text)
        elif entry.kind == "assistant":
            chars += len(entry.text)
    return prompts, chars


def is_short(entries: Iterable[Entry]) -> bool:
    """Whether a session of ``entries`` says too little to be a notebook's story alone: fewer
    than :data:`STORY_TURNS` prompts, or fewer than :data:`STORY_CHARS` characters of prompts
    and replies. (Tool traffic is not counted: one tool can return pages in a throwaway run.)"""
    prompts = chars = 0
    for entry in entries:  # stops as soon as it has seen enough: a long session costs no more
        if entry.kind == "user":
            prompts += 1
        elif entry.kind != "assistant":
            continue
        chars += len(entry.text)
        if prompts >= STORY_TURNS and chars >= STORY_CHARS:
            return False
    return True


class Story:
    """The sessions a notebook's recap draws from (oldest first, the newest last) and their
    entries in that order. ``history``: how many of the entries belong to the earlier sessions,
    which frame the newest (a kernel continuing the newest never writes them into it)."""

    __slots__ = ("entries", "history", "sessions")

    def __init__(self, parts: Sequence[tuple[SessionRecord, Sequence[Entry]]]) -> None:
        self.sessions: tuple[SessionRecord, ...] = tuple(record for record, _ in parts)
        self.entries: list[Entry] = [entry for _, entries in parts for entry in entries]
        self.history = len(self.entries) - len(parts[-1][1])

    @property
    def newest(self) -> SessionRecord:
        """The session that ends the story: the one a kernel continues."""
        return self.sessions[-1]

    @property
    def earlier(self) -> tuple[SessionRecord, ...]:
        """The sessions framing the newest, oldest first (none when it stands alone)."""
        return self.sessions[:-1]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(record.id for record in self.sessions)

    @property
    def tasks(self) -> list[Any]:
        """The task list of the story: the newest session's, or, when that one kept none (a side
        run never writes one), the latest an earlier session kept."""
        return next((list(r.tasks) for r in reversed(self.sessions) if r.tasks), [])

    def transcript(self) -> Transcript:
        """A transcript of the whole story (telling no listener)."""
        transcript = Transcript()
        transcript.restore(self.entries)
        return transcript


def frame(
    newest: SessionRecord,
    entries: Sequence[Entry],
    earlier: Callable[[], Iterable[SessionRecord]],
    load: Loader,
    skipped: Skipped | None = None,
) -> Story:
    """The story that ends with ``newest`` (loaded, with ``entries``).

    ``earlier()`` gives the notebook's stored sessions, newest first (``newest`` among them or
    not); it is called only when the newest is short and records no frame of its own. ``load``
    reads a session; sessions that cannot be read, or hold no prompt, are left out and passed
    to ``skipped``.
    """
    entries = list(entries)
    tied = _ties(newest)
    if newest.framed_by:
        parts = _load_each(newest.framed_by[-(MAX_SESSIONS - 1) :], load, skipped, tied)
        if parts:
            return Story([*parts, (newest, entries)])
    if not is_short(entries):
        return Story([(newest, entries)])
    between: list[tuple[SessionRecord, list[Entry] | None]] = []  # short ones, newest first
    found: tuple[SessionRecord, list[Entry]] | None = None
    probes = 0
    for record in earlier():
        if _is_tied(record, tied):
            continue
        if record.turns < STORY_TURNS:  # short by its header: read only if it is kept
            between.append((record, None))
            continue
        if probes >= MAX_PROBES:
            break
        probes += 1
        loaded = _load(record.id, load, skipped)
        if loaded is None:
            continue
        if not is_short(loaded[1]):
            found = loaded
            break
        between.append(loaded)
    if found is None:
        return Story([(newest, entries)])
    tied |= _ties(found[0])
    room = MAX_SESSIONS - 2
    kept: list[tuple[SessionRecord, list[Entry]]] = []
    for record, read in between:
        if len(kept) >= room:
            break
        if _is_tied(record, tied):
            continue
        part = (record, read) if read is not None else _load(record.id, load, skipped)
        if part is not None:
            kept.append(part)
            tied |= _ties(part[0])
    room -= len(kept)
    framing = found[0].framed_by[-room:] if room > 0 and found[0].framed_by else []
    before = _load_each(framing, load, skipped, tied)
    return Story([*before, found, *reversed(kept), (newest, entries)])


def notebook_story(
    store: SessionStore, notebook: str, skipped: Skipped | None = None
) -> Story | None:
    """The story of ``notebook`` (its path as the kernel stores it), or None when no stored
    session of it has prompts. RecapError when the newest cannot be read."""
    newest = store.latest_for(notebook)
    if newest is None:
        return None
    record, transcript = store.load(newest.id)
    return frame(record, transcript.entries, lambda: store.records(notebook), store.load, skipped)


def sources_line(story: Story, known_ids: Iterable[str] = ()) -> str:
    """``from sessions 0192a9f0 and 0192ab12``: the story's sessions, oldest first, by the
    prefixes a listing shows (unique among ``known_ids`` too, so each can be passed back)."""
    from .listings import unique_prefixes  # a listing's module: not loaded with the kernel

    ids = story.ids
    prefixes = unique_prefixes(ids, known_ids)
    names = [prefixes[i] for i in ids]
    if len(names) == 1:
        return f"from session {names[0]}"
    return f"from sessions {', '.join(names[:-1])} and {names[-1]}"


def _ties(record: SessionRecord) -> set[str]:
    """The ids whose entries ``record`` holds or shares: its own and its parent's."""
    return {record.id, record.parent} if record.parent else {record.id}


def _is_tied(record: SessionRecord, tied: set[str]) -> bool:
    """Whether ``record`` is already in the story, or forked from or into one that is."""
    return record.id in tied or (record.parent is not None and record.parent in tied)


def _load(
    session_id: str, load: Loader, skipped: Skipped | None
) -> tuple[SessionRecord, list[Entry]] | None:
    try:
        record, transcript = load(session_id)
    except (RecapError, OSError) as error:
        if skipped is not None:
            reason = " ".join(str(error).split()) or type(error).__name__
            skipped(session_id, f"cannot be read ({reason})")
        return None
    if transcript.prompt_count == 0:
        if skipped is not None:
            skipped(session_id, "has no readable turns")
        return None
    return record, transcript.entries


def _load_each(
    ids: Sequence[str], load: Loader, skipped: Skipped | None, tied: set[str]
) -> list[tuple[SessionRecord, list[Entry]]]:
    """The readable sessions of ``ids``, in their order, that the story does not hold yet."""
    parts = []
    for session_id in ids:
        if session_id in tied:
            continue
        part = _load(session_id, load, skipped)
        if part is not None and not _is_tied(part[0], tied):
            parts.append(part)
            tied |= _ties(part[0])
    return parts
