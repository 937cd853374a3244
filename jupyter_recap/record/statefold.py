"""Folding a session's entries into its state (:class:`~.state.SessionState`), one at a time.

:class:`StateFolder` reads each entry once, in bounded time, and keeps what the state holds (see
:mod:`.state`). What failed and its error line come from the entry's structure (the tool's
name, its call's arguments, the error's type), never from splitting a text; what the person
asks, accepts, corrects or rules comes from :mod:`.phrases`.

Every list is capped (the ``MAX_*`` constants) and every text cut at a space
(:func:`~.state.cut_line`), so a state costs the same in any session and no piece of a secret
is left for redaction, which happens when the state is rendered (:mod:`.statetext`), to miss.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from ..redact import redact_shapes
from ..textutil import refers_back, shorten
from . import phrases
from .entry import Entry, first_code_line
from .state import (
    ASK_CHARS,
    CELL_CHARS,
    CONSTRAINT_CHARS,
    DECISION_CHARS,
    ERROR_CHARS,
    REPLY_CHARS,
    STEP_CHARS,
    SUMMARY_CHARS,
    WAITING_CHARS,
    Artifact,
    Ask,
    Decision,
    Failure,
    FailureKind,
    SessionState,
    cut_head,
    cut_line,
    in_label,
)
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

_Key = tuple[FailureKind, str, str]


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
            self.summary = cut_head(entry.text, SUMMARY_CHARS)
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
                    Decision(cut_line(proposal, DECISION_CHARS), cut_line(text, 60), self.asks)
                )
            self._turn_started(entry, self.latest_ask)
            return
        if self.latest_ask is not None and phrases.is_retry(text):
            # "Try again": the same ask, and the turn that errored runs again.
            self.retried_turn = self._latest_turn_failure()
            self._turn_started(entry, self.latest_ask)
            return
        self.asks += 1
        ask = Ask(cut_line(text, ASK_CHARS), self.asks)
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
            self.decisions.append(Decision(cut_line(decided, DECISION_CHARS), None, self.asks))
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
        text = cut_line(rule, CONSTRAINT_CHARS)
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
                for part in (*item.failure.key, in_label(item.failure.count))
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
        self.reply = cut_head(text, REPLY_CHARS)
        self.reply_current = True
        self.ended_after_reply = False
        if self.awaiting_told:
            self.told, self.awaiting_told = self.reply, False
        step = phrases.next_step(text)
        if step is not None:
            self.next_step = cut_line(step, STEP_CHARS)
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
            label = in_label(entry.count) or shorten(first_code_line(entry.text), 60) or "a cell"
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
            self.approval = cut_line(waiting.group("what"), WAITING_CHARS)

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
            label=cut_line(label, TARGET_CHARS + 40),
            error=cut_line(error, ERROR_CHARS),
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
