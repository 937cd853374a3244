"""The text a model sees for one recap: two tiers, capped, secrets removed.

*Task framing* is cheap orientation: the session's first prompt, the latest summary, then the
session's state as the transcript folded it (:mod:`..record.state`): the decisions with what
accepted them, the rules the person set, the failures nothing fixed since (from any round), what
the agent changed, what waits and the step it proposed; then the earlier prompts (the person's
own words, which a later "do the same" relies on), the task list and memory notes. *Recent
detail* is the latest prompt and then the newest lines: everything since the latest prompt and,
only when that prompt points back ("it failed, see above", "continue"), the end of the turn it
means, so the follow-up comes with the failure it points at while a prompt that says what to do
costs no earlier steps. Only the state, the indexes and the tail are touched, so the cost does not
grow with the length of the session.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from ..record.statetext import state_lines
from ..record.transcript import LATEST_PROMPTS, SILENT_KINDS, Entry, Snapshot, Transcript
from ..redact import Redactor, strip_reasoning
from ..textutil import error_line, first_line, refers_back, shorten

FIRST_PROMPT_CHARS = 600
SUMMARY_CHARS = 600
EARLIER_PROMPT_CHARS = 300
#: Earlier prompts the framing may list (the newest ones; each snapshot holds this many). The
#: framing's room, half the cap, is the limit that binds when they are long.
EARLIER_PROMPTS = LATEST_PROMPTS - 1
#: An earlier turn's error, beside its prompt in the framing.
TURN_ERROR_CHARS = 160
#: Different errors one framing prompt carries at most (the newest); more are counted.
TURN_ERRORS = 3
#: How far from each end of an earlier turn its outcome is looked for (turns end with it; the
#: bound keeps the framing's cost from growing with the length of the turns).
TURN_SCAN = 64
EXTRAS_CHARS = 500
TEXT_CHARS = 1200
TOOL_CALL_CHARS = 200
TOOL_RESULT_CHARS = 300
CODE_HEAD_CHARS = 160
ERROR_CHARS = 240
#: How many turns back a run of follow-ups that point back ("continue", "and now?") reaches.
REACH_TURNS = 2
#: The room for the steps of those earlier turns (the latest turn has the rest of the cap).
EARLIER_TURNS_CHARS = 1500

FRAMING_HEADER = "Task framing"
RECENT_HEADER = "Recent activity (oldest first)"
OMITTED = "… (earlier steps omitted)"
#: The line of a prompt the recent detail shows again later: the text once is enough.
ASKED_AGAIN = "User: (asked again below)"
# A framing line shortened to less than this says too little to be worth its room.
_MIN_FRAMING_LINE = 60


def _line(clean: Redactor, text: str, limit: int) -> str:
    """Redact, flatten and cut ``text`` to ``limit`` characters.

    Redaction only looks at a generous head: the regexes are the costly part of building a
    context, and nothing past the cut can reach the model anyway. The head ends where no secret
    can be cut in two (see :meth:`Redactor.head`), so no piece of one slips past the patterns.
    """
    head, cut = clean.head(text, 2 * limit + 200)
    line = shorten(head, limit)
    if cut and not line.endswith("…"):
        line = shorten(head + " …", limit)  # the model must not take a cut text for all of it
    return line


def _error(clean: Redactor, error: str, limit: int) -> str:
    """``error`` on one line of at most ``limit`` characters, led by the line that names what
    went wrong (a traceback names it last, and only the head of an error fits).

    The whole error is redacted before a line is taken out of it: a line of a private key
    alone no longer looks like one. Errors are bounded when recorded, so this stays cheap.
    """
    redacted = clean(error)
    telling = error_line(redacted)
    if telling != first_line(redacted):
        redacted = f"{telling} — {redacted}"
    return shorten(redacted, limit)


def render_entry(entry: Entry, clean: Redactor) -> str | None:
    """One transcript line for ``entry``, or None for entries the model never sees."""
    kind = entry.kind
    if kind in SILENT_KINDS or kind == "summary":
        return None
    if kind == "user":
        return "User: " + _line(clean, entry.text, TEXT_CHARS)
    if kind == "assistant":
        return "Assistant: " + _line(clean, strip_reasoning(entry.text), TEXT_CHARS)
    if kind == "tool_call":
        return "Tool call: " + _line(clean, f"{entry.name}({entry.text})", TOOL_CALL_CHARS)
    if kind == "tool_result":
        if entry.error:
            return f"Tool error ({entry.name}): " + _error(clean, entry.error, TOOL_RESULT_CHARS)
        return f"Tool result ({entry.name}): " + _line(clean, entry.text, TOOL_RESULT_CHARS)
    if kind == "code":
        label = f"In[{entry.count}]" if entry.count is not None else "Cell"
        head = _line(clean, first_line(entry.text), CODE_HEAD_CHARS)
        lines = entry.text.strip().count("\n") + 1
        more = f" (+{lines - 1} lines)" if lines > 1 else ""
        error = entry.error and _error(clean, entry.error, ERROR_CHARS)
        status = f" → error: {error}" if error else " → ok"
        return f"{label}: {head}{more}{status}"
    if kind == "event":
        return "Event: " + _line(clean, entry.text, ERROR_CHARS)
    if kind == "outcome":
        if entry.outcome == "aborted":
            return "Turn aborted (interrupted before it finished)."
        if entry.outcome == "errored":
            return "Turn errored: " + _line(clean, entry.error or "unknown error", ERROR_CHARS)
        return None
    return None


def build_context(
    transcript: Transcript,
    *,
    max_chars: int = 12000,
    extras: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> str:
    """The exact, capped text a model would see for a recap of ``transcript``.

    ``extras`` are short framing lines (task list, memory notes) that share a small fixed budget.
    Returns an empty string when the transcript has nothing a model should see.
    """
    clean = Redactor(env)
    with transcript.locked() as entries:
        snap = transcript.snapshot()
        # The framing orients; the recent detail is what the recap is about. At most half the
        # cap goes to the framing, so a long one never crowds out the latest prompt.
        limit = max_chars // 2
        adjacent = snap.prompt_count == len(snap.prompts)
        facts = state_lines(transcript.state, env, prompts_framed=True)
        framing = _framing(
            entries, snap.prompts, snap.summary, extras, clean, limit, adjacent, facts=facts
        )
        used = len(framing) + 2 if framing else 0  # the framing and the blank line after it
        budget = max_chars - used - len(RECENT_HEADER)  # each line costs its length + "\n"
        reach = _reach(entries, snap.prompts)
        recent, shown = _recent(entries, snap, budget, clean, reach)
        if framing and shown.intersection(snap.prompts[1:-1]):
            # Prompts the recent detail reached say it there: once is enough. (Without them an
            # older prompt the first framing had no room for may come back: the recent detail
            # was sized for the first one, so a longer framing is not taken.)
            fewer = _framing(
                entries, snap.prompts, snap.summary, extras, clean, limit, adjacent, shown, facts
            )
            framing = fewer if len(fewer) <= len(framing) else framing
    if not recent and not framing:
        return ""
    parts = [framing] if framing else []
    parts.append(RECENT_HEADER + "\n" + "\n".join(recent))
    # Every part was sized to fit; the cut is only a backstop for caps too small to hold one.
    return "\n\n".join(parts)[:max_chars]


def _framing(
    entries: list[Entry],
    prompts: Sequence[int],
    summary_index: int | None,
    extras: Sequence[str],
    clean: Redactor,
    limit: int,
    adjacent: bool,
    shown: AbstractSet[int] = frozenset(),
    facts: Sequence[str] = (),
) -> str:
    """The task framing in at most ``limit`` characters ("" when there is none), leaving out
    the earlier prompts in ``shown`` (the recent detail has them; the original task stays, as
    the one line that says what the session is for).

    A prompt asked again (a rerun agent cell) is mentioned once, saying how often it was
    asked, and each prompt carries how its turns went wrong: an earlier prompt without its
    error reads as a step that worked. ``adjacent`` says whether ``prompts[1]`` is the prompt
    after the first (else the snapshot left prompts out between them).

    Over the limit, the least telling lines go first: earlier prompts (oldest first), then
    the extras (last first); then the summary and the original task are shortened.
    """
    first = summary = None
    first_said = ""
    mentions = _mentions(entries, prompts, adjacent, shown)
    if len(prompts) > 1:
        first_said = _said(mentions.pop(prompts[0]), clean)
        text = _line(clean, entries[prompts[0]].text, FIRST_PROMPT_CHARS)
        first = "Original task: " + text + first_said
    if summary_index is not None:
        summary_text = entries[summary_index].text
        summary = "Latest summary: " + _line(clean, summary_text, SUMMARY_CHARS)
    earlier = [
        "- " + _line(clean, entries[i].text, EARLIER_PROMPT_CHARS) + _said(mention, clean)
        for i, mention in mentions.items()
    ]
    notes: list[str] = []
    used = 0
    for extra in extras:
        line = _line(clean, extra, EXTRAS_CHARS - used)
        if not line or used + len(line) > EXTRAS_CHARS:
            break
        notes.append(line)
        used += len(line) + 1

    def render() -> str:
        lines = [line for line in (first, summary) if line]
        lines += facts
        if earlier:
            lines += ["Earlier prompts:", *earlier]
        lines += notes
        return FRAMING_HEADER + "\n" + "\n".join(lines) if lines else ""

    text = render()
    while len(text) > limit and earlier:
        earlier.pop(0)
        text = render()
    while len(text) > limit and notes:
        notes.pop()
        text = render()
    if len(text) > limit and summary:
        room = len(summary) - (len(text) - limit)
        summary = shorten(summary, room) if room >= _MIN_FRAMING_LINE else None
        text = render()
    if len(text) > limit and first:
        # The task is shortened, not what its turns ended with.
        room = len(first) - (len(text) - limit) - len(first_said)
        head = first.removesuffix(first_said)
        first = shorten(head, room) + first_said if room >= _MIN_FRAMING_LINE else None
        text = render()
    return text if len(text) <= limit else ""


def _prompt_key(entry: Entry) -> str:
    """What makes two prompts the same: their words, however spaced."""
    return " ".join(entry.text.split())


class _Mention:
    """One framing prompt: how many times it was asked, and how its turns went wrong."""

    __slots__ = ("aborted", "asked", "errors")

    def __init__(self) -> None:
        self.asked = 0
        self.errors: dict[str, int] = {}
        """Each error its turns ended with, and how many turns; the newest last."""
        self.aborted = 0


def _said(mention: _Mention, clean: Redactor) -> str:
    """What a framing prompt's line adds after the prompt: "" for a prompt asked once whose
    turn did not go wrong, else e.g. " (asked 8 times; turn errored 7 times: KeyError: 'x')"."""
    parts = [f"asked {mention.asked} times"] if mention.asked > 1 else []
    errors = list(mention.errors.items())
    for error, turns in errors[-TURN_ERRORS:]:
        times = f" {turns} times" if turns > 1 else ""
        parts.append(f"turn errored{times}: " + _error(clean, error, TURN_ERROR_CHARS))
    if len(errors) > TURN_ERRORS:
        more = len(errors) - TURN_ERRORS
        parts.append(f"{more} other error{'s' if more > 1 else ''}")
    if mention.aborted:
        times = f" {mention.aborted} times" if mention.aborted > 1 else ""
        parts.append(f"turn interrupted{times}")
    return f" ({'; '.join(parts)})" if parts else ""


def _mentions(
    entries: list[Entry],
    prompts: Sequence[int],
    adjacent: bool,
    shown: AbstractSet[int],
) -> dict[int, _Mention]:
    """The framing's prompts, each text once: the first prompt's index (when there are two or
    more), then the earlier prompts' in the order they were last asked.

    A prompt asked again is counted wherever it was asked (the latest prompt too) and listed
    where it was last asked before the latest prompt, or with the first prompt when it is the
    same text. Earlier prompts the recent detail shows (``shown``) are left out, and so are the
    errors whose line it shows; a prompt whose every mention it shows is not listed.
    """
    if len(prompts) < 2:
        return {}
    window = list(prompts[1:-1])[-EARLIER_PROMPTS:]
    keys = {i: _prompt_key(entries[i]) for i in (prompts[0], *window, prompts[-1])}
    first = keys[prompts[0]]
    where: dict[str, int] = {first: prompts[0]}  # each text: the index it is listed at
    for index in window:
        if keys[index] != first and index not in shown:
            where[keys[index]] = index  # chronological: the latest occurrence wins
    mentions = {index: _Mention() for index in sorted(where.values())}
    for index in (prompts[0], *window, prompts[-1]):
        mention = mentions.get(where.get(keys[index], -1))
        if mention is None:
            continue
        mention.asked += 1
        if index == prompts[-1]:
            continue  # the recent detail has the latest turn
        position = prompts.index(index)
        ended = _outcome(entries, index, prompts[position + 1], adjacent or position > 0)
        if ended is None or ended in shown:
            continue
        outcome = entries[ended]
        if outcome.outcome == "errored":
            error = outcome.error or "unknown error"
            mention.errors[error] = mention.errors.pop(error, 0) + 1
        elif outcome.outcome == "aborted":
            mention.aborted += 1
    return mentions


def _outcome(entries: list[Entry], prompt: int, following: int, adjacent: bool) -> int | None:
    """The index of the outcome of the turn ``prompt`` started, when it is close to either end.

    ``following`` is the next prompt the snapshot lists; ``adjacent`` says whether it is the
    very next prompt (only then can the turn's end be looked for from there back).
    """
    for index in range(prompt + 1, min(following, prompt + 1 + TURN_SCAN)):
        kind = entries[index].kind
        if kind == "outcome":
            return index
        if kind == "user":
            return None
    if adjacent:
        for index in range(following - 1, max(prompt + TURN_SCAN, following - 1 - TURN_SCAN), -1):
            if entries[index].kind == "outcome":
                return index
    return None


def _visible(entry: Entry) -> bool:
    """Whether :func:`render_entry` gives ``entry`` a line (without rendering it)."""
    kind = entry.kind
    if kind in SILENT_KINDS or kind == "summary":
        return False
    return kind != "outcome" or entry.outcome in ("errored", "aborted")


def _reach(entries: list[Entry], prompts: Sequence[int]) -> int:
    """Where the newest steps may reach back to: the latest prompt, or, when it points back
    ("continue", "it failed, see above", "do the same for B"), the prompt it refers to.

    A follow-up that points back reaches one turn further per prompt that points back, up
    to :data:`REACH_TURNS` turns: "and now?" after "continue" needs the turn "continue"
    went on from. A prompt that says what to do needs nothing before it but the framing (the
    original task, the earlier prompts) and the failures no later run fixed, which are kept
    wherever they are. Sessions without prompts (cells alone) have no turns to stop at.
    """
    if not prompts:
        return 0
    position = len(prompts) - 1
    while position > 0 and len(prompts) - 1 - position < REACH_TURNS:
        if not refers_back(entries[prompts[position]].text):
            break
        position -= 1
    return prompts[position]


def _recent(
    entries: list[Entry], snap: Snapshot, budget: int, clean: Redactor, reach: int = 0
) -> tuple[list[str], set[int]]:
    """The recent detail in at most ``budget`` characters, and the indexes it shows.

    The latest prompt always has a line (its head, when not even that fits); failures that no
    later run fixed are the framing's (the state keeps them from any round). The rest is the newest
    lines, walking back from the end while they fit whole, down to ``reach`` (see
    :func:`_reach`); lines of turns before the latest prompt share
    :data:`EARLIER_TURNS_CHARS`. Lines stay in the order they happened; a marker stands
    wherever steps were left out. ``budget`` counts each line with its line break.
    """
    gap = len(OMITTED) + 1
    last = snap.prompts[-1] if snap.prompts else None
    # Lines kept whatever the walk reaches. Each reserves room for the marker that may follow
    # it; the room comes back when the walk reaches it and no steps are left out after it.
    pinned: dict[int, str] = {}
    if last is not None:
        line = render_entry(entries[last], clean)
        if line:
            room = budget - (gap if snap.size > last + 1 else 0)
            if len(line) + 1 > room:
                line = shorten(line, max(room - 1, 1))
            pinned[last] = line
            budget -= len(line) + 1 + gap
    walked: list[int] = []
    shown: dict[int, str] = {}
    index = snap.size - 1
    # Earlier turns get a small room of their own: a follow-up that points back needs how
    # the turn before it ended, not all of that turn's steps.
    earlier = EARLIER_TURNS_CHARS
    while index >= reach:
        if index in pinned:
            budget += gap
        elif _visible(entries[index]):
            line = render_entry(entries[index], clean)
            if line is not None:
                cost = len(line) + 1
                before = last is not None and index < last
                if cost > budget or (before and cost > earlier):
                    break
                shown[index] = line
                walked.append(index)
                budget -= cost
                if before:
                    earlier -= cost
        index -= 1
    if index >= reach:
        # Never open on a tool result whose call was cut away: the model would misread it.
        while walked and entries[walked[-1]].kind == "tool_result":
            del shown[walked.pop()]
    shown.update(pinned)
    # A prompt asked again (a rerun agent cell) is said in full once, where it was last asked;
    # one shorter than saying so stays (the walk paid for each line as it was).
    said: set[str] = set()
    for index in sorted((i for i in shown if entries[i].kind == "user"), reverse=True):
        key = _prompt_key(entries[index])
        if key in said and len(shown[index]) > len(ASKED_AGAIN):
            shown[index] = ASKED_AGAIN
        said.add(key)
    order = sorted(shown)
    lines: list[str] = []
    for previous, current in itertools.pairwise([-1, *order]):
        if previous >= 0 and _any_visible(entries, previous + 1, current):
            lines.append(OMITTED)
        lines.append(shown[current])
    if order and _any_visible(entries, order[-1] + 1, snap.size):
        lines.append(OMITTED)  # only when a pinned line is newer than every line the walk kept
    if not order and _any_visible(entries, 0, snap.size):
        # Nothing kept: the newest step alone is over the room, or the walk kept only tool
        # results and then dropped them (their calls were cut away). Say steps were left out;
        # an empty context would read as a session with nothing to recap.
        lines.append(OMITTED)
    return lines, set(order)


def _any_visible(entries: list[Entry], start: int, stop: int) -> bool:
    """Whether any of ``entries[start:stop]`` has a line (stops at the first; no copy)."""
    return any(_visible(entries[i]) for i in range(start, stop))


def fingerprint(context: str) -> str:
    """A short stable digest of a context: equal text, equal fingerprint (dedupe key)."""
    return hashlib.sha256(context.encode("utf-8")).hexdigest()[:20]
