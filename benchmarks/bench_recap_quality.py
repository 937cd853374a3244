"""Measure how many of a session's key facts each recap text carries; print one table.

    .venv/bin/python benchmarks/bench_recap_quality.py            # the table and the targets
    .venv/bin/python benchmarks/bench_recap_quality.py --verbose  # + missed facts, each recap
    .venv/bin/python benchmarks/bench_recap_quality.py --json     # the figures as JSON

For every session of ``recap_corpus.py`` (hand-written notebook agent work, each with 3–5 key
facts a person coming back must read), seven texts are measured by key-fact recall (the share
of facts with a phrasing found in the text, case and whitespace ignored) and by size:

- *context*: what a model sees, ``build_context(transcript, max_chars=12000, extras=...)`` with
  the real framing of the session's task list and memory notes;
- *head+tail*: the trivial context of the same size: the first 6,000 and the last 6,000
  characters of the whole raw transcript (all of it when shorter). A context builder that
  does no better than this is not worth its rules;
- *context, room filled*: the same, built by the rule before issue 21, whose recent detail
  walked back across earlier turns while whole lines fitted the cap (the "before" figure of
  the context's economy, measured in the same run);
- *offline*: the offline engine's recap, ``offline_recap(transcript, open_task=...)``;
- *3 snippets*: the naive baseline beside it, in the same 400-character cap: the first
  prompt, the latest prompt and the newest reply or error (the line naming the error), each
  cut to 133 characters;
- *last 30 raw*: what agent tools that replay raw history send: the last 30 transcript entries,
  each in full, no cap;
- *last 30 dialog*: the last 30 prompts and replies only, in full, no cap.

A second table measures 50 generated sessions (``tests/sessiongen.py``, seeds 0–49: a decision
accepted in two words, rules set early, a failure left behind rounds back, one fixed by a retry,
a changed ask, an errored turn, an approval waiting, at random depths among random tool traffic),
the session state's builder and engine beside the ones they replaced (``legacy/``, measured in
the same run): context recall (with the last 30 dialog messages and head+tail at the context's
size as floors for every session), the offline recap *right* — it names the task as it stands,
every open failure, and the waiting approval, else the proposed next step, and no failure that
was fixed or superseded — and failures reported open after they were fixed.

The targets: context mean recall ≥ 0.98 with no session under 0.90, at ≤ 12,000 characters,
no session below its room-filled recall or its head+tail recall, and at most 60 % of the
room-filled mean characters; offline mean recall ≥ 0.85. The sessions tagged ``mid-session``
keep their key facts away from both ends of a transcript well over 12,000 characters: the
script says whether the context beats head+tail on them. A missed target is printed as MISS,
and the exit code stays 0: this is a measurement, not a gate. Deterministic, no network.
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
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from legacy import context_v3, offline_v3  # noqa: E402
from recap_corpus import SESSIONS, Fact, Session, found, full_text, recall  # noqa: E402
from sessiongen import generate, recap_wrongs  # noqa: E402

from jupyter_recap.pipeline import context as context_module  # noqa: E402
from jupyter_recap.pipeline.context import build_context  # noqa: E402
from jupyter_recap.pipeline.offline import offline_recap  # noqa: E402
from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS  # noqa: E402
from jupyter_recap.record.transcript import Entry  # noqa: E402
from jupyter_recap.textutil import error_line, shorten  # noqa: E402

CONTEXT_CHARS = 12000
PEER_ENTRIES = 30
CONTEXT_MEAN_TARGET = 0.98
CONTEXT_MIN_TARGET = 0.90
OFFLINE_MEAN_TARGET = 0.85
GENERATED_SEEDS = range(50)
GENERATED_CONTEXT_TARGET = 0.98
GENERATED_RIGHT_TARGET = 0.95
ECONOMY_TARGET = 0.60
SNIPPET_CHARS = MAX_RECAP_CHARS // 3  # three snippets in the offline recap's cap
MID_SESSION = "mid-session"
STRATEGIES = (
    "context",
    "head_tail",
    "context_filled",
    "offline",
    "snippets",
    "last30_raw",
    "last30_dialog",
)
LABELS = {
    "context": "context",
    "head_tail": "head+tail",
    "context_filled": "room filled",
    "offline": "offline",
    "snippets": "3 snippets",
    "last30_raw": "last 30 raw",
    "last30_dialog": "last 30 dialog",
}

__all__ = ["Fact", "Measure", "Row", "head_tail", "measure", "recall", "snippets", "texts"]


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
    tags: tuple[str, ...]
    transcript_chars: int
    facts: int
    context: Measure
    head_tail: Measure
    context_filled: Measure
    offline: Measure
    snippets: Measure
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


def head_tail(raw: str, size: int = CONTEXT_CHARS) -> str:
    """The first and the last ``size // 2`` characters of ``raw`` (all of it when it fits)."""
    if len(raw) <= size:
        return raw
    return raw[: size // 2] + "\n" + raw[-(size - size // 2) :]


def snippets(entries: Sequence[Entry], limit: int = SNIPPET_CHARS) -> str:
    """The naive recap: the first prompt, the latest prompt (when another) and the newest
    reply or error (the line that names the error), each cut to ``limit`` characters. No rule
    decides what matters: this is the baseline the offline engine has to beat."""
    prompts = [e for e in entries if e.kind == "user"]
    said = [e for e in entries if e.kind == "assistant" or e.error]
    picked = prompts[:1] + prompts[-1:] if len(prompts) > 1 else prompts
    picked += said[-1:]
    return "\n".join(shorten(error_line(e.error) if e.error else e.text, limit) for e in picked)


def texts(session: Session) -> dict[str, str]:
    """The texts measured for ``session``, by strategy name."""
    transcript = session.transcript()
    framing = session.framing()
    entries = transcript.entries
    shown = [e for e in entries if full_text([e])]
    dialog = [e for e in entries if e.kind in ("user", "assistant")]
    raw = full_text(entries)
    with room_filled():
        filled = build_context(transcript, max_chars=CONTEXT_CHARS, extras=framing.extras)
    return {
        "context": build_context(transcript, max_chars=CONTEXT_CHARS, extras=framing.extras),
        "head_tail": head_tail(raw),
        "context_filled": filled,
        "offline": offline_recap(transcript, open_task=framing.open_task, progress=framing.progress)
        or "",
        "snippets": snippets(entries),
        "last30_raw": full_text(shown[-PEER_ENTRIES:]),
        "last30_dialog": full_text(dialog[-PEER_ENTRIES:]),
        "all": raw,
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
                tuple(sorted(session.tags)),
                len(found_texts["all"]),
                len(session.facts),
                by["context"],
                by["head_tail"],
                by["context_filled"],
                by["offline"],
                by["snippets"],
                by["last30_raw"],
                by["last30_dialog"],
                found_texts["offline"],
            )
        )
    return rows


def summary(rows: Sequence[Row]) -> dict[str, object]:
    """Means and lowest recall per strategy, context against head+tail (on every session and
    on the mid-session ones) and the verdict on each target."""
    means = {
        name: {
            "recall": statistics.fmean(getattr(r, name).recall for r in rows),
            "min_recall": min(getattr(r, name).recall for r in rows),
            "chars": statistics.fmean(getattr(r, name).chars for r in rows),
        }
        for name in STRATEGIES
    }
    mid = [r for r in rows if MID_SESSION in r.tags]
    versus = {
        "head_tail_mean": means["head_tail"]["recall"],
        "context_mean": means["context"]["recall"],
        "mid_session_sessions": len(mid),
        "mid_session_head_tail_mean": statistics.fmean(r.head_tail.recall for r in mid)
        if mid
        else None,
        "mid_session_context_mean": statistics.fmean(r.context.recall for r in mid)
        if mid
        else None,
        "context_beats_head_tail_on_mid_session": [
            r.session for r in mid if r.context.recall > r.head_tail.recall
        ],
        "context_below_head_tail": [
            r.session for r in rows if r.context.recall < r.head_tail.recall
        ],
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
        "context recall >= head+tail recall in every session": not versus[
            "context_below_head_tail"
        ],
        f"context mean chars <= {ECONOMY_TARGET:.0%} of room-filled": share <= ECONOMY_TARGET,
        f"offline mean recall >= {OFFLINE_MEAN_TARGET}": means["offline"]["recall"]
        >= OFFLINE_MEAN_TARGET,
    }
    return {
        "means": means,
        "context_min": context_min,
        "share": share,
        "versus": versus,
        "targets": targets,
    }


def print_table(rows: Sequence[Row], verbose: bool) -> None:
    """The Markdown table, the means and the targets (and, verbose, the misses and recaps)."""
    heads = " | ".join(f"{LABELS[name]} | chars" for name in STRATEGIES)
    print(f"| session | transcript | facts | {heads} |")
    print("|---|---:|---:|" + "---:|---:|" * len(STRATEGIES))
    for r in rows:
        cells = " ".join(
            f"| {getattr(r, name).recall:.2f} | {getattr(r, name).chars:,}" for name in STRATEGIES
        )
        mark = " (mid)" if MID_SESSION in r.tags else ""
        print(f"| {r.session}{mark} | {r.transcript_chars:,} | {r.facts} {cells} |")
    result = summary(rows)
    means = result["means"]
    assert isinstance(means, dict)
    cells = " ".join(
        f"| {means[name]['recall']:.2f} | {means[name]['chars']:,.0f}" for name in STRATEGIES
    )
    print(f"| **mean** | | {cells} |")
    lowest = " ".join(f"| {means[name]['min_recall']:.2f} |" for name in STRATEGIES)
    print(f"| **lowest** | | {lowest}")
    print()
    print(f"lowest context recall: {result['context_min']:.2f}")
    print(f"context mean chars: {result['share']:.0%} of the room-filled context's")
    versus = result["versus"]
    assert isinstance(versus, dict)
    print(
        f"head+tail mean recall {versus['head_tail_mean']:.2f} vs context "
        f"{versus['context_mean']:.2f}"
    )
    mid = [r for r in rows if MID_SESSION in r.tags]
    if mid:
        beaten = versus["context_beats_head_tail_on_mid_session"]
        worse = [r.session for r in mid if r.context.recall < r.head_tail.recall]
        verdict = "yes" if len(beaten) == len(mid) else "no"
        print(
            f"context beats head+tail on the mid-session sessions: {verdict} "
            f"({len(beaten)} of {len(mid)}; head+tail mean "
            f"{versus['mid_session_head_tail_mean']:.2f} vs context "
            f"{versus['mid_session_context_mean']:.2f}"
            + (f"; context lower on {', '.join(worse)}" if worse else "")
            + ")"
        )
    print(
        f"offline mean recall {means['offline']['recall']:.2f} vs 3 snippets "
        f"{means['snippets']['recall']:.2f} (mean {means['offline']['chars']:,.0f} vs "
        f"{means['snippets']['chars']:,.0f} characters)"
    )
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


@dataclass(frozen=True)
class GeneratedRow:
    """The figures of one generated session, new and old."""

    seed: int
    context: float
    old_context: float
    context_chars: int
    old_context_chars: int
    last30_dialog: float
    head_tail: float
    offline_wrong: list[str]
    old_offline_wrong: list[str]
    offline: float
    old_offline: float
    fixed_reported_open: bool
    old_fixed_reported_open: bool
    recap: str


def generated_row(seed: int) -> GeneratedRow:
    generated = generate(seed)
    transcript = generated.transcript()
    facts = generated.facts
    new_context = build_context(transcript, max_chars=CONTEXT_CHARS)
    old_context = context_v3.build_context(transcript, max_chars=CONTEXT_CHARS)
    new_recap = offline_recap(transcript) or ""
    old_recap = offline_v3.offline_recap(transcript) or ""
    dialog = [e for e in generated.entries if e.kind in ("user", "assistant")]
    raw = full_text(generated.entries)
    open_keys = {failure.key for failure in transcript.state.open_failures}
    new_wrong, old_wrong = recap_wrongs(new_recap, generated), recap_wrongs(old_recap, generated)
    return GeneratedRow(
        seed=seed,
        context=recall(new_context, facts),
        old_context=recall(old_context, facts),
        context_chars=len(new_context),
        old_context_chars=len(old_context),
        last30_dialog=recall(full_text(dialog[-PEER_ENTRIES:]), facts),
        head_tail=recall(head_tail(raw, len(new_context)), facts),
        offline_wrong=new_wrong,
        old_offline_wrong=old_wrong,
        offline=recall(new_recap, facts),
        old_offline=recall(old_recap, facts),
        # Open in the state, or named by the recap.
        fixed_reported_open=any(key in open_keys for key in generated.truth.fixed)
        or any(w.startswith("!") for w in new_wrong),
        old_fixed_reported_open=any(w.startswith("!") for w in old_wrong),
        recap=new_recap,
    )


def generated_figures(seeds: Sequence[int] = GENERATED_SEEDS) -> dict[str, object]:
    """The generated sessions' figures, new beside old (see the module docstring)."""
    rows = [generated_row(seed) for seed in seeds]

    def mean(values: Iterator[float]) -> float:
        return statistics.fmean(values)

    below = [r.seed for r in rows if r.context < max(r.last30_dialog, r.head_tail)]
    right = sum(not r.offline_wrong for r in rows) / len(rows)
    fixed_open = sum(r.fixed_reported_open for r in rows)
    context_recall = mean(r.context for r in rows)
    figures: dict[str, object] = {
        "sessions": len(rows),
        "context_recall": context_recall,
        "old_context_recall": mean(r.old_context for r in rows),
        "context_min": min(r.context for r in rows),
        "context_chars": mean(r.context_chars for r in rows),
        "old_context_chars": mean(r.old_context_chars for r in rows),
        "last30_dialog_recall": mean(r.last30_dialog for r in rows),
        "head_tail_recall": mean(r.head_tail for r in rows),
        "context_below_a_floor": below,
        "offline_right": right,
        "old_offline_right": sum(not r.old_offline_wrong for r in rows) / len(rows),
        "offline_recall": mean(r.offline for r in rows),
        "old_offline_recall": mean(r.old_offline for r in rows),
        "fixed_reported_open": fixed_open,
        "old_fixed_reported_open": sum(r.old_fixed_reported_open for r in rows),
    }
    figures["targets"] = {
        f"generated: context mean recall >= {GENERATED_CONTEXT_TARGET}": context_recall
        >= GENERATED_CONTEXT_TARGET,
        "generated: context never below the last 30 dialog messages or head+tail": not below,
        f"generated: offline recap right in >= {GENERATED_RIGHT_TARGET:.0%}": right
        >= GENERATED_RIGHT_TARGET,
        "generated: 0 failures reported open after they were fixed": fixed_open == 0,
    }
    figures["rows"] = [asdict(r) for r in rows]
    return figures


def print_generated(figures: dict[str, object], verbose: bool) -> None:
    print(f"\n{figures['sessions']} generated sessions (tests/sessiongen.py), new | old:")
    pairs = (
        ("context recall", "context_recall", "old_context_recall", ".3f"),
        ("context chars", "context_chars", "old_context_chars", ",.0f"),
        ("offline recap right", "offline_right", "old_offline_right", ".0%"),
        ("offline recall", "offline_recall", "old_offline_recall", ".2f"),
        ("fixed failures reported open", "fixed_reported_open", "old_fixed_reported_open", "d"),
    )
    for label, new, old, spec in pairs:
        print(f"  {label:30} {format(figures[new], spec):>8} | {format(figures[old], spec)}")
    print(
        f"  lowest context recall {figures['context_min']:.2f}; last 30 dialog "
        f"{figures['last30_dialog_recall']:.2f}; head+tail at the context's size "
        f"{figures['head_tail_recall']:.2f}"
    )
    targets = figures["targets"]
    assert isinstance(targets, dict)
    for name, ok in targets.items():
        print(f"{'PASS' if ok else 'MISS'}  {name}")
    if verbose:
        rows = figures["rows"]
        assert isinstance(rows, list)
        for row in rows:
            if row["offline_wrong"]:
                print(f"  seed {row['seed']}: {row['offline_wrong']} :: {row['recap']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--verbose", action="store_true", help="missed facts and each recap")
    args = parser.parse_args()
    os.environ["JUPYTER_RECAP_LOG"] = "0"
    rows = run()
    generated = generated_figures()
    if args.json:
        generated.pop("rows")
        result = {"sessions": [asdict(r) for r in rows], **summary(rows)}
        print(json.dumps({**result, "generated": generated}, indent=1))
    else:
        print_table(rows, args.verbose)
        print_generated(generated, args.verbose)


if __name__ == "__main__":
    main()
