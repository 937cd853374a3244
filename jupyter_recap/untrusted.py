"""Reading a file nobody vouched for, one safe way.

Notebooks, chats, the hook spool and span files are written by agents and other processes: any
of them can swap a file for a FIFO (whose blocking open waits for a writer that may never come),
a link to ``/dev/zero`` (endless), a file that keeps growing, or a document nested so deep that
parsing it overflows the parser's recursion. Every reader of such a file goes through here:

- the file is opened read-only, non-blocking and close-on-exec (``O_NOFOLLOW`` too where the
  store's rules ask it), so opening a FIFO returns at once;
- it must be a regular file, checked on the open descriptor (``fstat``), not on the name, which
  could be replaced between a check and the open; anything else is refused before one byte is
  read;
- at most its cap plus one byte is read, however large the file says it is or grows meanwhile;
- JSON is parsed with its nesting bounded: the parser's recursion limit, turned into a refusal
  like a malformed document rather than a ``RecursionError`` escaping into the caller.

A refusal is :class:`~jupyter_recap.errors.RefusedFile`, whose message is one line saying what
the file is ("not a regular file (a FIFO)", "over 64 MiB", "nested too deep", "not JSON …").
Nothing here blocks on anything but the disk; callers on an event loop still read in a thread,
since a large file's parse takes a while.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any

from .errors import RefusedFile

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CHUNK_BYTES = 1 << 20
"""One ``os.read`` at most (a read of the whole cap at once would reserve it all up front)."""


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def size_words(cap: int) -> str:
    """``64 MiB`` for a cap of whole mebibytes, else the bytes."""
    return f"{cap >> 20} MiB" if cap and cap % (1 << 20) == 0 else f"{cap} bytes"


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = True, shown: str | None = None
) -> tuple[int, os.stat_result]:
    """A read-only, non-blocking descriptor of the regular file at ``path``, and its ``fstat``.

    RefusedFile (``kind`` ``"not regular"``) for a FIFO, a device or a socket, found on the
    descriptor; the open never blocks. A directory raises IsADirectoryError, as ``open`` does;
    other OSErrors (missing, no permission, a final link with ``follow=False``: ``ELOOP``) pass
    through. The caller closes the descriptor.
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            name = os.fspath(path) if shown is None else shown
            raise RefusedFile(name, f"not a regular file ({_kind(info)})", kind="not regular")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_open(fd: int, *, cap: int | None, shown: str) -> bytes:
    """At most ``cap`` bytes of the open ``fd``, from where it stands; RefusedFile (``kind``
    ``"too large"``) when there are more. At most ``cap + 1`` bytes are ever read, so a file
    growing while it is read, or a stream that never ends, costs no more than that. ``cap``
    None: everything (only for files of the person's own store, checked to be theirs)."""
    chunks: list[bytes] = []
    left = -1 if cap is None else cap + 1
    while left:
        chunk = os.read(fd, CHUNK_BYTES if left < 0 else min(CHUNK_BYTES, left))
        if not chunk:
            break
        chunks.append(chunk)
        if left > 0:
            left -= len(chunk)
    data = b"".join(chunks)
    if cap is not None and len(data) > cap:
        raise RefusedFile(shown, f"over {size_words(cap)}", kind="too large")
    return data


def read_file(
    path: str | os.PathLike[str], *, cap: int, follow: bool = True, shown: str | None = None
) -> tuple[os.stat_result, bytes]:
    """The ``fstat`` and bytes of the regular file at ``path``, at most ``cap`` bytes.

    RefusedFile when it is not a regular file or holds more than ``cap`` bytes; OSError when
    it cannot be opened (see :func:`open_regular`).
    """
    name = os.fspath(path) if shown is None else shown
    fd, info = open_regular(path, follow=follow, shown=name)
    try:
        if info.st_size > cap:  # refused without reading what it says it holds
            raise RefusedFile(name, f"over {size_words(cap)}", kind="too large")
        return info, read_open(fd, cap=cap, shown=name)
    finally:
        os.close(fd)


def parse_json(data: bytes | str, *, shown: str) -> Any:
    """``data`` as JSON (UTF-8, a byte order mark allowed). RefusedFile when it is not UTF-8
    text (``kind`` ``"not text"``), not JSON (``"not JSON"``, with the parser's words) or nested
    deeper than the parser's recursion allows (``"too deep"``)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise RefusedFile(shown, "not UTF-8 text", kind="not text") from None
    try:
        return json.loads(data)
    except RecursionError:
        # json's C scanner counts one recursion per level: "[" * 100_000 stops at the limit.
        raise RefusedFile(shown, "nested too deep", kind="too deep") from None
    except ValueError as error:
        raise RefusedFile(shown, f"not JSON ({error})", kind="not JSON") from None


def load_json(
    path: str | os.PathLike[str], *, cap: int, follow: bool = True, shown: str | None = None
) -> tuple[os.stat_result, Any]:
    """The ``fstat`` and parsed JSON of the regular file at ``path`` (see :func:`read_file`
    and :func:`parse_json` for what is refused)."""
    name = os.fspath(path) if shown is None else shown
    info, data = read_file(path, cap=cap, follow=follow, shown=name)
    return info, parse_json(data, shown=name)
