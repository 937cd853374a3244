"""The session store's format and files: records, ids, the private directory, safe writes.

Each session is two files in one flat directory, both private to the user (0600, directory 0700):

- ``<id>.json``: a small header (the :class:`~jupyter_recap.stores.sessions.SessionRecord` fields),
  replaced whole on each flush through a temporary file, ``fsync`` and ``os.replace``;
- ``<id>.jsonl``: the transcript, one entry per line, only ever appended to.

A crash in the middle of a write leaves the previous header and, at worst, a torn last line in
the transcript, which the reader skips; a write that fails (a full disk) is cut back to the last
whole line, so a retry never duplicates entries. Every field read back is checked: a record
edited by hand or by someone else cannot crash a reader. Which files are trusted at all is
:mod:`jupyter_recap.stores.privatefs`'s rule. Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import functools
import json
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ..debuglog import get_logger
from ..errors import StoreError, StoreWriteError
from ..record.entry import is_finite_number, is_optional_text
from ..textutil import SHOWN_CHARS, shorten
from . import privatefs
from .privatefs import IgnoredFile

HOME_ENV = "JUPYTER_RECAP_HOME"
HEADER_SUFFIX = ".json"
ENTRIES_SUFFIX = ".jsonl"
TITLE_CHARS = 80


@functools.cache
def _id_re() -> re.Pattern[str]:
    return re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@functools.cache
def _prefix_re() -> re.Pattern[str]:
    return re.compile(r"^[0-9a-f-]{1,36}$")


def store_dir() -> Path:
    """``$JUPYTER_RECAP_HOME``, or ``jupyter_data_dir()/recap`` (not created here)."""
    configured = os.environ.get(HOME_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "recap"


def ensure_dir(path: Path) -> Path:
    """Create the store (0700) if missing, then check that only the person can write it.

    UnsafeStoreError when someone else could (see :mod:`jupyter_recap.stores.privatefs`); an
    existing directory's mode is never changed.
    """
    return privatefs.ensure_dir(path)


# -- records ---------------------------------------------------------------------------------


@dataclass
class SessionRecord:
    """A session's header: everything but the transcript entries. Times are UNIX timestamps."""

    id: str
    created: float
    updated: float
    notebook: str | None = None
    cwd: str = ""
    kernel_id: str | None = None
    model: str | None = None
    """``provider:model`` of the latest prompt."""
    title: str = ""
    """What the session is about, on one line, at most :data:`TITLE_CHARS` characters: the
    first prompt until a recap is written, then taken from the latest recap's first sentence
    (:func:`~jupyter_recap.stores.titles.title_from_recap`)."""
    first_prompt: str = ""
    """The first prompt on one line, at most :data:`TITLE_CHARS` characters (a record of an
    older version, which has none, reads its ``title`` here)."""
    turns: int = 0
    """Prompts given to the agent."""
    entries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    recaps: int = 0
    last_recap: str | None = None
    """The latest recap the person was shown: what they were told, for listings and agents."""
    tasks: list[Any] = field(default_factory=list)
    parent: str | None = None
    """The session this one continues, when it was resumed while another kernel held it."""
    framed_by: list[str] = field(default_factory=list)
    """The earlier sessions of the notebook that frame this one in its story, oldest first: a
    kernel continued this session with their entries before its own (see
    :mod:`jupyter_recap.stores.story`). Their entries are never written into this record."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> SessionRecord:
        """Rebuild a header read from disk; ValueError when it cannot be one.

        The id and the times must be sound. Any other field of the wrong type (a hand edit, an
        older or newer writer) falls back to its default with a warning: the counters are
        recounted from the entries when the session is loaded, so nothing is lost.
        """
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        session_id = data.get("id")
        if not isinstance(session_id, str) or not is_session_id(session_id):
            raise ValueError("no valid session id")
        created, updated = data.get("created"), data.get("updated")
        if not (_is_time(created) and _is_time(updated)):
            raise ValueError("bad created or updated time")
        values: dict[str, Any] = {}
        bad: list[str] = []
        for name, valid in _FIELD_CHECKS.items():
            if name not in data:
                continue
            if valid(data[name]):
                values[name] = data[name]
            else:
                bad.append(name)
        if bad:
            get_logger().warning(
                "sessions: record %s: ignoring malformed %s", session_id, ", ".join(sorted(bad))
            )
        # Older versions titled a session by its first prompt and kept nothing else.
        values.setdefault("first_prompt", values.get("title", ""))
        return cls(id=session_id, created=float(created), updated=float(updated), **values)


def _is_time(value: object) -> TypeGuard[float]:
    return is_finite_number(value) and value >= 0


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_ids(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) and is_session_id(i) for i in value)


# Every header field but id and the times, with what a sound value looks like.
_FIELD_CHECKS = {
    "notebook": is_optional_text,
    "cwd": _is_text,
    "kernel_id": is_optional_text,
    "model": is_optional_text,
    "title": _is_text,
    "first_prompt": _is_text,
    "turns": _is_count,
    "entries": _is_count,
    "tokens_in": _is_count,
    "tokens_out": _is_count,
    "recaps": _is_count,
    "last_recap": is_optional_text,
    "tasks": lambda value: isinstance(value, list),
    "parent": is_optional_text,
    "framed_by": _is_ids,
}


def shorten_title(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    return shorten(text, limit)


def check_path(path: str) -> str:
    """``path`` normalised for comparison; StoreError if it cannot be a notebook path."""
    if "\x00" in path or len(path) > 4096:
        raise StoreError("not a notebook path")
    return os.path.normpath(path) if path else path


# -- ids ---------------------------------------------------------------------------------------

_uuid_lock = threading.Lock()
_last_ms = 0
_last_seq = 0


def uuid7() -> str:
    """A new UUIDv7: 48-bit millisecond timestamp, version 7, 12-bit sequence, 62 random bits.

    Ids made in one process sort strictly by creation: within one millisecond the 12-bit
    ``rand_a`` field counts up from a random start (borrowing the next millisecond on overflow).
    """
    global _last_ms, _last_seq
    with _uuid_lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            seq = secrets.randbits(11)  # leaves room to count up within the millisecond
        else:
            ms, seq = _last_ms, _last_seq + 1
            if seq > 0xFFF:
                ms, seq = ms + 1, 0
        _last_ms, _last_seq = ms, seq
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62
    value |= secrets.randbits(62)
    return str(uuid.UUID(int=value))


def is_session_id(text: str) -> bool:
    """Whether ``text`` is a complete session id as this store writes them."""
    return bool(_id_re().match(text))


def check_prefix(text: str) -> str:
    """``text`` lower-cased if it can be an id prefix (only hex digits and dashes), else raise."""
    prefix = text.strip().lower()
    if not _prefix_re().match(prefix):
        shown = shorten(text, SHOWN_CHARS)
        raise StoreError(f"not a session id: {shown!r} (expected hex digits and dashes)")
    return prefix


def session_ids(root: Path) -> list[str]:
    """The ids of the sessions with a header in ``root``, ignoring every other file."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    cut = -len(HEADER_SUFFIX)
    return [n[:cut] for n in names if n.endswith(HEADER_SUFFIX) and is_session_id(n[:cut])]


# -- writing ---------------------------------------------------------------------------------


def json_bytes(value: Any, *, indent: int | None = None) -> bytes:
    """``value`` as UTF-8 JSON that always encodes and reads back exactly.

    Text from a notebook can hold lone surrogates (bytes decoded with ``surrogateescape``),
    which UTF-8 cannot encode; they are written as ``\\udcxx`` escapes, which JSON reads back
    as the same characters, instead of failing every write of the session from then on. A
    number that is not finite (a tool's argument) is written ``null``: strict JSON, which any
    reader parses.
    """
    from ..wire import finite  # the protocol's shapes load with the first write

    text = json.dumps(finite(value), ensure_ascii=False, indent=indent, allow_nan=False)
    return text.encode("utf-8", "backslashreplace")


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a new 0600 temp file, fsync, ``os.replace``.

    The temporary file is created exclusively and without following links, and the replace
    swaps the directory entry (a link at ``path`` is replaced, never written through).
    StoreWriteError when it cannot be done; ``path`` is then as it was.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = _create_temp(tmp)
    except OSError as error:
        raise _write_error(path, error) from None
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException as error:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise _write_error(path, error) from None
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, error) from None


def _create_temp(tmp: Path) -> int:
    try:
        return privatefs.create_exclusive(tmp)
    except FileExistsError:
        tmp.unlink()  # our own leftover (same pid and thread, killed mid-write): take its place
        return privatefs.create_exclusive(tmp)


#: Failures that go away by themselves or by the person's hand (space freed, a mount made
#: writable): what is pending is kept and retried. Any other failure (a link, a directory or
#: someone else's file in the record's place) means the record cannot be continued at all.
_PASSING = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EIO})


def is_passing(error: StoreWriteError) -> bool:
    """Whether a failed write may succeed later without the record being replaced."""
    return error.errno in _PASSING


def _write_error(path: Path, error: OSError) -> StoreWriteError:
    """One line for a failed write: which file, and the system's reason."""
    reason = error.strerror or str(error)
    if error.errno == errno.ENOSPC:
        reason = "the disk is full"
    elif error.errno == errno.EISDIR:
        reason = "a directory is in its place"
    elif error.errno == errno.ELOOP:
        reason = "it is a symbolic link, which the store never follows"
    failure = StoreWriteError(f"could not write {path.name} in {path.parent}: {reason}")
    failure.errno = error.errno
    return failure


#: A write's temporary file this old was left by a process killed mid-write.
STALE_TEMP_SECONDS = 600.0


def sweep_temp_files(root: Path, older_than: float = STALE_TEMP_SECONDS) -> int:
    """Remove the temporary files of atomic writes killed midway; returns how many went.

    Only hidden ``*.tmp`` files older than ``older_than`` seconds are touched: a live write
    takes milliseconds, so nothing in flight is removed.
    """
    cutoff = time.time() - older_than
    removed = 0
    try:
        scan = os.scandir(root)
    except FileNotFoundError:
        return 0
    with scan:
        for item in scan:
            if not (item.name.startswith(".") and item.name.endswith(".tmp")):
                continue
            try:
                if item.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(item.path)
                    removed += 1
            except OSError:
                continue
    return removed


class SessionInUse(StoreError):
    """Another live kernel holds this session (its transcript file is locked)."""


class AppendFile:
    """An append-only lines file that one process owns while it is open.

    Opening takes an exclusive, non-blocking ``flock`` on the file: the kernel that writes a
    session holds it until it closes (or dies — the system releases it), and a second kernel
    on the same notebook is refused (:class:`SessionInUse`) instead of interleaving its lines.
    The first write after opening mends a torn last line; a write that fails part-way is cut
    back to the last whole line, so the retry writes the missing tail exactly once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fd = privatefs.open_for_append(path)
        except OSError as error:
            raise _write_error(path, error) from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = -1
            raise SessionInUse(f"session {path.stem} is open in another kernel") from None
        self._mend = _ends_torn(self._fd)

    def append(self, lines: list[bytes]) -> None:
        """Append ``lines`` (each without its newline) in one write; StoreWriteError if not.

        No fsync: a killed kernel loses nothing it wrote (the data is the OS's by then), and a
        power cut can only cost the newest lines, which loading tolerates (it recounts entries
        from the file). The header's atomic replace is the write that is synced.
        """
        data = b"".join(line + b"\n" for line in lines)
        if self._mend:
            data = b"\n" + data
        good = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, data)
        except OSError as error:
            # Part of it may be on disk (a full disk takes what fits): cut back to where this
            # write began, so the file holds whole lines only and the retry duplicates nothing.
            try:
                os.ftruncate(self._fd, good)
            except OSError:
                self._mend = True  # could not cut: at least start the retry on a new line
                get_logger().warning(
                    "sessions: could not cut %s back after a failed write", self.path.name
                )
            raise _write_error(self.path, error) from None
        self._mend = False

    def replaced(self) -> bool:
        """Whether ``path`` no longer names the open file (deleted, or something else put in
        its place): appending would then write into a file nobody can find."""
        try:
            now = os.lstat(self.path)
        except FileNotFoundError:
            return True
        mine = os.fstat(self._fd)
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def close(self) -> None:
        """Close the file, releasing the session (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- reading -----------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    """A trusted file's bytes; None (logged) when missing, not ours, a link or unreadable."""
    try:
        return privatefs.read_bytes(path)
    except IgnoredFile:
        return None
    except OSError as error:
        get_logger().warning("sessions: cannot read %s: %s", path.name, error.strerror or error)
        return None


def _loads(raw: bytes) -> Any:
    """JSON, with absurd nesting counted as malformed (it raises RecursionError otherwise)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_header(path: Path) -> dict[str, Any] | None:
    """The header at ``path``, or None (with a warning when it exists but is unreadable)."""
    raw = _read(path)
    if raw is None:
        return None
    try:
        data = _loads(raw)
    except ValueError as error:
        get_logger().warning("sessions: skipping unreadable record %s: %s", path.name, error)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        get_logger().warning("sessions: skipping malformed record %s", path.name)
        return None
    return data


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a lines file; torn or corrupt lines are skipped with a warning."""
    raw = _read(path)
    if raw is None:
        return
    bad = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            item = _loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(item, dict):
            yield item
        else:
            bad += 1
    if bad:
        get_logger().warning("sessions: skipped %d unreadable line(s) in %s", bad, path.name)
