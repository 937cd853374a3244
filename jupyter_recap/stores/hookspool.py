"""The hook spool: CLI agents' hook events on their way from ``jupyter recap hook`` to the server.

An agent runs ``jupyter recap hook`` on every prompt, tool call and stop; the command appends
one normalised event (:class:`~jupyter_recap.hooks.events.HookEvent`, already bounded and
redacted) as one JSON line to ``hooks/events.jsonl`` under the session store, and the server
extension reads the lines added since it last looked (:class:`SpoolReader`).

- **Private**, by the store's rules (:mod:`.privatefs`): the store and its ``hooks/`` folder
  must be the person's and writable by nobody else, or nothing is written or read; the file is
  created 0600 and opened without following a link.
- **One write per line**, ``O_APPEND``: hooks of one agent run at once (Codex starts the
  matching hooks of an event concurrently), and appends of whole lines do not interleave.
- **Bounded**: past :data:`ROTATE_BYTES` the file is renamed to ``events.1.jsonl`` (replacing
  the one before), so the spool never holds more than twice that. A reader follows the rename:
  it finishes the old file from where it was, then reads the new one from its start.
- **A torn line** (a hook killed mid-write) is skipped, never read as an event; a last line
  still being written is left for the next read. A write cut short (a full disk) leaves a torn
  tail; the next append first ends it with a newline, so the event after it is whole. (It is not
  cut off: hooks append without a lock, and a cut could take another hook's line with it.)

Reading the store's location imports nothing heavy: the hook command runs on every tool call of
the agent, and ``jupyter_core.paths`` alone would cost it tens of milliseconds.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from .. import untrusted
from ..errors import RefusedFile, StoreWriteError
from . import privatefs

HOME_ENV = "JUPYTER_RECAP_HOME"
"""The store's location, as :data:`jupyter_recap.stores.sessionfiles.HOME_ENV` (a test holds
the two equal; that module is not imported here, it is slow to load)."""
FOLDER = "hooks"
FILE_NAME = "events.jsonl"
ROTATED_NAME = "events.1.jsonl"
ROTATE_BYTES = 2 << 20
"""Size past which the spool is rotated: it never holds more than twice this (4 MiB)."""
MAX_LINE_BYTES = 64 << 10
"""The longest line written or read (an event's fields are bounded well below it)."""
READ_BYTES = 1 << 20
"""Read at most this much per :meth:`SpoolReader.read` (the rest waits for the next)."""


def store_root() -> Path:
    """The session store's directory: ``$JUPYTER_RECAP_HOME``, or ``recap`` in Jupyter's data
    directory (what :func:`jupyter_recap.stores.sessionfiles.store_dir` says, without loading
    ``jupyter_core.paths`` in the common cases)."""
    configured = os.environ.get(HOME_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(jupyter_data_dir()) / "recap"


def jupyter_data_dir() -> str:
    """``jupyter_core.paths.jupyter_data_dir()``, computed here for its common cases (its
    variable, Linux and macOS without platformdirs) and asked of jupyter_core otherwise."""
    given = os.environ.get("JUPYTER_DATA_DIR")
    if given:
        return given
    if "JUPYTER_PLATFORM_DIRS" not in os.environ and sys.platform != "win32":
        home = str(Path("~").expanduser().resolve())
        if sys.platform == "darwin":
            return str(Path(home, "Library", "Jupyter"))
        xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        return os.path.join(xdg, "jupyter")
    from jupyter_core.paths import jupyter_data_dir as from_jupyter_core

    return from_jupyter_core()


def spool_path(store: Path | None = None) -> Path:
    """Where the spool is (nothing is created or checked)."""
    return (store_root() if store is None else store) / FOLDER / FILE_NAME


def append(event: dict[str, Any], *, store: Path | None = None) -> None:
    """Append ``event`` (a JSON object) as one line; rotate the spool once it is too long.

    UnsafeStoreError when the store or its ``hooks/`` folder could be written by someone else,
    StoreWriteError when the line cannot be written (too long, not JSON, a full disk, a link
    where the file should be).
    """
    try:
        line = (json.dumps(event, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    except (TypeError, ValueError) as error:
        raise StoreWriteError(f"a hook event is not JSON: {error}") from None
    if len(line) > MAX_LINE_BYTES:
        raise StoreWriteError(f"a hook event of {len(line)} bytes is too long for the spool")
    root = store_root() if store is None else store
    privatefs.ensure_dir(root)
    folder = privatefs.ensure_subdir(root / FOLDER, what="the hook spool folder")
    path = folder / FILE_NAME
    try:
        fd = privatefs.open_for_append(path)
    except OSError as error:
        raise StoreWriteError(f"cannot open the hook spool: {error.strerror or error}") from None
    try:
        try:
            # A line torn by an earlier short write (a full disk, a file-size limit) ends the
            # file without its newline: this line then starts with one, so the torn piece is a
            # line of its own that the reader skips, and this event is read whole. Prepended
            # rather than cut off: hooks append at once without a lock, and a cut could take
            # another hook's line with it; two hooks that both mend leave an empty line, which
            # the reader skips too.
            if _torn_tail(fd):
                line = b"\n" + line
            written = os.write(fd, line)
        except OSError as error:
            raise StoreWriteError(f"cannot write the hook spool: {error.strerror}") from None
        if written != len(line):
            raise StoreWriteError("the hook spool took part of a line (is the disk full?)")
        if os.fstat(fd).st_size > ROTATE_BYTES:
            _rotate(fd, path)
    finally:
        os.close(fd)


def _torn_tail(fd: int) -> bool:
    """Whether the spool open at ``fd`` ends inside a line (its last byte is no newline).

    Every hook writes its line in one ``O_APPEND`` write, so only a write cut short leaves one
    for good. Another hook's write seen half-done answers yes too, harmlessly: the kernel puts
    this write after that one, so the newline never lands inside its line, and only makes an
    empty line.
    """
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _rotate(fd: int, path: Path) -> None:
    """Rename the spool aside, once: the hook holding its lock renames it if it is still the
    file ``fd`` wrote to; others go on (a hook never waits for another)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another hook is rotating it
    try:
        if os.lstat(path).st_ino == os.fstat(fd).st_ino:
            os.replace(path, path.with_name(ROTATED_NAME))
    except OSError:
        pass  # gone meanwhile, or the folder turned read-only: the next append tries again
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class SpoolReader:
    """Reads the events appended to the spool since the last read, across rotations.

    Its position is the file's identity (device and inode) and a byte offset in it. Not
    thread-safe; the server reads from its event loop.
    """

    def __init__(self, store: Path | None = None) -> None:
        self.store = store_root() if store is None else store
        self.path = self.store / FOLDER / FILE_NAME
        self.identity: tuple[int, int] | None = None
        self.offset = 0
        self._seen: tuple[int, int, int, float] | None = None

    def skip_to_end(self) -> None:
        """Start after what the spool holds now (history is not news)."""
        info = self._stat(self.path)
        if info is None:
            self.identity, self.offset = None, 0
        else:
            self.identity, self.offset = (info.st_dev, info.st_ino), info.st_size
        self._seen = _signature(info)

    def changed(self) -> bool:
        """Whether the spool changed since the last look (one ``lstat``: cheap every second)."""
        return _signature(self._stat(self.path)) != self._seen

    def read(self) -> list[dict[str, Any]]:
        """The JSON objects of the whole lines added since the last read, oldest first.

        UnsafeStoreError when the store or its folder is not private (nothing is read);
        OSError when the file cannot be read. Lines that are not JSON objects are skipped.
        """
        if not os.path.lexists(self.store):
            self.identity, self.offset, self._seen = None, 0, None
            return []
        privatefs.check_dir(self.store)
        folder = self.store / FOLDER
        if os.path.lexists(folder):
            privatefs.check_subdir(folder, what="the hook spool folder")
        info = self._stat(self.path)
        self._seen = _signature(info)
        found: list[dict[str, Any]] = []
        identity = None if info is None else (info.st_dev, info.st_ino)
        if identity != self.identity:
            if self.identity is not None:
                # Rotated (or replaced): the rest of the old file is beside it, if it was moved.
                found += self._finish_rotated()
            self.identity, self.offset = identity, 0
        if info is None:
            return found
        if info.st_size < self.offset:
            self.offset = 0  # cut short by hand: read it again from its start
        lines, self.offset = _read_lines(self.path, self.offset, identity)
        if self.offset + MAX_LINE_BYTES < info.st_size:
            self._seen = None  # more than a partial line is left: the next look reads on
        return found + [data for data in (_parse(line) for line in lines) if data is not None]

    def _finish_rotated(self) -> list[dict[str, Any]]:
        rotated = self.path.with_name(ROTATED_NAME)
        info = self._stat(rotated)
        if info is None or (info.st_dev, info.st_ino) != self.identity:
            return []
        lines, _ = _read_lines(rotated, self.offset, self.identity, final=True)
        return [data for data in (_parse(line) for line in lines) if data is not None]

    @staticmethod
    def _stat(path: Path) -> os.stat_result | None:
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return info if stat.S_ISREG(info.st_mode) else None


def _signature(info: os.stat_result | None) -> tuple[int, int, int, float] | None:
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime)


def _read_lines(
    path: Path, offset: int, identity: tuple[int, int] | None, *, final: bool = False
) -> tuple[list[bytes], int]:
    """The whole lines of ``path`` from ``offset``, and the offset after the last of them.

    At most :data:`READ_BYTES` are read (a rotated file's rest, ``final``, whole: nothing reads
    it again). A last line without its newline waits for the next read, unless the file is
    ``final`` (nobody finishes it) or it is already longer than any line can be.
    """
    try:
        # The one safe way (..untrusted): never blocks, refuses what is not a regular file.
        fd, info = untrusted.open_regular(path, follow=False)
    except (FileNotFoundError, IsADirectoryError, RefusedFile):
        return [], offset
    except OSError as error:
        if error.errno == errno.ELOOP:
            return [], offset  # a link where the spool should be: never followed
        raise
    try:
        if info.st_uid != privatefs.person() or (
            identity is not None and (info.st_dev, info.st_ino) != identity
        ):
            return [], offset
        data = os.pread(fd, 2 * ROTATE_BYTES + MAX_LINE_BYTES if final else READ_BYTES, offset)
        at_end = offset + len(data) >= info.st_size
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1
    if (final and at_end) or (end == 0 and len(data) > MAX_LINE_BYTES):
        end = len(data)  # a line nobody will finish, or one too long to ever be an event
    return data[:end].splitlines(), offset + end


def _parse(line: bytes) -> dict[str, Any] | None:
    if not line.strip() or len(line) > MAX_LINE_BYTES:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
