"""Per-project memory: short notes (facts, decisions, gotchas, commands) an agent keeps.

One JSON file per project under ``store_dir()/memory/``, named by a short sha256 of the project
directory's absolute path. Every write is a read-modify-write under an exclusive ``flock`` on a
sidecar ``.lock`` file, so kernels of one project writing at once lose nothing. A corrupt file is
moved aside (``<name>.corrupt-<timestamp>``) with a warning, never dropped silently.

Notes go into an agent's system prompt, so they are read only from a store nobody else can
write (:mod:`jupyter_recap.stores.privatefs`): an unsafe store makes the prompt helpers return
nothing, with a warning, and every write raise UnsafeStoreError; a file in it that is a link or
not the person's is ignored with a warning. Notes are redacted when written (a pasted key never
reaches the disk), and a failed write raises StoreWriteError and leaves the file as it was.
Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..debuglog import get_logger
from ..errors import InputError, UnsafeStoreError
from ..redact import Redactor
from ..textutil import shorten
from . import privatefs
from .privatefs import IgnoredFile
from .sessionfiles import ensure_dir, json_bytes, store_dir, sweep_temp_files, write_atomic

KINDS = ("fact", "decision", "gotcha", "command")
MAX_ENTRIES = 300
MAX_TEXT = 400
RECALL_LIMIT = 15
TOP_N = 20
VERIFY_LINE = (
    "Trust these notes but verify them against the code before relying on them: "
    "they were written in earlier sessions and may be out of date."
)
_TRAILING_PUNCT = ".,;:!?…"


@dataclass
class Entry:
    """One note. Times are UNIX timestamps; ``hits`` counts the recalls that returned it."""

    kind: str
    text: str
    created: float
    hits: int = 0
    last_hit: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Entry:
        """Rebuild a stored note; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        created, hits, last = data.get("created"), data.get("hits", 0), data.get("last_hit")
        if not isinstance(created, (int, float)) or not isinstance(hits, int):
            raise ValueError("bad created or hits")
        if last is not None and not isinstance(last, (int, float)):
            raise ValueError("bad last_hit")
        try:
            kind, text = check_kind(data.get("kind")), check_text(data.get("text"))
        except InputError as error:
            raise ValueError(str(error)) from None
        return cls(kind, text, float(created), hits, None if last is None else float(last))

    @property
    def line(self) -> str:
        """``[kind] text``."""
        return f"[{self.kind}] {self.text}"


def check_kind(kind: object) -> str:
    """``kind`` lower-cased if it is one of :data:`KINDS`, else InputError."""
    value = kind.strip().lower() if isinstance(kind, str) else ""
    if value not in KINDS:
        raise InputError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    return value


def check_text(text: object) -> str:
    """``text`` stripped if it is one line of 1 to :data:`MAX_TEXT` characters, else InputError."""
    if not isinstance(text, str):
        raise InputError("a note must be text")
    value = text.strip()
    if not value:
        raise InputError("a note needs some text")
    if len(value.splitlines()) > 1:
        raise InputError("a note must be one self-contained line (no newlines)")
    if len(value) > MAX_TEXT:
        raise InputError(f"a note is at most {MAX_TEXT} characters (this one has {len(value)})")
    return value


def normalise(text: str) -> str:
    """The form duplicates are compared in: casefolded, whitespace collapsed, no end punctuation."""
    return " ".join(text.casefold().split()).rstrip(_TRAILING_PUNCT + " ")


def project_dir_for(notebook_path: str | Path) -> Path:
    """The git root above ``notebook_path`` (a ``.git`` entry), else the notebook's directory."""
    path = Path(notebook_path).expanduser().resolve()
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


class MemoryStore:
    """The notes of one project; ``disabled=True`` makes every method a no-op."""

    def __init__(
        self, project_dir: str | Path, root: Path | None = None, *, disabled: bool = False
    ) -> None:
        self.project_dir = Path(project_dir).expanduser().resolve()
        self.root = root if root is not None else store_dir() / "memory"
        digest = hashlib.sha256(str(self.project_dir).encode()).hexdigest()[:16]
        self.path = self.root / f"{digest}.json"
        self.lock_path = self.root / f"{digest}.lock"
        self.disabled = disabled
        self._warnings: list[str] = []
        self._cache: tuple[tuple[int, int, int], list[Entry]] | None = None
        self._swept = False

    def take_warnings(self) -> list[str]:
        """Warnings not yet shown to anyone (a corrupt file moved aside); reading clears them."""
        taken, self._warnings = self._warnings, []
        return taken

    # -- reading ---------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every note, oldest first (copies: changing them changes nothing stored)."""
        return [dataclasses.replace(e) for e in self._current()]

    def _current(self) -> list[Entry]:
        """The stored notes, shared with the cache: read them, never change them."""
        if self.disabled or not self._trusted():
            return []
        # Writers replace the file atomically, so reading needs no lock; an unchanged file
        # (same inode, size and mtime) is not parsed again. Recaps read it on every draft.
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return []
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = self._cache
        if cached is None or cached[0] != key:
            try:
                raw = self._read()
                entries = [] if raw is None else _parse(raw)
            except ValueError:
                with self._locked():  # moving a corrupt file aside is a write
                    entries = self._load()
            cached = self._cache = (key, entries)
        return cached[1]

    def _trusted(self) -> bool:
        """False when there is no memory yet; UnsafeStoreError when someone else could have
        written it."""
        try:
            os.lstat(self.root.parent)
        except FileNotFoundError:
            return False
        privatefs.check_dir(self.root.parent)  # a refused store is said even with no notes yet
        try:
            privatefs.check_subdir(self.root)
        except FileNotFoundError:
            return False
        return True

    def _read(self) -> bytes | None:
        """The file's bytes; None when missing or not trusted (a link, someone else's)."""
        try:
            return privatefs.read_bytes(self.path)
        except IgnoredFile as why:
            self._warn(f"the project memory file was ignored: {why}")
            return None

    def _warn(self, message: str) -> None:
        if message not in self._warnings:
            get_logger().warning("memory: %s", message)
            self._warnings.append(message)

    def top(self, n: int = TOP_N) -> list[Entry]:
        """The ``n`` notes recalled most, then most recently used or written."""
        ranked = sorted(
            enumerate(self._current()),
            key=lambda p: (p[1].hits, max(p[1].created, p[1].last_hit or 0.0), p[0]),
            reverse=True,
        )
        return [dataclasses.replace(entry) for _, entry in ranked[: max(0, n)]]

    def _top_or_nothing(self) -> list[Entry]:
        """The top notes for a prompt; none (with a warning) when the store is refused, since
        an agent must never be handed notes someone else could have planted."""
        try:
            return self.top(TOP_N)
        except UnsafeStoreError as error:
            self._warn(f"project memory not used: {error}")
            return []

    def prompt_block(self) -> str:
        """The block for an agent's system prompt: the top notes and a trust-but-verify line."""
        notes = self._top_or_nothing()
        if not notes:
            return ""
        lines = ["Project memory (notes kept from earlier sessions):"]
        lines += [f"- [{e.kind}] {e.text}" for e in notes]
        return "\n".join([*lines, VERIFY_LINE])

    def context_lines(self, limit: int = 300) -> list[str]:
        """Top notes as ``[kind] text`` lines, at most ``limit`` characters in all."""
        lines: list[str] = []
        used = 0
        for entry in self._top_or_nothing():
            if used + len(entry.line) <= limit:
                lines.append(entry.line)
                used += len(entry.line)
        return lines

    # -- writing ---------------------------------------------------------------------------

    def remember(self, kind: str, text: str) -> Entry | None:
        """Store a note (None when memory is off); InputError for a bad kind or text, a
        duplicate, or a full memory."""
        if self.disabled:
            return None
        # Redacted before anything else: the note kept (and compared for duplicates) is the
        # one that reaches the disk and, later, an agent's prompt.
        entry = Entry(check_kind(kind), check_text(Redactor()(check_text(text))), time.time())
        key = normalise(entry.text)

        def add(entries: list[Entry]) -> list[Entry]:
            for old in entries:
                if normalise(old.text) == key:
                    raise InputError(f"already remembered: {old.line}")
            if len(entries) >= MAX_ENTRIES:
                raise InputError(
                    f"memory is full ({MAX_ENTRIES} notes): run %recap compact-memory "
                    "or %forget some notes first"
                )
            return [*entries, entry]

        self.modify(add)
        return entry

    def recall(self, terms: str) -> list[Entry]:
        """The newest :data:`RECALL_LIMIT` notes matching every term; their hits are counted."""
        words = terms.casefold().split()
        if self.disabled:
            return []
        if not words:
            raise InputError("recall needs at least one search term")
        found: list[Entry] = []

        def count(entries: list[Entry]) -> list[Entry] | None:
            matches = [
                (i, e)
                for i, e in enumerate(entries)
                if all(w in f"{e.kind} {e.text}".casefold() for w in words)
            ]
            matches.sort(key=lambda p: (p[1].created, p[0]), reverse=True)
            found.extend(e for _, e in matches[:RECALL_LIMIT])
            now = time.time()
            for entry in found:
                entry.hits += 1
                entry.last_hit = now
            return entries if found else None

        self.modify(count)
        return found

    def forget(self, text: str, *, all_matches: bool = False) -> list[Entry]:
        """Remove the note containing ``text``; several match → InputError unless all_matches."""
        if self.disabled:
            return []
        needle = " ".join(text.casefold().split())
        if not needle:
            raise InputError("forget needs some text to match")
        gone: list[Entry] = []

        def remove(entries: list[Entry]) -> list[Entry] | None:
            gone.extend(e for e in entries if needle in " ".join(e.text.casefold().split()))
            if len(gone) > 1 and not all_matches:
                shown = "; ".join(shorten(e.line, 70) for e in gone[:3])
                more = f"; and {len(gone) - 3} more" if len(gone) > 3 else ""
                raise InputError(
                    f"{len(gone)} notes match {text.strip()!r} ({shown}{more}): "
                    "be more specific, or forget them all"
                )
            return [e for e in entries if not any(e is g for g in gone)] if gone else None

        self.modify(remove)
        return gone

    def modify(self, change: Callable[[list[Entry]], list[Entry] | None]) -> None:
        """Read-modify-write under the lock: ``change`` gets the stored notes and returns the
        new list to store, or None to leave the file as it is. What it raises propagates."""
        if self.disabled:
            return
        with self._locked():
            new = change(self._load())
            if new is not None:
                self._save(new)

    # -- files -----------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the project's lock (UnsafeStoreError / StoreWriteError when it cannot be)."""
        ensure_dir(self.root.parent)
        privatefs.ensure_subdir(self.root)
        with privatefs.locked(self.lock_path, what="the project memory"):
            yield

    def _load(self) -> list[Entry]:
        """The stored notes (call under the lock); a corrupt file is moved aside with a warning."""
        raw = self._read()
        if raw is None:
            return []
        try:
            return _parse(raw)
        except ValueError as error:
            self._warnings.append(
                privatefs.move_aside(
                    self.path,
                    error,
                    what="the project memory file",
                    fresh="a fresh memory started",
                    log_as="memory",
                )
            )
            return []

    def _save(self, entries: list[Entry]) -> None:
        clean = Redactor()  # notes written before redaction existed are redacted on the way
        stored = [dataclasses.replace(e, text=clean(e.text)) for e in entries]
        data = {
            "version": 1,
            "project": str(self.project_dir),
            "entries": [e.to_dict() for e in stored],
        }
        if not self._swept:  # once per store: leftovers of writers killed mid-write
            self._swept = True
            sweep_temp_files(self.root)
        write_atomic(self.path, json_bytes(data, indent=1))
        # Coarse file times and reused inodes could make the next stat look unchanged.
        self._cache = None


def _parse(raw: bytes) -> list[Entry]:
    """The notes of a memory file's bytes; ValueError when it is not one."""
    try:
        data = json.loads(raw)
    except RecursionError:  # absurd nesting: corrupt, like any other file that is not ours
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ValueError("not a memory file")
    return [Entry.from_dict(item) for item in data["entries"]]
