"""Files private to the person: the store's rules of trust, in one place.

Session records and project memory flow into recaps and into an agent's system prompt
(``jr.tasks_prompt()``, ``jr.memory_prompt()``), so they are trusted only when nobody else could
have written them — the rule ssh applies to ``~/.ssh`` (StrictModes):

- the store directory, and ``memory/`` inside it, must be real directories (not symlinks) owned
  by the person and not writable by group or others;
- every directory above the store must be owned by the person or by root and, when others may
  write to it, carry the sticky bit (as ``/tmp`` does), so nobody else can rename the store
  away and put their own in its place;
- a file is read or appended to only when it is a regular file owned by the person, opened
  without following a symlink (``O_NOFOLLOW``) and without blocking on a FIFO someone planted
  (reading goes through :mod:`..untrusted`, the one reader of files nobody vouched for);
- nothing that already exists is ever ``chmod``-ed: a directory that breaks the rule is
  refused with one line saying why and how to fix it. (Repairing it would, for example, strip
  the sticky bit of a shared temporary directory the store was pointed at.)

Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import untrusted
from ..errors import RefusedFile, StoreWriteError, UnsafeStoreError

DIR_MODE = 0o700
FILE_MODE = 0o600

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def person() -> int:
    """The uid whose files are trusted: the effective uid of this process."""
    return os.geteuid()


def _mode(info: os.stat_result) -> str:
    return f"{stat.S_IMODE(info.st_mode):04o}"


def check_dir(path: Path, *, uid: int | None = None, what: str = "the session store") -> None:
    """Refuse (UnsafeStoreError) a directory that someone other than ``uid`` could write.

    ``path`` itself must be a directory owned by ``uid`` (default: :func:`person`), not
    writable by group or others; the directories above its real path must be owned by ``uid``
    or root, and sticky where others may write them. A link at ``path`` itself (the person's
    own configuration) is followed; the rule then applies to where it leads.
    """
    uid = person() if uid is None else uid
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UnsafeStoreError(f"{what} {path} does not exist") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeStoreError(f"{what} {path} is not a directory")
    untrusted = f"{what} {path} cannot be trusted"
    if info.st_uid != uid:
        raise UnsafeStoreError(
            f"{untrusted}: it belongs to uid {info.st_uid}, not to you (uid {uid}); remove it, "
            f"{_ELSEWHERE}"
        )
    if info.st_mode & _WRITABLE_BY_OTHERS:
        if info.st_mode & stat.S_ISVTX:
            raise UnsafeStoreError(
                f"{untrusted}: it is a shared directory anyone can write to (mode "
                f"{_mode(info)}); set JUPYTER_RECAP_HOME to a private directory inside it"
            )
        raise UnsafeStoreError(
            f"{untrusted}: others can write to it (mode {_mode(info)}); run `chmod 700 {path}`, "
            f"{_ELSEWHERE}"
        )
    check_ancestors(Path(os.path.realpath(path)).parent, shown=path, uid=uid, what=what)


_ELSEWHERE = "or set JUPYTER_RECAP_HOME to a directory of your own"


def check_ancestors(start: Path, *, shown: Path, uid: int, what: str = "the session store") -> None:
    """Refuse ``shown`` when ``start`` (a real path) or a directory above it would let someone
    else swap ``shown`` for a directory of their own."""
    for parent in (start, *start.parents):
        try:
            above = os.stat(parent)
        except OSError:
            continue
        if above.st_uid not in (uid, 0):
            raise UnsafeStoreError(
                f"{what} {shown} cannot be trusted: it lies inside {parent}, which belongs to "
                f"uid {above.st_uid}, who could replace it; {_ELSEWHERE}"
            )
        if above.st_mode & _WRITABLE_BY_OTHERS and not above.st_mode & stat.S_ISVTX:
            raise UnsafeStoreError(
                f"{what} {shown} cannot be trusted: it lies inside {parent}, which others can "
                f"write to (mode {_mode(above)}), so they could replace it; {_ELSEWHERE}"
            )


def check_subdir(path: Path, *, uid: int | None = None, what: str = "the memory folder") -> None:
    """Like :func:`check_dir` for a directory inside a checked one: it must not be a link."""
    uid = person() if uid is None else uid
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeStoreError(
            f"{what} {path} is a link or not a directory; remove it so a private one is made"
        )
    if info.st_uid != uid or info.st_mode & _WRITABLE_BY_OTHERS:
        raise UnsafeStoreError(
            f"{what} {path} belongs to uid {info.st_uid} with mode {_mode(info)}: it must be "
            f"yours and not writable by others (`chmod go-w {path}`)"
        )


def ensure_dir(path: Path, *, what: str = "the session store") -> Path:
    """Create ``path`` private (0700) if it is missing, then check it; never chmod it.

    Missing parents are made 0700 too (``os.makedirs`` would give them the umask's mode, and a
    umask of 0 would make them writable by anyone).
    """
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            if missing:  # nothing is created where someone else could swap it away
                real = Path(os.path.realpath(folder))
                check_ancestors(real, shown=path, uid=person(), what=what)
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            pass  # made meanwhile, or a file or a dangling link: check_dir says which
        except OSError as error:
            raise StoreWriteError(f"cannot create {what} {path}: {error.strerror}") from None
    check_dir(path, what=what)
    return path


def ensure_subdir(path: Path, *, what: str = "the memory folder") -> Path:
    """Create a private directory inside a checked one, or check the one that is there."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as error:
        raise StoreWriteError(f"cannot create {what} {path}: {error.strerror}") from None
    check_subdir(path, what=what)
    return path


def _refuse_file(path: Path, why: str) -> None:
    from ..debuglog import get_logger  # here: the hook command must start fast (see cli/hook)

    get_logger().warning("store: ignoring %s: %s", path, why)


def _check_open_file(fd: int, path: Path) -> bool:
    """True when the open ``fd`` is a regular file of the person's; False (logged) if not."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        _refuse_file(path, "not a regular file")
        return False
    if info.st_uid != person():
        _refuse_file(path, f"it belongs to uid {info.st_uid}, not to you")
        return False
    return True


class IgnoredFile(Exception):
    """A file that exists but is not trusted (a link, not regular, someone else's)."""


def read_bytes(path: Path) -> bytes | None:
    """The bytes of a trusted file; None when it is missing; IgnoredFile when it is not ours.

    Opened by the one reader of files nobody vouched for (:mod:`..untrusted`), without
    following a final link; the store's rule adds that the file must be the person's.
    """
    try:
        fd, info = untrusted.open_regular(path, follow=False, shown=path.name)
    except FileNotFoundError:
        return None
    except (RefusedFile, IsADirectoryError) as refusal:
        if isinstance(refusal, RefusedFile):
            _refuse_file(path, refusal.what)
        else:
            _refuse_file(path, "not a regular file (a directory)")
        raise IgnoredFile(f"{path.name} is not a regular file of yours") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            _refuse_file(path, "it is a symbolic link")
            raise IgnoredFile(f"{path.name} is a symbolic link") from None
        raise
    try:
        if info.st_uid != person():
            _refuse_file(path, f"it belongs to uid {info.st_uid}, not to you")
            raise IgnoredFile(f"{path.name} is not a regular file of yours")
        return untrusted.read_open(fd, cap=None, shown=path.name)
    finally:
        os.close(fd)


def open_for_append(path: Path) -> int:
    """An ``O_APPEND`` descriptor of a trusted file, created 0600 when missing.

    OSError for anything else: a link (``ELOOP``), a directory, someone else's file.
    """
    # Read-write: the owner checks whether the last line was torn by a crash before appending.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    if not _check_open_file(fd, path):
        os.close(fd)
        raise OSError(errno.EPERM, "not a regular file of yours", str(path))
    return fd


def open_lock(path: Path) -> int:
    """A descriptor of a lock file (created 0600), refusing links and foreign files."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, FILE_MODE)
    if not _check_open_file(fd, path):
        os.close(fd)
        raise OSError(errno.EPERM, "not a regular file of yours", str(path))
    return fd


def create_exclusive(path: Path) -> int:
    """A new file (0600) for writing; fails if anything, a link included, is at ``path``."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)


@contextmanager
def locked(lock_path: Path, *, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created 0600) for the ``with`` block.

    The folder must already be checked (:func:`ensure_subdir`). StoreWriteError, naming
    ``what`` is locked, when the lock file cannot be opened (a link, someone else's file).
    Readers need no lock when writers only append or replace files atomically; the lock is what
    makes a read-modify-write, or a check followed by an append, whole across processes.
    """
    try:
        fd = open_lock(lock_path)
    except OSError as error:
        raise StoreWriteError(
            f"cannot lock {what} ({lock_path.name}): {error.strerror or error}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def move_aside(path: Path, problem: object, *, what: str, fresh: str, log_as: str) -> str:
    """Move a corrupt file to ``<name>.corrupt-<stamp>-<pid>`` and return the warning line.

    Call under the file's lock. The line says what was wrong (``problem``), where the bytes
    went and that ``fresh`` starts; it is also logged as ``log_as: …``. Nothing is dropped: a
    file that cannot be moved raises StoreWriteError and stays where it is, unreplaced.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.corrupt-{stamp}-{os.getpid()}")
    try:
        os.replace(path, backup)
    except OSError as failure:
        raise StoreWriteError(
            f"{what} is corrupt ({problem}) and could not be moved aside: "
            f"{failure.strerror or failure}"
        ) from None
    message = f"{what} was corrupt ({problem}); it was moved to {backup} and {fresh}"
    from ..debuglog import get_logger

    get_logger().warning("%s: %s", log_as, message)
    return message
