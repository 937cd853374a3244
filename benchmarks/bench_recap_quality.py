"""Measure how many of a session's key facts each recap text carries; print one table.

    .venv/bin/python benchmarks/bench_recap_quality.py            # the table and the targets
    .venv/bin/python benchmarks/bench_recap_quality.py --verbose  # + missed facts, each recap
    .venv/bin/python benchmarks/bench_recap_quality.py --json     # the figures as JSON

For every session of ``recap_corpus.py`` (hand-written notebook agent work, each with 3–5 key
facts a person coming back must read), four texts are measured by key-fact recall (the share of
facts with a phrasing found in the text, case and whitespace ignored) and by size:

- *context*: what a model sees, ``build_context(transcript, max_chars=12000, extras=...)`` with
  the real framing of the session's task list and memory notes;
- *context, room filled*: the same, built by the rule before issue 21, whose recent detail
  walked back across earlier turns while whole lines fitted the cap (the "before" figure of
  the context's economy, measured in the same run);
- *offline*: the offline engine's recap, ``offline_recap(transcript, open_task=...)``;
- *last 30 raw*: what agent tools that replay raw history send: the last 30 transcript entries,
  each in full, no cap;
- *last 30 dialog*: the last 30 prompts and replies only, in full, no cap.

The targets: context mean recall ≥ 0.98 with no session under 0.90, at ≤ 12,000 characters,
no session below its room-filled recall and at most 60 % of the room-filled mean characters;
offline mean recall ≥ 0.85. A missed target is printed as MISS, and the exit code stays 0:
this is a measurement, not a gate. Deterministic, no network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from recap_corpus import SESSIONS, Fact, Session, found, full_text, recall  # noqa: E402

from jupyter_recap.pipeline import context as context_module  # noqa: E402
from jupyter_recap.pipeline.context import build_context  # noqa: E402
from jupyter_recap.pipeline.offline import offline_recap  # noqa: E402

CONTEXT_CHARS = 12000
PEER_ENTRIES = 30
CONTEXT_MEAN_TARGET = 0.98
CONTEXT_MIN_TARGET = 0.90
OFFLINE_MEAN_TARGET = 0.85
ECONOMY_TARGET = 0.60
STRATEGIES = ("context", "context_filled", "offline", "last30_raw", "last30_dialog")

__all__ = ["Fact", "Measure", "Row", "measure", "recall", "texts"]


@dataclass(frozen=True)
class Measure:
    """One text's key-fact recall, its size in characters and the facts it missed."""

    recall: float
    chars: int
    missed: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """The figures of one session."""

    session: str
    transcript_chars: int
    facts: int
    context: Measure
    context_filled: Measure
    offline: Measure
    last30_raw: Measure
    last30_dialog: Measure
    recap: str


@contextlib.contextmanager
def room_filled() -> Iterator[None]:
    """Build contexts by the former rule meanwhile: the recent detail reaches back from the
    start of the session (no follow-up needed) with no room of its own for earlier turns."""
    reach, room = context_module._reach, context_module.EARLIER_TURNS_CHARS
    context_module._reach = lambda entries, prompts: 0
    context_module.EARLIER_TURNS_CHARS = CONTEXT_CHARS
    try:
        yield
    finally:
        context_module._reach, context_module.EARLIER_TURNS_CHARS = reach, room


def texts(session: Session) -> dict[str, str]:
    """The texts measured for ``session``, by strategy name."""
    transcript = session.transcript()
    framing = session.framing()
    entries = transcript.entries
    shown = [e for e in entries if full_text([e])]
    dialog = [e for e in entries if e.kind in ("user", "assistant")]
    with room_filled():
        filled = build_context(transcript, max_chars=CONTEXT_CHARS, extras=framing.extras)
    return {
        "context": build_context(transcript, max_chars=CONTEXT_CHARS, extras=framing.extras),
        "context_filled": filled,
        "offline": offline_recap(transcript, open_task=framing.open_task, progress=framing.progress)
        or "",
        "last30_raw": full_text(shown[-PEER_ENTRIES:]),
        "last30_dialog": full_text(dialog[-PEER_ENTRIES:]),
        "all": full_text(entries),
    }


def measure(text: str, facts: Sequence[Fact]) -> Measure:
    """Recall, size and the missed facts (their first phrasing) of ``text``."""
    missed = tuple(fact[0] for fact in facts if not found(text, fact))
    return Measure(recall(text, facts), len(text), missed)


def run(sessions: Sequence[Session] = SESSIONS) -> list[Row]:
    """Measure every session."""
    rows = []
    for session in sessions:
        found_texts = texts(session)
        by = {name: measure(found_texts[name], session.facts) for name in STRATEGIES}
        rows.append(
            Row(
                session.name,
                len(found_texts["all"]),
                len(session.facts),
                by["context"],
                by["context_filled"],
                by["offline"],
                by["last30_raw"],
                by["last30_dialog"],
                found_texts["offline"],
            )
        )
    return rows


def summary(rows: Sequence[Row]) -> dict[str, object]:
    """Means per strategy, the lowest context recall and the verdict on each target."""
    means = {
        name: {
            "recall": statistics.fmean(getattr(r, name).recall for r in rows),
            "chars": statistics.fmean(getattr(r, name).chars for r in rows),
        }
        for name in STRATEGIES
    }
    context_min = min(r.context.recall for r in rows)
    largest = max(r.context.chars for r in rows)
    share = means["context"]["chars"] / means["context_filled"]["chars"]
    targets = {
        f"context mean recall >= {CONTEXT_MEAN_TARGET}": means["context"]["recall"]
        >= CONTEXT_MEAN_TARGET,
        f"context recall >= {CONTEXT_MIN_TARGET} in every session": context_min
        >= CONTEXT_MIN_TARGET,
        f"context <= {CONTEXT_CHARS:,} chars": largest <= CONTEXT_CHARS,
        "context recall >= room-filled recall in every session": all(
            r.context.recall >= r.context_filled.recall for r in rows
        ),
        f"context mean chars <= {ECONOMY_TARGET:.0%} of room-filled": share <= ECONOMY_TARGET,
        f"offline mean recall >= {OFFLINE_MEAN_TARGET}": means["offline"]["recall"]
        >= OFFLINE_MEAN_TARGET,
    }
    return {"means": means, "context_min": context_min, "share": share, "targets": targets}


def print_table(rows: Sequence[Row], verbose: bool) -> None:
    """The Markdown table, the means and the targets (and, verbose, the misses and recaps)."""
    print(
        "| session | transcript | facts | context | ctx chars | room filled | filled chars "
        "| offline | off chars | last 30 raw | raw chars | last 30 dialog | dialog chars |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.session} | {r.transcript_chars:,} | {r.facts} "
            f"| {r.context.recall:.2f} | {r.context.chars:,} "
            f"| {r.context_filled.recall:.2f} | {r.context_filled.chars:,} "
            f"| {r.offline.recall:.2f} | {r.offline.chars:,} "
            f"| {r.last30_raw.recall:.2f} | {r.last30_raw.chars:,} "
            f"| {r.last30_dialog.recall:.2f} | {r.last30_dialog.chars:,} |"
        )
    result = summary(rows)
    means = result["means"]
    assert isinstance(means, dict)
    cells = " ".join(
        f"| {means[name]['recall']:.2f} | {means[name]['chars']:,.0f}" for name in STRATEGIES
    )
    print(f"| **mean** | | {cells} |")
    print()
    print(f"lowest context recall: {result['context_min']:.2f}")
    print(f"context mean chars: {result['share']:.0%} of the room-filled context's")
    targets = result["targets"]
    assert isinstance(targets, dict)
    for name, ok in targets.items():
        print(f"{'PASS' if ok else 'MISS'}  {name}")
    missed = [name for name, ok in targets.items() if not ok]
    if missed:
        print(f"\n{len(missed)} of {len(targets)} targets MISSED: {'; '.join(missed)}")
    if verbose:
        for r in rows:
            print(f"\n## {r.session}")
            for name in STRATEGIES:
                measure_ = getattr(r, name)
                print(f"  {name:14} missed: {', '.join(measure_.missed) or '-'}")
            print(f"  offline recap: {r.recap or '(none)'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--verbose", action="store_true", help="missed facts and each recap")
    args = parser.parse_args()
    os.environ["JUPYTER_RECAP_LOG"] = "0"
    rows = run()
    if args.json:
        print(json.dumps({"sessions": [asdict(r) for r in rows], **summary(rows)}, indent=1))
    else:
        print_table(rows, args.verbose)


if __name__ == "__main__":
    main()
