"""``jupyter recap --sessions`` and ``--notes``: listings of what is stored.

Only the stores and the formatters: no IPython, traitlets, httpx or tornado on these paths.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .common import (
    DEFAULT_LIMIT,
    EXIT_NO_RECAP,
    EXIT_OK,
    PROG,
    UsageError,
    fail,
    print_json,
    say,
)

#: Days ``--usage`` covers.
USAGE_DAYS = 30


def list_sessions(args: argparse.Namespace) -> int:
    """``--sessions``: print the listing (or the "none" line) and return 0."""
    from ..stores.listings import SessionSummary, format_sessions
    from ..stores.sessionfiles import session_ids
    from ..stores.sessions import SessionStore
    from .stored import stored_sessions

    limit = DEFAULT_LIMIT if args.limit is None else args.limit
    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}")
    if args.all and args.target is not None:
        raise UsageError("--sessions takes a NOTEBOOK or --all, not both")
    store = SessionStore()
    if args.all:
        records = store.records()
        empty = f"No sessions stored yet (in {store.root})."
    elif args.target is not None:
        # The same file under any spelling (relative, absolute, through links): as a recap
        # of NOTEBOOK finds its sessions, so the listing shows those very sessions.
        notebook = os.path.abspath(args.target)
        records = stored_sessions(store, args.target)
        empty = f"No sessions stored for {notebook}."
    else:
        under = os.getcwd()
        records = [r for r in store.records() if r.notebook and _is_under(r.notebook, under)]
        empty = f"No sessions stored for notebooks under {under}."
    summaries = [SessionSummary.of(r) for r in records[:limit]]
    if args.json:
        print_json([s.to_dict() for s in summaries])  # the exact titles and recaps
        return EXIT_OK
    listing = format_sessions(
        summaries,
        time.time(),
        show_notebook=args.target is None,
        known_ids=session_ids(store.root),  # so that each prefix works as `jupyter recap ID`
        empty=empty,
    )
    say(listing)  # titles, recaps and notebook names are anyone's text
    return EXIT_OK


def list_usage(*, as_json: bool, window: int = USAGE_DAYS) -> int:
    """``--usage``: the person's model calls, tokens and estimated cost, per day."""
    from ..stores.listings import format_usage
    from ..stores.usage import UsageLedger

    ledger = UsageLedger()
    days = ledger.recent(window)
    for warning in ledger.take_warnings():
        say(f"{PROG}: warning: {warning}", sys.stderr)
    if as_json:
        print_json([day.to_dict() for day in days])
    else:
        say(format_usage(days, window))  # model ids are anyone's text
    return EXIT_OK


def list_notes(place: str | None, *, as_json: bool) -> int:
    """``--notes``: the memory of the project around ``place`` (reading counts no hits)."""
    from ..stores.framing import memory_enabled, project_memory
    from ..stores.listings import format_notes

    if place is not None and not os.path.exists(place):
        raise UsageError(f"no such notebook or directory: {place}")
    if not memory_enabled():
        return fail("project memory is turned off (JUPYTER_RECAP_MEMORY=0)", EXIT_NO_RECAP)
    store = project_memory(place)
    entries = store.entries()
    for warning in store.take_warnings():
        say(f"{PROG}: warning: {warning}", sys.stderr)
    if as_json:
        notes = [entry.to_dict() for entry in entries]
        print_json({"project": str(store.project_dir), "notes": notes})
    else:
        say(format_notes(entries, store.project_dir))
    return EXIT_OK


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(os.path.join(directory, ""))
