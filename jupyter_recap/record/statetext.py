"""A session's state as text: for a person (``%recap state``, ``jupyter recap --state``), and
as the lines a model's context and a hand-off cell quote. Every text is redacted here, when
rendered: the state keeps them as recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..redact import Redactor
from ..textutil import shorten
from .state import (
    CONSTRAINT_CHARS,
    DECISION_CHARS,
    ERROR_CHARS,
    STEP_CHARS,
    WAITING_CHARS,
    Artifact,
    SessionState,
    in_label,
)
from .toolcalls import TARGET_CHARS

#: Characters of an ask shown.
SHOWN_ASK_CHARS = 240
#: How many of each list :func:`render_state` shows.
SHOWN_FAILURES = 6
SHOWN_ARTIFACTS = 8
SHOWN_DECISIONS = 5
SHOWN_CONSTRAINTS = 8


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
            where = in_label(failure.count)
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
