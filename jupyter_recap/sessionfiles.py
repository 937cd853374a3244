"""The session store's format and files: records, ids, the private directory, safe writes.

Each session is two files in one flat directory, both private to the user (0600, directory 0700):

- ``<id>.json``: a small header (the :class:`~jupyter_recap.sessions.SessionRecord` fields),
  replaced whole on each flush through a temporary file, ``fsync`` and ``os.replace``;
- ``<id>.jsonl``: the transcript, one entry per line, only ever appended to.

A crash in the middle of a write leaves the previous header and, at worst, a torn last line in
the transcript, which the reader skips. Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import dataclasses
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
from typing import Any

from .debuglog import get_logger
from .errors import StoreError
from .tasks import TaskList, progress_line

HOME_ENV = "JUPYTER_RECAP_HOME"
DIR_MODE = 0o700
FILE_MODE = 0o600
HEADER_SUFFIX = ".json"
ENTRIES_SUFFIX = ".jsonl"
TITLE_CHARS = 80

_ID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_PREFIX_RE = re.compile(r"^[0-9a-f-]{1,36}$")


def store_dir() -> Path:
    """``$JUPYTER_RECAP_HOME``, or ``jupyter_data_dir()/recap`` (not created here)."""
    configured = os.environ.get(HOME_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "recap"


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make it 0700 whatever the umask."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if (path.stat().st_mode & 0o777) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


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
    """The first prompt on one line, at most :data:`TITLE_CHARS` characters."""
    turns: int = 0
    """Prompts given to the agent."""
    entries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    recaps: int = 0
    last_recap: str | None = None
    """The latest recap the person was shown: what they were told, for listings and agents."""
    tasks: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionRecord:
        """Rebuild a header, ignoring unknown keys; raise ValueError when it is not one."""
        known = {k: data[k] for k in _RECORD_FIELDS if k in data}
        try:
            record = cls(**known)
        except TypeError as error:
            raise ValueError(str(error)) from None
        if not is_session_id(record.id) or not isinstance(record.updated, (int, float)):
            raise ValueError("bad id or time")
        return record


_RECORD_FIELDS = tuple(SessionRecord.__dataclass_fields__)


@dataclass(frozen=True)
class SessionSummary:
    """One line of a session listing."""

    id: str
    updated: float
    title: str
    turns: int
    notebook: str | None
    last_recap: str | None = None
    progress: str | None = None
    """The task list's progress line (``tasks ####........ 2/5``), when the session has one."""

    @classmethod
    def of(cls, record: SessionRecord) -> SessionSummary:
        """The summary of a stored session's header."""
        return cls(
            record.id,
            record.updated,
            record.title,
            record.turns,
            record.notebook,
            record.last_recap,
            progress_line(TaskList.from_list(record.tasks).tasks) or None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by the CLI's ``--json`` and the HTTP listing."""
        return dataclasses.asdict(self)

    @property
    def age(self) -> float:
        """Seconds since the last write."""
        return max(0.0, time.time() - self.updated)


def shorten_title(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


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
    return bool(_ID_RE.match(text))


def check_prefix(text: str) -> str:
    """``text`` lower-cased if it can be an id prefix (only hex digits and dashes), else raise."""
    prefix = text.strip().lower()
    if not _PREFIX_RE.match(prefix):
        shown = text if len(text) <= 40 else text[:37] + "..."
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


# -- writing -----------------------------------------------------------------------------------


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a 0600 temp file, fsync, ``os.replace``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)


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
            except FileNotFoundError:
                continue
    return removed


class AppendFile:
    """An open append-only lines file; the first write after opening mends a torn last line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        os.fchmod(self._fd, FILE_MODE)
        self._mend = _ends_torn(path)

    def append(self, lines: list[bytes]) -> None:
        """Append ``lines`` (each without its newline) in one write.

        No fsync: a killed kernel loses nothing it wrote (the data is the OS's by then), and a
        power cut can only cost the newest lines, which loading tolerates (it recounts entries
        from the file). The header's atomic replace is the write that is synced.
        """
        data = b"".join(line + b"\n" for line in lines)
        if self._mend:
            data = b"\n" + data
        try:
            _write_all(self._fd, data)
        except BaseException:
            self._mend = True  # part of it may be on disk: start the next write on a new line
            raise
        self._mend = False

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _ends_torn(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- reading -----------------------------------------------------------------------------------


def read_header(path: Path) -> dict[str, Any] | None:
    """The header at ``path``, or None (with a warning when it exists but is unreadable)."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        get_logger().warning("sessions: skipping unreadable record %s: %s", path.name, error)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        get_logger().warning("sessions: skipping malformed record %s", path.name)
        return None
    return data


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a lines file; torn or corrupt lines are skipped with a warning."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    bad = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(item, dict):
            yield item
        else:
            bad += 1
    if bad:
        get_logger().warning("sessions: skipped %d unreadable line(s) in %s", bad, path.name)
