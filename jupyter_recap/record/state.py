"""A session's state, folded entry by entry: what a person coming back must learn.

The transcript is the story in order; the state is what it adds up to. :class:`StateFolder`
reads each entry once, whatever recorded it (agent cells, SDK capture, chats, CLI hooks), in
bounded time, and keeps:

- **asks**: the first, each correction of it, the latest. A short "yes" is no new task: it
  accepts what the agent proposed just before, which becomes a **decision** (as do decisions
  the person states: "let's use DuckDB");
- **constraints** the person set ("never …", "keep … unchanged", "under 200 EUR");
- **failures** keyed by what failed: a tool and the thing it worked on, a cell, an agent turn.
  What failed and its error line come from the entry's structure (the tool's name, its call's
  arguments, the error's type), never from splitting a text. A failure is closed only by a
  later success of the same key, or by the person saying it is fixed or to ignore it; a
  correction of the ask supersedes the failures of the round it corrects;
- **artifacts**: the files and cells the agent's tools changed, with counts;
- **waiting**: a tool call waiting for the person's approval, a turn still running, and a
  question the agent asked that nobody answered yet;
- **next**: the step the agent said comes next, until a later ask replaces it or a tool that
  does it succeeds.

Every list is capped (the ``MAX_*`` constants) and every text cut, so a state costs the same in
any session. Texts are kept as recorded and redacted when rendered (:func:`render_state`).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from ..redact import Redactor, redact_shapes
from ..textutil import refers_back, shorten
from . import phrases
from .entry import Entry, first_code_line
from .toolcalls import (
    CELL_KEYS,
    TARGET_CHARS,
    does_step,
    error_text,
    is_changing,
    names_a_thing,
    names_code_only,
    target_of,
)

#: Corrections of the task remembered (the newest).
MAX_CORRECTIONS = 4
#: Decisions remembered (the newest).
MAX_DECISIONS = 8
#: Constraints remembered: the first ones set, and the newest ones after them.
MAX_CONSTRAINTS = 12
#: Open failures tracked; past this the oldest is forgotten (the least likely to matter).
MAX_FAILURES = 64
#: Failures superseded by a corrected ask, remembered (the newest).
MAX_SUPERSEDED = 4
#: Changed files and cells tracked (the most recently changed).
MAX_ARTIFACTS = 32
#: Tools and cells whose latest target or ``In[n]`` is remembered, for keys and labels.
MAX_NAMES = 256

#: Characters kept of an ask (the sentence that asks may come after a preamble), and shown.
ASK_CHARS = 600
SHOWN_ASK_CHARS = 240
#: Characters kept of the latest reply, the latest summary and the latest cell's first line.
REPLY_CHARS = 600
SUMMARY_CHARS = 600
CELL_CHARS = 120
#: Characters kept of a decision, a constraint, a next step, an error line.
DECISION_CHARS = 240
CONSTRAINT_CHARS = 200
STEP_CHARS = 180
ERROR_CHARS = 200
WAITING_CHARS = 200

#: How many of each list :func:`render_state` shows.
SHOWN_FAILURES = 6
SHOWN_ARTIFACTS = 8
SHOWN_DECISIONS = 5
SHOWN_CONSTRAINTS = 8

FailureKind = Literal["tool", "cell", "turn"]
_Key = tuple[FailureKind, str, str]


@dataclass(frozen=True, slots=True)
class Ask:
    """Something the person asked: ``number`` counts the prompts from 1."""

    text: str
    number: int


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision: a proposal the person accepted (``accepted_by`` their words), or one they
    stated themselves (``accepted_by`` None)."""

    text: str
    accepted_by: str | None
    ask: int


@dataclass(frozen=True, slots=True)
class Failure:
    """Something that failed and that nothing since fixed."""

    kind: FailureKind
    key: tuple[str, str]
    """What failed: (tool, target) with ``target`` "" when the call names none; (cell id, else
    its first code line, ""); for a turn (``cell:<id>`` of its agent cell, else ``ask:<prompt>``,
    "") — a rerun of the cell, or a "try again", is the same turn."""
    label: str
    """For people: ``run_sql (billing_v2.invoices)``, ``In[7]``, ``the agent turn``."""
    error: str
    """The line that says what went wrong (``IntegrityError: …``), uncut by any ": "."""
    cell_id: str | None
    count: int | None
    """The ``In[n]`` of the cell it happened in, when known."""
    ask: int
    times: int = 1
    code: str = ""
    """A failed cell's first code line (what a person recognises it by)."""
    named: bool = True
    """Whether the key names a thing (a file, a table, an id, a cell, a turn), not code known
    only by its first line: once later rounds went on, only a named failure is news."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """A file or cell the agent's tools changed."""

    target: str
    kind: Literal["file", "cell"]
    changes: int
    tool: str


@dataclass(frozen=True, slots=True)
class SessionState:
    """A snapshot of a session's state (see the module docstring)."""

    entries: int = 0
    first_ask: Ask | None = None
    corrections: tuple[Ask, ...] = ()
    latest_ask: Ask | None = None
    decisions: tuple[Decision, ...] = ()
    constraints: tuple[str, ...] = ()
    open_failures: tuple[Failure, ...] = ()
    """Oldest first."""
    superseded: tuple[Failure, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    """Most recently changed last."""
    approval: str | None = None
    """What a tool call waits for the person to approve."""
    running: Ask | None = None
    """The ask whose turn has not ended."""
    question: str | None = None
    """What the agent proposed or asked that the person has not answered yet."""
    next_step: str | None = None
    summary: str | None = None
    """The latest compaction summary: the task as distilled up to then."""
    summary_ask: int = 0
    """How many asks came before it (a correction after it changes the task again)."""
    reply: str | None = None
    """The agent's latest reply (its head, lines kept)."""
    reply_current: bool = False
    """Whether that reply came after the latest prompt (else a new ask has none yet)."""
    told: str | None = None
    """The first reply after the newest failure: what the agent made of it."""
    ended: Literal["ok", "errored", "aborted"] | None = None
    """How the latest agent turn ended (None while none has)."""
    ended_after_reply: bool = False
    """Whether that end came after the latest reply (an interruption it did not see)."""
    last_cell: str | None = None
    """The first code line of the latest cell run (sessions of cells alone)."""

    @property
    def task(self) -> Ask | None:
        """The task as it stands: the latest correction, else the first ask."""
        return self.corrections[-1] if self.corrections else self.first_ask

    @property
    def empty(self) -> bool:
        return self.first_ask is None and not self.open_failures and self.approval is None


@dataclass(slots=True)
class _Open:
    failure: Failure
    round: int
    """The prompt count when it (last) failed: a correction supersedes its own round only."""
    turn: int
    """The turn it failed in: code known only by its first line is fixed by the same tool
    succeeding later in that turn (the agent corrected the code and ran it again)."""


@dataclass(slots=True)
class StateFolder:
    """Folds entries into a :class:`SessionState`, one at a time (:meth:`add`), in bounded time
    per entry; :attr:`state` is a snapshot."""

    entries: int = 0
    asks: int = 0
    first_ask: Ask | None = None
    corrections: deque[Ask] = field(default_factory=lambda: deque(maxlen=MAX_CORRECTIONS))
    latest_ask: Ask | None = None
    decisions: deque[Decision] = field(default_factory=lambda: deque(maxlen=MAX_DECISIONS))
    early_rules: list[str] = field(default_factory=list)
    late_rules: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_CONSTRAINTS // 2))
    rule_keys: set[str] = field(default_factory=set)
    failures: dict[_Key, _Open] = field(default_factory=dict)
    superseded: deque[Failure] = field(default_factory=lambda: deque(maxlen=MAX_SUPERSEDED))
    artifacts: dict[tuple[str, str], Artifact] = field(default_factory=dict)
    targets: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Each tool's latest call: (argument name, target) (empty when it names none)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Each cell's latest ``In[n]``."""
    proposal: str | None = None
    approval: str | None = None
    running: Ask | None = None
    turn_key: str = ""
    """What the running turn is: its cell id, else its ask (a rerun has the same)."""
    retried_turn: _Key | None = None
    next_step: str | None = None
    summary: str | None = None
    summary_ask: int = 0
    reply: str | None = None
    reply_current: bool = False
    told: str | None = None
    awaiting_told: bool = False
    ended: Literal["ok", "errored", "aborted"] | None = None
    ended_after_reply: bool = False
    last_cell: str | None = None
    turns: int = 0
    """Prompts so far, retries and acceptances too: each starts a turn."""
    retyped: dict[_Key, str] = field(default_factory=dict)
    """Failed cells without an id, by their first code line: typed again, fixed."""

    def add(self, entry: Entry) -> None:
        """Fold one entry in."""
        self.entries += 1
        kind = entry.kind
        if kind == "tool_call":
            self._tool_call(entry)
        elif kind == "tool_result":
            self._tool_result(entry)
        elif kind == "assistant":
            self._reply(entry)
        elif kind == "user":
            self._prompt(entry)
        elif kind == "code":
            self._code(entry)
        elif kind == "outcome":
            self._outcome(entry)
        elif kind == "event":
            self._event(entry)
        elif kind == "summary":
            self.summary = _head(entry.text, SUMMARY_CHARS)
            self.summary_ask = self.asks

    def extend(self, entries: Iterable[Entry]) -> StateFolder:
        for entry in entries:
            self.add(entry)
        return self

    @property
    def state(self) -> SessionState:
        rules = [*self.early_rules, *self.late_rules]
        return SessionState(
            entries=self.entries,
            first_ask=self.first_ask,
            corrections=tuple(self.corrections),
            latest_ask=self.latest_ask,
            decisions=tuple(self.decisions),
            constraints=tuple(rules),
            open_failures=tuple(self._placed(item.failure) for item in self.failures.values()),
            superseded=tuple(self.superseded),
            artifacts=tuple(self.artifacts.values()),
            approval=self.approval,
            running=self.running if self.approval is None else None,
            question=self.proposal,
            next_step=self.next_step,
            summary=self.summary,
            summary_ask=self.summary_ask,
            reply=self.reply,
            reply_current=self.reply_current,
            told=self.told,
            ended=self.ended,
            ended_after_reply=self.ended_after_reply,
            last_cell=self.last_cell,
        )

    def _placed(self, failure: Failure) -> Failure:
        """``failure`` with the ``In[n]`` its cell got after it failed (an agent cell's count
        comes with the turn's outcome, after its tools ran)."""
        if failure.count is not None or failure.cell_id is None:
            return failure
        count = self.counts.get(failure.cell_id)
        return failure if count is None else replace(failure, count=count)

    # -- the person ---------------------------------------------------------------------------

    def _prompt(self, entry: Entry) -> None:
        text = entry.text.strip()
        self.turns += 1
        self.reply_current = False
        self.ended = None  # the turn it starts has not ended
        self.approval = None
        proposal, self.proposal = self.proposal, None
        self.retried_turn = None
        if self.latest_ask is not None and phrases.is_acceptance(text):
            # "Agreed, do it." is no new task: it makes what the agent proposed a decision.
            if proposal is not None:
                self.decisions.append(
                    Decision(_piece(proposal, DECISION_CHARS), _piece(text, 60), self.asks)
                )
            self._turn_started(entry, self.latest_ask)
            return
        if self.latest_ask is not None and phrases.is_retry(text):
            # "Try again": the same ask, and the turn that errored runs again.
            self.retried_turn = self._latest_turn_failure()
            self._turn_started(entry, self.latest_ask)
            return
        self.asks += 1
        ask = Ask(_piece(text, ASK_CHARS), self.asks)
        self.latest_ask = ask
        if not refers_back(text):
            self.next_step = None  # a new ask replaces the step the agent had in mind ...
        # ... "continue", "go on, see above" asks for it
        if self.first_ask is None:
            self.first_ask = ask
        elif phrases.corrects(text):
            self.corrections.append(ask)
            self._supersede(self.asks - 1)
        if phrases.says_fixed(text):
            self._person_closes(text)
        for rule in phrases.rules(text):
            self._constraint(rule)
        decided = phrases.stated_decision(text)
        if decided is not None:
            self.decisions.append(Decision(_piece(decided, DECISION_CHARS), None, self.asks))
        self._turn_started(entry, ask)

    def _turn_started(self, entry: Entry, ask: Ask | None) -> None:
        self.running = ask
        if entry.cell_id:
            self.turn_key = "cell:" + entry.cell_id
        elif self.retried_turn is None:
            self.turn_key = "ask:" + " ".join(entry.text.casefold().split())[:120]

    def _constraint(self, rule: str) -> None:
        key = " ".join(re.sub(r"[^\w\s]", " ", rule.casefold()).split())
        if not key or key in self.rule_keys:
            return
        self.rule_keys.add(key)
        text = _piece(rule, CONSTRAINT_CHARS)
        if len(self.early_rules) < MAX_CONSTRAINTS - MAX_CONSTRAINTS // 2:
            self.early_rules.append(text)
            return
        if len(self.late_rules) == self.late_rules.maxlen:
            dropped = self.late_rules[0]
            self.rule_keys.discard(" ".join(re.sub(r"[^\w\s]", " ", dropped.casefold()).split()))
        self.late_rules.append(text)

    def _supersede(self, round_: int) -> None:
        """A corrected ask: the failures of the round it corrects no longer count."""
        for key in [k for k, item in self.failures.items() if item.round >= round_]:
            self.superseded.append(self.failures.pop(key).failure)

    def _person_closes(self, text: str) -> None:
        """ "It's fixed" / "ignore that": the failures the prompt names, else the newest."""
        if not self.failures:
            return
        said = text.casefold()
        named = [
            key
            for key, item in self.failures.items()
            if any(
                part and part.casefold() in said
                for part in (*item.failure.key, _in(item.failure.count))
            )
        ]
        for key in named or [next(reversed(self.failures))]:
            del self.failures[key]

    def _latest_turn_failure(self) -> _Key | None:
        for key in reversed(self.failures):
            if key[0] == "turn":
                return key
        return None

    # -- the agent ---------------------------------------------------------------------------

    def _reply(self, entry: Entry) -> None:
        text = entry.text
        self.reply = _head(text, REPLY_CHARS)
        self.reply_current = True
        self.ended_after_reply = False
        if self.awaiting_told:
            self.told, self.awaiting_told = self.reply, False
        step = phrases.next_step(text)
        if step is not None:
            self.next_step = _piece(step, STEP_CHARS)
        proposed = phrases.proposal(text)
        if proposed is not None:
            self.proposal = proposed

    def _tool_call(self, entry: Entry) -> None:
        name = entry.name or "tool"
        _remember(self.targets, name, target_of(entry.text))

    def _tool_result(self, entry: Entry) -> None:
        name = entry.name or "tool"
        argument, target = self.targets.get(name, ("", ""))
        self.approval = None
        key: _Key = ("tool", name, target)
        if entry.error:
            named = bool(target) and not names_code_only(argument, target)
            label = f"{name} ({target})" if named else name
            self._failed(key, label, entry, error_text(redact_shapes(entry.error)), named=named)
            return
        self.failures.pop(key, None)
        self._retried_here(name)
        if names_a_thing(argument) and target and is_changing(name):
            kind: Literal["file", "cell"] = "cell" if argument in CELL_KEYS else "file"
            self._changed((kind, target), name)
        if self.next_step is not None and does_step(name, self.next_step):
            self.next_step = None

    def _code(self, entry: Entry) -> None:
        cell = entry.cell_id or first_code_line(entry.text)
        self.last_cell = first_code_line(entry.text)[:CELL_CHARS] or None
        if entry.cell_id and entry.count is not None:
            _remember(self.counts, entry.cell_id, entry.count)
        key: _Key = ("cell", cell, "")
        if entry.error:
            label = _in(entry.count) or shorten(first_code_line(entry.text), 60) or "a cell"
            code = first_code_line(entry.text)[:CELL_CHARS]
            self._failed(key, label, entry, error_text(redact_shapes(entry.error)), code=code)
            if entry.cell_id is None and cell:
                _remember(self.retyped, key, cell)
        else:
            self.failures.pop(key, None)
            if self.retyped and entry.cell_id is None:
                # Without cell ids (terminal IPython) a fixed cell is typed again as a new
                # one: a later cell that ran cleanly holding the failed one's line fixed it.
                for failed, line in list(self.retyped.items()):
                    if line in entry.text:
                        del self.retyped[failed]
                        self.failures.pop(failed, None)

    def _outcome(self, entry: Entry) -> None:
        if entry.cell_id and entry.count is not None:
            _remember(self.counts, entry.cell_id, entry.count)
        ask, self.running = self.running, None
        self.approval = None
        if entry.outcome is not None:
            self.ended = entry.outcome
            self.ended_after_reply = True
        key: _Key = self.retried_turn or ("turn", self.turn_key, "")
        if entry.outcome == "errored":
            label = f"the agent turn for {shorten(ask.text, 60)!r}" if ask else "an agent turn"
            self._failed(key, label, entry, error_text(redact_shapes(entry.error or "errored")))
        elif entry.outcome == "ok":
            self.failures.pop(key, None)
            self.failures.pop(("turn", self.turn_key, ""), None)
        self.retried_turn = None

    def _event(self, entry: Entry) -> None:
        waiting = _approval().search(entry.text)
        if waiting is not None:
            self.approval = _piece(waiting.group("what"), WAITING_CHARS)

    # -- bookkeeping -------------------------------------------------------------------------

    def _retried_here(self, tool: str) -> None:
        """``tool`` succeeded: its failures of this turn known only by their code are fixed."""
        for key in [
            key
            for key, item in self.failures.items()
            if key[0] == "tool"
            and key[1] == tool
            and not item.failure.named
            and item.turn == self.turns
        ]:
            del self.failures[key]

    def _failed(
        self,
        key: _Key,
        label: str,
        entry: Entry,
        error: str,
        *,
        named: bool = True,
        code: str = "",
    ) -> None:
        earlier = self.failures.pop(key, None)
        cell = entry.cell_id
        count = entry.count if entry.count is not None else self.counts.get(cell or "")
        failure = Failure(
            kind=key[0],
            key=(key[1], key[2]),
            label=_piece(label, TARGET_CHARS + 40),
            error=_piece(error, ERROR_CHARS),
            cell_id=cell,
            count=count,
            ask=self.asks,
            times=earlier.failure.times + 1 if earlier is not None else 1,
            named=named,
            code=code,
        )
        self.failures[key] = _Open(failure, self.asks, self.turns)
        self.told, self.awaiting_told = None, True
        if key[0] == "tool":
            # The step proposed before the agent's tool failed is stale. (A cell is the
            # person's; an errored turn ends after the replies that reacted to its failures.)
            self.next_step = None
        if len(self.failures) > MAX_FAILURES:
            del self.failures[next(iter(self.failures))]

    def _changed(self, key: tuple[Literal["file", "cell"], str], tool: str) -> None:
        before = self.artifacts.pop(key, None)
        changes = before.changes + 1 if before is not None else 1
        self.artifacts[key] = Artifact(key[1], key[0], changes, tool)
        if len(self.artifacts) > MAX_ARTIFACTS:
            del self.artifacts[next(iter(self.artifacts))]


_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(table: dict[_K, _V], key: _K, value: _V) -> None:
    """Set ``table[key]`` as its newest entry, forgetting the oldest past :data:`MAX_NAMES`."""
    table.pop(key, None)
    table[key] = value
    if len(table) > MAX_NAMES:
        del table[next(iter(table))]


def fold(entries: Iterable[Entry]) -> SessionState:
    """The state of a session whose entries are ``entries`` (oldest first)."""
    return StateFolder().extend(entries).state


# -- reading an entry's structure --------------------------------------------------------------


@functools.cache
def _approval() -> re.Pattern[str]:
    return re.compile(
        r"(?:is\s+waiting\s+for\s+your\s+approval|asked\s+for\s+your\s+approval)\s*:\s*"
        r"(?P<what>.+?)(?:\s+\(a\s+%%ai\s+cell\s+has\s+no\s+way\s+to\s+give\s+it\))?$"
    )


def _piece(text: str, limit: int) -> str:
    """``text`` on one line, cut to about ``limit`` characters at a space: a secret holds no
    space, so no piece of one is left for redaction (at rendering) to miss."""
    flat = " ".join(text[: 4 * limit].split())
    if len(flat) <= limit:
        return flat
    space = flat.rfind(" ", 0, limit)
    return (flat[:space] if space > limit // 3 else flat[:limit].rsplit(None, 1)[0]) + " …"


def _head(text: str, limit: int) -> str:
    """The head of ``text``, its lines kept, cut at a space like :func:`_piece` (a secret
    holds no space: redaction at rendering sees it whole or not at all)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 3 else "") + " …"


def _in(count: int | None) -> str:
    return f"In[{count}]" if count is not None else ""


# -- rendering ---------------------------------------------------------------------------------


def render_state(state: SessionState, env: Mapping[str, str] | None = None) -> str:
    """The state as plain text for a person: the task, decisions, constraints, open failures
    (with the cell each happened in), what changed, what waits, next. Redacted."""
    if state.empty:
        return "No agent session recorded yet: no prompt, no failure, nothing waiting."
    clean = Redactor(env)

    def say(text: str, limit: int) -> str:
        return shorten(clean(text), limit)

    lines: list[str] = []
    task = state.task
    if task is not None:
        lines.append(f"Task: {say(task.text, SHOWN_ASK_CHARS)}")
        if state.corrections and state.first_ask is not None:
            lines.append(f"  (changed; first asked: {say(state.first_ask.text, SHOWN_ASK_CHARS)})")
    latest = state.latest_ask
    if latest is not None and task is not None and latest.number != task.number:
        lines.append(f"Latest ask: {say(latest.text, SHOWN_ASK_CHARS)}")
    lines += state_lines(state, env, clean=clean)
    if state.running is not None:
        lines.append(f"Still running: the turn for {say(state.running.text, 80)!r}")
    return "\n".join(lines)


def state_lines(
    state: SessionState,
    env: Mapping[str, str] | None = None,
    *,
    clean: Redactor | None = None,
    prompts_framed: bool = False,
) -> list[str]:
    """The state past its task, as lines (redacted): decisions with what accepted them,
    constraints, open failures, what changed, what waits, the next step. A model's context
    frames the task itself (the first prompt, the prompts since) and says beside each prompt
    how its turns went wrong: with ``prompts_framed`` an open failure of a turn is not quoted
    with its prompt again."""
    clean = clean or Redactor(env)

    def say(text: str, limit: int) -> str:
        return shorten(clean(text), limit)

    lines: list[str] = []
    if state.decisions:
        lines.append("Decisions:")
        for decision in state.decisions[-SHOWN_DECISIONS:]:
            how = (
                f" (accepted: {say(decision.accepted_by, 60)!r})"
                if decision.accepted_by
                else " (the person's)"
            )
            lines.append(f"- {say(decision.text, DECISION_CHARS)}{how}")
    if state.constraints:
        lines.append("Constraints:")
        lines.extend(f"- {say(rule, CONSTRAINT_CHARS)}" for rule in state.constraints)
    failures = state.open_failures[-SHOWN_FAILURES:]
    if failures:
        lines.append("Open failures:")
        for failure in failures:
            where = _in(failure.count)
            label = failure.label
            if prompts_framed and failure.kind == "turn":
                label = "an agent turn"
            place = f" in {where}" if where and where != label else ""
            again = f" (failed {failure.times} times)" if failure.times > 1 else ""
            lines.append(
                f"- {say(label, TARGET_CHARS + 40)}{place}: "
                f"{say(failure.error, ERROR_CHARS)}{again}"
            )
        hidden = len(state.open_failures) - len(failures)
        if hidden:
            lines.append(f"  (+{hidden} older)")
    if state.artifacts:
        lines.append("Changed: " + ", ".join(changed_parts(state.artifacts, say)))
    if state.approval:
        lines.append(f"Waiting for your approval: {say(state.approval, WAITING_CHARS)}")
    if state.question:
        lines.append(f"Waiting for your answer: {say(state.question, WAITING_CHARS)}")
    if state.next_step:
        lines.append(f"Next: {say(state.next_step, STEP_CHARS)}")
    return lines


def changed_parts(
    artifacts: Sequence[Artifact],
    say: Callable[[str, int], str],
    shown: int = SHOWN_ARTIFACTS,
    chars: int = TARGET_CHARS,
) -> list[str]:
    """The ``shown`` most recently changed artifacts, the most changed first, each as
    ``path (3 changes)`` or ``cell c7 (1 change)``; ``say`` makes a text safe and cuts it."""
    changed = sorted(artifacts[-shown:], key=lambda a: -a.changes)
    return [
        f"{'cell ' if a.kind == 'cell' else ''}{say(a.target, chars)}"
        f" ({a.changes} {'change' if a.changes == 1 else 'changes'})"
        for a in changed
    ]
