"""Which story ``jupyter recap NOTEBOOK.ipynb`` tells: the notebook's stored sessions or its file.

The kernel stores every agent session it records, including the ones a saved notebook cannot
show: an agent run from an ordinary cell (openai-agents, pydantic-ai, … captured by
:mod:`jupyter_recap.capture`), its tool calls, the task list. So the stored story is the
better source whenever there is one; the file is read when there is none, when the store cannot
be trusted or read, or when the file holds agent turns newer than anything stored (the
notebook was run where the extension was not loaded, or on another machine).

The stored story is the notebook's newest session, framed by its earlier sessions when that one
is short (:mod:`jupyter_recap.stores.story`: a quick side run does not replace the notebook's
work); stderr names the sessions it drew from. ``--session ID`` picks exactly one of them.

The kernel stores the notebook's absolute path as the server hands it over
(``JPY_SESSION_NAME``: the server's root directory joined with the notebook's path, links not
resolved); the command gets a path relative to wherever it runs, often reached through another
link. A stored session belongs to the notebook when both paths name the same file.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import RecapError, StoreError

if TYPE_CHECKING:
    from ..record.transcript import Entry, Transcript
    from ..stores.sessionfiles import SessionRecord
    from ..stores.sessions import SessionStore


@dataclass(frozen=True)
class Choice:
    """The stored story to recap (None: recap the file), and the lines to tell the person on
    stderr about it (where the recap comes from, or why the store was not used).

    ``record`` is the story's newest session, with the story's task list; ``transcript`` holds
    every session of it, oldest first; ``sessions`` are their ids in that order."""

    record: SessionRecord | None = None
    transcript: Transcript | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()


def notebook_matcher(path: str) -> Callable[[str | None], bool]:
    """A test of whether a stored notebook path names the file at ``path``.

    The same file can be spelt many ways: relative or absolute, through a linked directory
    (the server's root, or the shell's working directory, is often a link), or through a link
    to the notebook itself. Exact spellings are compared first; a stored path that differs is
    resolved (``realpath``) and compared with the resolved ``path``, so a notebook reached
    through links on either side is still found.
    """
    absolute = os.path.normpath(os.path.abspath(path))
    real = os.path.realpath(path)
    spellings = {absolute, real}
    # The shell's logical working directory (with its links) is how the person sees the path.
    # Only when it is where this process runs: a parent can hand down a stale one.
    logical = os.environ.get("PWD")
    if logical and os.path.isabs(logical) and not os.path.isabs(path) and _is_cwd(logical):
        spellings.add(os.path.normpath(os.path.join(logical, path)))

    def matches(stored: str | None) -> bool:
        if not stored:
            return False
        if stored in spellings:
            return True
        try:
            return os.path.realpath(stored) == real
        except (OSError, ValueError):  # a path that cannot be resolved (a loop, a NUL)
            return False

    return matches


def _is_cwd(directory: str) -> bool:
    try:
        return os.path.samefile(directory, os.curdir)
    except (OSError, ValueError):
        return False


def stored_sessions(store: SessionStore, path: str) -> list[SessionRecord]:
    """The stored sessions of the notebook at ``path``, newest first (headers only).

    UnsafeStoreError when the store could have been written by someone else; OSError when it
    cannot be listed.
    """
    matches = notebook_matcher(path)
    return [r for r in store.records() if matches(r.notebook)]


def choose(
    path: str,
    from_file: Transcript,
    store: SessionStore | None = None,
    *,
    session: str | None = None,
) -> Choice:
    """Whether to recap the stored story of ``path`` or the file (read as ``from_file``).
    Never raises for a store that is missing, unsafe or unreadable: that is a warning, and the
    file is recapped.

    ``session`` (an id or unique prefix, ``--session``) picks exactly that stored session of
    the notebook instead: StoreError when there is no such session, or it is another
    notebook's (bad usage: the person named it).
    """
    from ..stores.sessions import SessionStore
    from ..stores.story import frame

    store = store or SessionStore()
    if session is not None:
        return _chosen(store, path, session)
    warnings: list[str] = []
    try:
        records = stored_sessions(store, path)
    except (RecapError, OSError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        return Choice(warnings=(f"the session store was not read ({reason}); reading {path}",))

    def skipped(session_id: str, why: str) -> None:
        warnings.append(f"stored session {session_id} {why}")

    for index, record in enumerate(records):
        try:
            loaded, transcript = store.load(record.id)
        except (RecapError, OSError) as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            skipped(record.id, f"cannot be read ({reason})")
            continue
        if transcript.prompt_count == 0:
            # A header whose entries were lost: an older session of the notebook may hold its
            # story, so the search goes on rather than giving up on the store.
            skipped(record.id, "has no readable turns")
            continue
        if _file_is_newer(path, from_file, loaded, transcript):
            summary = _summary(loaded, _short_id(store, loaded.id))
            return Choice(
                notes=(
                    f"reading {path}: it holds agent turns newer than its stored session {summary}",
                ),
                warnings=_one_warning(warnings),
            )
        older = records[index + 1 :]
        story = frame(loaded, transcript.entries, older.__iter__, store.load, skipped)
        newest = dataclasses.replace(story.newest, tasks=story.tasks)
        return Choice(
            newest,
            story.transcript() if story.earlier else transcript,
            notes=(_from_sessions(store, story.sessions),),
            warnings=_one_warning(warnings),
            sessions=story.ids,
        )
    return Choice(warnings=_one_warning(warnings, f"; reading {path}"))


def _chosen(store: SessionStore, path: str, id_or_prefix: str) -> Choice:
    """``--session ID``: exactly that stored session of the notebook at ``path``."""
    record, transcript = store.load(id_or_prefix)  # StoreError: unknown or ambiguous
    if not notebook_matcher(path)(record.notebook):
        of = f"of {os.path.basename(record.notebook)}" if record.notebook else "of no notebook"
        raise StoreError(f"session {record.id} is not one of {path}'s sessions (it is {of})")
    return Choice(
        record,
        transcript,
        notes=(_from_sessions(store, (record,)),),
        sessions=(record.id,),
    )


def _from_sessions(store: SessionStore, sessions: Sequence[SessionRecord]) -> str:
    """The stderr line naming the stored sessions a recap draws from (oldest first):
    ``from the stored session 0199a1b2 of 14:02, 12 turns``, or for a framed story
    ``from the stored sessions 0199a0f3 (13:10, 5 turns) and 0199a1b2 (14:02, 3 turns); the
    newest is framed by the earlier``."""
    shown = _short_ids(store, [record.id for record in sessions])
    if len(sessions) == 1:
        (record,) = sessions
        return f"from the stored session {_summary(record, shown[record.id])}"
    parts = [f"{shown[r.id]} ({format_time(r.updated)}, {_turns(r.turns)})" for r in sessions]
    listed = f"{', '.join(parts[:-1])} and {parts[-1]}"
    earlier = "one" if len(sessions) == 2 else "ones"
    return f"from the stored sessions {listed}; the newest is framed by the earlier {earlier}"


def _one_warning(warnings: list[str], then: str = "") -> tuple[str, ...]:
    """At most one warning line, however many sessions were unreadable: the first reason."""
    if not warnings:
        return ()
    more = f" (and {len(warnings) - 1} more unreadable)" if len(warnings) > 1 else ""
    return (f"{warnings[0]}{more}{then}",)


def _short_id(store: SessionStore, session_id: str) -> str:
    """The id as a listing shows it: short, yet enough for ``jupyter recap ID``."""
    return _short_ids(store, [session_id])[session_id]


def _short_ids(store: SessionStore, ids: Sequence[str]) -> dict[str, str]:
    """Each of ``ids`` as a listing shows it: short, yet enough for ``jupyter recap ID``."""
    from ..stores.listings import unique_prefixes
    from ..stores.sessionfiles import session_ids

    try:
        others = session_ids(store.root)
    except OSError:
        return {i: i for i in ids}
    return unique_prefixes(ids, others)


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _summary(record: SessionRecord, shown_id: str) -> str:
    """``0199a1b2 of 14:02, 12 turns``: the id, when it was last written, its prompts."""
    return f"{shown_id} of {format_time(record.updated)}, {_turns(record.turns)}"


def format_time(when: float, now: float | None = None) -> str:
    """``14:02`` today, ``2025-03-03 14:02`` on another day (local time)."""
    then = time.localtime(when)
    today = time.localtime(time.time() if now is None else now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M", then)
    return time.strftime("%Y-%m-%d %H:%M", then)


def _file_is_newer(
    path: str, from_file: Transcript, record: SessionRecord, stored: Transcript
) -> bool:
    """Whether the file holds agent turns more recent than the stored session.

    The rule: the stored session wins unless the file's latest agent prompt is missing from
    it AND the file was saved after the session's last write. A prompt the session holds means
    the kernel recorded everything the file shows (and more: tool calls, plain-cell agents,
    tasks). A prompt it lacks was run where the extension did not record it; the file's
    modification time is then the only clock the file has (cells carry no run times unless
    the frontend records them), and it bounds that turn from above: saved before the
    session's last write, the session is the newer story; saved after, the file is.
    """
    prompts = [e for e in from_file if e.kind == "user"]
    if not prompts:
        return False  # plain cells only: nothing in the file can be newer agent work
    if _holds(stored, prompts[-1]):
        return False
    try:
        saved = os.stat(path).st_mtime
    except OSError:
        return False
    return saved > record.updated


def _holds(stored: Transcript, prompt: Entry) -> bool:
    """Whether ``stored`` recorded ``prompt``: the same cell, or the same words.

    The kernel redacted what it stored, so the file's prompt is redacted the same way before
    the words are compared, and the spacing is ignored (the file keeps the cell's source).
    """
    from ..redact import Redactor

    words = " ".join(Redactor()(prompt.text).split())
    for entry in stored:
        if entry.kind != "user":
            continue
        if prompt.cell_id is not None and entry.cell_id == prompt.cell_id:
            return True
        if " ".join(entry.text.split()) == words:
            return True
    return False
