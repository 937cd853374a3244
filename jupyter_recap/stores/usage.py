"""What model calls cost, per person and per local day, across every kernel.

One file per local day under ``store_dir()/usage/``: ``YYYY-MM-DD.jsonl``, private like the
rest of the store (:mod:`jupyter_recap.stores.privatefs`). Lines are only ever appended, with
``O_APPEND`` under an exclusive ``flock`` on ``usage/.lock``, so two kernels spending at once
lose no count:

- a **start** line when a call begins: ``{"id", "t", "model", "auto"}``;
- a **finish** line when it ends: ``{"id", "in", "out", "est", "cost", "failed"}``.

A call is counted on the day it started, even when it ends after midnight. The daily budget of
automatic calls is checked under the same lock as the start line is written, so two kernels at
99 of 100 cannot both pass. A day file with a line that is not a record (a hand edit, a bad
disk) is moved aside (``<name>.corrupt-<stamp>-<pid>``) with a warning, and that day's counting
starts again; a torn last line (a writer killed mid-write) is not corruption: it is ignored, and
cut off by the next write. Day files older than :data:`KEEP_DAYS` days are removed on the first
write of a day. No fsync: a count is bookkeeping, and a power cut costs at most its last lines.

Reading raises only :class:`~jupyter_recap.errors.UnsafeStoreError` (a store someone else could
write) and :class:`~jupyter_recap.errors.StoreWriteError` (a corrupt file that cannot be moved
aside), and StoreError for a day that is not an ISO date; writing raises those too. Callers
catch them: a recap never fails because its cost could not be written down. Nothing here
imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import functools
import hashlib
import json
import math
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ..debuglog import get_logger
from ..errors import RecapError, StoreError, StoreWriteError
from . import privatefs
from .privatefs import IgnoredFile
from .sessionfiles import store_dir

FOLDER = "usage"
SUFFIX = ".jsonl"
#: Day files (and the corrupt files moved aside) older than this many days are removed.
KEEP_DAYS = 400
#: The largest total cost a day's usage reports, USD: two hand-edited lines of 1e308 would
#: otherwise add up to infinity, which no JSON reader accepts. No person spends near it.
COST_CEILING = 1e12


@functools.cache
def _day() -> re.Pattern[str]:
    return re.compile(r"^\d{4}-\d{2}-\d{2}$")


@functools.cache
def _day_file() -> re.Pattern[str]:
    return re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl(?:\.corrupt-.+)?$")


def local_day(timestamp: float) -> str:
    """The ISO date of ``timestamp`` in the local time zone (days roll over at midnight)."""
    return dt.date.fromtimestamp(timestamp).isoformat()


@dataclass(frozen=True)
class DayUsage:
    """One local day's model calls, from every kernel of the person."""

    day: str
    """ISO local date."""
    calls: int = 0
    """Calls started (start lines)."""
    automatic: int = 0
    """Of which automatic recaps (the ones the daily budget counts)."""
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    estimated: int = 0
    """Calls whose token counts are estimates (the provider reported none)."""
    cost: float = 0.0
    """Sum of the known costs, USD."""
    unpriced: int = 0
    """Finished calls with tokens but no known price (their cost is not in ``cost``)."""
    models: dict[str, int] = field(default_factory=dict)
    """Calls per model id."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``jupyter recap --usage --json``)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Ticket:
    """A started call: what :meth:`UsageLedger.finish` needs to close it."""

    id: str
    day: str


class _Tally:
    """A day's counts while its lines are read; ``offset`` is where reading stopped."""

    def __init__(self, identity: tuple[int, int] | None = None) -> None:
        self.identity = identity  # (st_dev, st_ino) of the file counted
        self.offset = 0
        self.lines = 0
        self.calls = self.automatic = self.failed = 0
        self.tokens_in = self.tokens_out = self.estimated = self.unpriced = 0
        self.cost = 0.0
        self.models: dict[str, int] = {}

    def copy(self) -> _Tally:
        twin = _Tally(self.identity)
        twin.__dict__.update(self.__dict__)
        twin.models = dict(self.models)
        return twin

    def feed(self, data: bytes) -> None:
        """Count the whole lines of ``data`` (the file from ``offset`` on); ValueError on a
        line that is not a record. A last line without its newline is left for later."""
        end = data.rfind(b"\n")
        if end < 0:
            return
        lines = data[:end].split(b"\n")
        try:
            for record in _parse_lines(lines):
                self._count(record)
        except (ValueError, RecursionError):
            number, reason = _first_bad_line(lines)
            raise ValueError(f"line {self.lines + number}: {reason}") from None
        self.lines += len(lines)
        self.offset += end + 1

    def _count(self, record: object) -> None:
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise ValueError("not a usage record")
        if "t" in record:
            model, auto = record.get("model"), record.get("auto")
            if not (_is_number(record["t"]) and isinstance(model, str) and type(auto) is bool):
                raise ValueError("a start record with bad fields")
            self.calls += 1
            self.automatic += auto
            self.models[model] = self.models.get(model, 0) + 1
            return
        tokens_in, tokens_out, cost = record.get("in"), record.get("out"), record.get("cost")
        est, failed = record.get("est"), record.get("failed")
        if not (
            _is_count(tokens_in)
            and _is_count(tokens_out)
            and type(est) is bool
            and type(failed) is bool
            and (cost is None or (_is_number(cost) and cost >= 0))
        ):
            raise ValueError("a finish record with bad fields")
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out
        self.failed += failed
        self.estimated += est
        if cost is not None:
            self.cost = min(self.cost + cost, COST_CEILING)
        elif tokens_in or tokens_out:
            self.unpriced += 1

    def usage(self, day: str) -> DayUsage:
        return DayUsage(
            day,
            self.calls,
            self.automatic,
            self.failed,
            self.tokens_in,
            self.tokens_out,
            self.estimated,
            self.cost,
            self.unpriced,
            dict(self.models),
        )


def _parse_lines(lines: list[bytes]) -> list[Any]:
    """The JSON value of each non-blank line, parsed in one go (a day's file is read in a few
    milliseconds); ValueError when a line is not one JSON object."""
    filled = [line for line in lines if line.strip()]
    for line in filled:
        if not (line.lstrip().startswith(b"{") and line.rstrip().endswith(b"}")):
            raise ValueError("not an object")
    values = json.loads(b"[" + b",".join(filled) + b"]")
    if not isinstance(values, list) or len(values) != len(filled):
        raise ValueError("a record runs across lines")
    return values


def _first_bad_line(lines: list[bytes]) -> tuple[int, str]:
    """Where and why ``lines`` are not records, one by one, for the warning."""
    probe = _Tally()
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                probe._count(json.loads(line))
            except (ValueError, RecursionError) as error:
                return number, _reason(error)
    return len(lines), "a record runs across lines"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> TypeGuard[int]:
    return type(value) is int and value >= 0


def _reason(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    if isinstance(error, json.JSONDecodeError):
        return "not JSON"
    return str(error)


class UsageLedger:
    """The person's usage ledger in the store at ``root`` (default: :func:`store_dir`).

    ``clock`` gives the time (UNIX seconds) that decides the local day: tests pass a fake one.
    One ledger may be shared by the threads of a kernel.
    """

    def __init__(self, root: Path | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.root = root if root is not None else store_dir()
        self.folder = self.root / FOLDER
        self.lock_path = self.folder / ".lock"
        self._clock = clock
        self._warnings: list[str] = []
        self._tallies: dict[str, _Tally] = {}
        self._mutex = threading.Lock()
        self._pruned: str | None = None

    # -- writing ---------------------------------------------------------------------------

    def announce_once(self, model: str) -> bool:
        """True the first time this is asked about ``model`` for this person, then never again
        (across kernels and days): automatic recaps going to a hosted model are announced once.

        The mark is a file created exclusively, so two kernels asking at once get one True.
        """
        privatefs.ensure_dir(self.root)
        privatefs.ensure_subdir(self.folder, what="the usage folder")
        digest = hashlib.sha256(str(model).encode("utf-8")).hexdigest()[:16]
        marker = self.folder / f"announced-{digest}"
        try:
            fd = privatefs.create_exclusive(marker)
        except FileExistsError:
            if _is_own_file(marker):
                return False
            # A link or a folder planted there would silence the notice for good: it is not
            # our mark. Replace it; what cannot be replaced announces every time.
            get_logger().warning("usage: %s is not a regular file of yours; replacing it", marker)
            with contextlib.suppress(OSError):
                os.unlink(marker)
            try:
                fd = privatefs.create_exclusive(marker)
            except OSError:
                return True
        except OSError as error:
            raise _write_error(marker, error) from None
        try:
            os.write(fd, str(model).encode("utf-8") + b"\n")  # for a person looking at the folder
        finally:
            os.close(fd)
        return True

    def start(self, model: str, *, automatic: bool, budget: int | None = None) -> Ticket | None:
        """Record a call starting now. For an automatic call with a budget, under the same lock:
        None (nothing written) when today's automatic calls already reached ``budget`` — so two
        kernels racing at 99 of 100 cannot both pass."""
        limit = budget if automatic else None
        if limit is not None and limit <= 0:
            return None  # automatic calls are off: nothing to count, nothing to write
        now = self._clock()
        ticket = Ticket(secrets.token_hex(8), local_day(now))
        line = {"id": ticket.id, "t": round(now, 3), "model": str(model), "auto": automatic}
        with self._locked(ticket.day) as path:
            fd = self._open(path)
            try:
                if limit is not None:
                    try:
                        spent = self._tally_of(ticket.day, fd).automatic
                    except ValueError as problem:
                        os.close(fd)
                        fd = -1
                        self._move_aside(ticket.day, path, problem)
                        fd = self._open(path)
                        spent = 0
                    if spent >= limit:
                        return None
                _append(fd, path, line)
            finally:
                if fd >= 0:
                    os.close(fd)
        return ticket

    def finish(
        self,
        ticket: Ticket,
        *,
        tokens_in: int,
        tokens_out: int,
        estimated: bool,
        cost: float | None,
        failed: bool = False,
    ) -> None:
        """Written to the day the call started (a call across midnight counts on its first day)."""
        if cost is not None and not (math.isfinite(cost) and cost >= 0):
            cost = None
        line = {
            "id": ticket.id,
            "in": max(0, int(tokens_in)),
            "out": max(0, int(tokens_out)),
            "est": bool(estimated),
            "cost": None if cost is None else float(cost),
            "failed": bool(failed),
        }
        with self._locked(_check_day(ticket.day)) as path:
            fd = self._open(path)
            try:
                _append(fd, path, line)
            finally:
                os.close(fd)

    @contextmanager
    def _locked(self, day: str) -> Iterator[Path]:
        """Hold the ledger's lock; yields the path of ``day``'s file. Prunes once a day."""
        privatefs.ensure_dir(self.root)
        privatefs.ensure_subdir(self.folder, what="the usage folder")
        with privatefs.locked(self.lock_path, what="the usage ledger"):
            self._prune(local_day(self._clock()))
            yield self.folder / f"{day}{SUFFIX}"

    def _open(self, path: Path) -> int:
        try:
            return privatefs.open_for_append(path)
        except OSError as error:
            raise _write_error(path, error) from None

    def _prune(self, today: str) -> None:
        """Remove day files older than :data:`KEEP_DAYS` (call under the lock)."""
        if self._pruned == today:
            return
        self._pruned = today
        cutoff = (dt.date.fromisoformat(today) - dt.timedelta(days=KEEP_DAYS)).isoformat()
        removed = 0
        for name in os.listdir(self.folder):
            match = _day_file().match(name)
            if match and match.group(1) < cutoff:
                try:
                    os.unlink(self.folder / name)
                    removed += 1
                except OSError:
                    continue
        if removed:
            get_logger().info("usage: removed %d day files older than %d days", removed, KEEP_DAYS)

    def problem(self) -> str | None:
        """Why today's calls cannot be counted (one line), or None when they can.

        Checks what :meth:`start` needs without writing anything: a store and usage folder
        only the person can write, and a lock file and today's file that are regular files of
        theirs (or not there yet). The daily budget is a promise about money: while this says
        something, automatic calls are not made.
        """
        try:
            if not self._trusted():
                return None  # nothing written yet: the first call creates a private ledger
            for path in (self.lock_path, self.folder / f"{local_day(self._clock())}{SUFFIX}"):
                if os.path.lexists(path) and not _is_own_file(path):
                    return f"{path.name} in {self.folder} is not a regular file of yours"
        except (RecapError, OSError) as error:
            return " ".join(str(error).split())
        return None

    # -- reading ---------------------------------------------------------------------------

    def today(self) -> DayUsage:
        """Today's usage (the local day of ``clock()``)."""
        return self.day(local_day(self._clock()))

    def day(self, day: str) -> DayUsage:
        """The usage of one local day (an ISO date); empty when nothing was recorded."""
        day = _check_day(day)
        if not self._trusted():
            return DayUsage(day)
        path = self.folder / f"{day}{SUFFIX}"
        try:
            return self._read(day, path).usage(day)
        except ValueError:
            with self._locked(day):  # moving a corrupt file aside is a write
                try:
                    return self._read(day, path).usage(day)
                except ValueError as problem:
                    self._move_aside(day, path, problem)
                    return DayUsage(day)

    def recent(self, days: int = 30) -> list[DayUsage]:
        """The last ``days`` local days (today included) that have records, newest first."""
        today = dt.date.fromisoformat(local_day(self._clock()))
        oldest = (today - dt.timedelta(days=max(0, days))).isoformat()
        if not self._trusted():
            return []
        try:
            names = os.listdir(self.folder)
        except OSError as error:
            self._warn(f"the usage folder could not be read: {error.strerror or error}")
            return []
        found = []
        for name in names:
            day = name[: -len(SUFFIX)]
            if name.endswith(SUFFIX) and _day().match(day) and oldest < day <= today.isoformat():
                found.append(day)
        usages = (self.day(day) for day in sorted(found, reverse=True))
        return [u for u in usages if u.calls or u.tokens_in or u.tokens_out or u.failed]

    def take_warnings(self) -> list[str]:
        """Warnings not yet shown to anyone (a corrupt file moved aside); reading clears them."""
        with self._mutex:
            taken, self._warnings = self._warnings, []
        return taken

    def _trusted(self) -> bool:
        """False when there is no ledger yet; UnsafeStoreError when someone else could write it."""
        try:
            os.lstat(self.root)
        except FileNotFoundError:
            return False
        privatefs.check_dir(self.root)
        try:
            privatefs.check_subdir(self.folder, what="the usage folder")
        except FileNotFoundError:
            return False
        return True

    def _read(self, day: str, path: Path) -> _Tally:
        """The day's counts, parsing only what was appended since the last read; ValueError
        when the file is corrupt. Writers only append, so no lock is needed."""
        try:
            before = os.lstat(path)
            raw = privatefs.read_bytes(path)
        except FileNotFoundError:
            return _Tally()
        except IgnoredFile as why:
            self._warn(f"the usage file of {day} was ignored: {why}")
            return _Tally()
        except OSError as error:
            self._warn(f"the usage file of {day} could not be read: {error.strerror or error}")
            return _Tally()
        if raw is None:
            return _Tally()
        identity = (before.st_dev, before.st_ino)
        try:
            after = os.lstat(path)
        except OSError:
            after = None
        if after is None or (after.st_dev, after.st_ino) != identity:
            tally = _Tally()  # replaced while read: count what was read, remember nothing
            tally.feed(raw)
            return tally
        tally = self._base(day, identity, len(raw))
        tally.feed(raw[tally.offset :])
        return self._keep(day, tally)

    def _tally_of(self, day: str, fd: int) -> _Tally:
        """The counts of the open day file ``fd`` (under the lock): only the new tail is read."""
        info = os.fstat(fd)
        tally = self._base(day, (info.st_dev, info.st_ino), info.st_size)
        tally.feed(os.pread(fd, info.st_size - tally.offset, tally.offset))
        return self._keep(day, tally)

    def _base(self, day: str, identity: tuple[int, int], size: int) -> _Tally:
        """A copy of the counts kept for ``day`` when they are of this file, else nothing."""
        with self._mutex:
            kept = self._tallies.get(day)
        # The same file and never shorter than what was counted: it is only appended to (a
        # torn tail cut off lies past the last whole line), so the counted head is unchanged.
        if kept is None or kept.identity != identity or kept.offset > size:
            return _Tally(identity)
        return kept.copy()

    def _keep(self, day: str, tally: _Tally) -> _Tally:
        with self._mutex:
            kept = self._tallies.get(day)
            if kept is None or kept.identity != tally.identity or kept.offset <= tally.offset:
                self._tallies[day] = tally
        return tally

    def _move_aside(self, day: str, path: Path, problem: object) -> None:
        message = privatefs.move_aside(
            path,
            problem,
            what=f"the usage file of {day}",
            fresh="that day's counting started again",
            log_as="usage",
        )
        with self._mutex:
            self._tallies.pop(day, None)
            self._warnings.append(message)

    def _warn(self, message: str) -> None:
        with self._mutex:
            if message in self._warnings:
                return
            self._warnings.append(message)
        get_logger().warning("usage: %s", message)


def _is_own_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) that belongs to the person."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == privatefs.person()


def _check_day(day: str) -> str:
    """``day`` if it is an ISO date (it names a file), else StoreError."""
    try:
        if _day().match(day):
            dt.date.fromisoformat(day)
            return day
    except ValueError:
        pass
    raise StoreError(f"not a day: {day!r} (expected YYYY-MM-DD)")


def _append(fd: int, path: Path, record: dict[str, Any]) -> None:
    """Append one line to the open day file (under the lock), first cutting off a torn tail
    left by a writer killed mid-line; a failed write is cut back so no half line stays."""
    data = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            size = _whole_lines(fd, size)
            os.ftruncate(fd, size)
    except OSError as error:
        raise _write_error(path, error) from None
    try:
        if os.write(fd, data) != len(data):  # a full disk takes what fits
            raise OSError(errno.ENOSPC, "the disk is full")
    except OSError as error:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise _write_error(path, error) from None


def _whole_lines(fd: int, size: int) -> int:
    """The length of the file's whole lines: where the last newline before ``size`` ends."""
    step = 4096
    end = size
    while end > 0:
        begin = max(0, end - step)
        cut = os.pread(fd, end - begin, begin).rfind(b"\n")
        if cut >= 0:
            return begin + cut + 1
        end = begin
    return 0


def _write_error(path: Path, error: OSError) -> StoreWriteError:
    reason = "the disk is full" if error.errno == errno.ENOSPC else error.strerror or str(error)
    if error.errno == errno.ELOOP:
        reason = "it is a symbolic link, which the store never follows"
    failure = StoreWriteError(f"could not write {path.name} in {path.parent}: {reason}")
    failure.errno = error.errno
    return failure
