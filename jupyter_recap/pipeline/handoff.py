"""The handoff: an agent cell that carries a session's state on to the next agent turn.

A person coming back, or passing the work to another model, should not have to retype what the
session settled. :func:`handoff_cell` writes the source of a new agent cell from the session's
typed state (:class:`~jupyter_recap.record.state.SessionState`): the task as it stands, the
decisions and what accepted them, the constraints, the failures still open with their error line
and the cell they happened in, what changed, and the next step. The person edits it and runs it
when they choose: nothing here runs anything.

:func:`agent_magic` picks the cell's first line: the notebook's own agent magic.

Plain text work only (no IPython here): the kernel side asks the shell what it needs and passes
it in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from ..errors import RecapError
from ..record.state import Failure, SessionState
from ..record.statetext import changed_parts
from ..redact import Redactor
from ..textutil import printable, shorten

#: The refusal when there is no task to carry on (a session of plain cells, or none yet).
NOTHING_YET = "nothing to hand off yet: no agent prompt was recorded"

# Caps, so that a handoff stays a prompt a person reads and edits, whatever the session's
# length: each item is cut at a word, each list keeps its newest items. With these the prompt
# stays under MAX_CHARS (the sum of the caps below, with room for the framing words).
#: Characters of the task (the ask as it stands, and the first ask when it was corrected).
TASK_CHARS = 400
#: Characters of the latest ask, when it is not the task itself ("Now do the same for …").
ASK_CHARS = 240
#: Decisions shown (the newest), and characters of each and of the words that accepted it.
DECISIONS = 5
DECISION_CHARS = 200
ACCEPTED_CHARS = 60
#: Constraints shown: the first ones set and the newest (as the state keeps them), characters
#: of each.
CONSTRAINTS = 8
CONSTRAINT_CHARS = 160
#: Open failures shown (the newest), characters of what failed and of its error line.
FAILURES = 5
LABEL_CHARS = 100
ERROR_CHARS = 160
#: Changed files and cells named (the most changed of the latest), characters of each name.
ARTIFACTS = 6
ARTIFACT_CHARS = 80
#: Characters of the next step.
STEP_CHARS = 180
#: Characters of the magic line (a cell magic's options can be long: model parameters).
MAGIC_CHARS = 300
#: An upper bound of the whole cell source, from the caps above (a test holds it to this).
MAX_CHARS = 6000


class NothingToHandOff(RecapError):
    """The session has no task to carry on; ``str(error)`` is the one-line refusal."""


def handoff_cell(
    state: SessionState, magic: str | None, env: Mapping[str, str] | None = None
) -> str:
    """The source of the handoff cell: ``magic`` (its first line, e.g. ``%%ai
    openai:gpt-4o-mini``), then a prompt in plain words. With ``magic`` None the cell is the
    prompt alone (see :func:`agent_magic`).

    Redacted (secrets in ``env``, default this process's environment, and secret shapes), made
    inert (no control or bidi characters), each part capped; a part with nothing in it is left
    out. Raises :class:`NothingToHandOff` when the state has no task.
    """
    task = state.task
    if task is None:
        raise NothingToHandOff(NOTHING_YET)
    clean = Redactor(env)

    def say(text: str, limit: int) -> str:
        return shorten(clean(text), limit)

    lines: list[str] = []
    head = _magic_line(clean(magic)) if magic is not None else None
    if head is not None:
        lines.append(head)
    lines.append(f"Continue this task where the last session stopped: {say(task.text, TASK_CHARS)}")
    first = state.first_ask
    if state.corrections and first is not None and first.number != task.number:
        lines.append(f"It started as: {say(first.text, TASK_CHARS)}")
    latest = state.latest_ask
    if latest is not None and latest.number != task.number:
        lines.append(f"The latest ask was: {say(latest.text, ASK_CHARS)}")
    if state.decisions:
        lines.append("Decisions made (keep to them):")
        for decision in state.decisions[-DECISIONS:]:
            how = (
                f' (accepted with "{say(decision.accepted_by, ACCEPTED_CHARS)}")'
                if decision.accepted_by
                else " (my own decision)"
            )
            lines.append(f"- {say(decision.text, DECISION_CHARS)}{how}")
    if state.constraints:
        lines.append("Constraints to keep:")
        rules = state.constraints
        if len(rules) > CONSTRAINTS:
            rules = (*rules[: CONSTRAINTS // 2], *rules[-(CONSTRAINTS - CONSTRAINTS // 2) :])
        lines.extend(f"- {say(rule, CONSTRAINT_CHARS)}" for rule in rules)
    failures = state.open_failures[-FAILURES:]
    if failures:
        lines.append("Still failing (nothing fixed these yet):")
        lines.extend(f"- {_failure(failure, say)}" for failure in failures)
        older = len(state.open_failures) - len(failures)
        if older:
            lines.append(f"- and {older} older {'failure' if older == 1 else 'failures'}")
    if state.artifacts:
        names = changed_parts(state.artifacts, say, ARTIFACTS, ARTIFACT_CHARS)
        lines.append("Changed so far: " + ", ".join(names))
    if state.next_step:
        lines.append(f"Next step: {say(state.next_step, STEP_CHARS)}")
    return printable("\n".join(lines))


def _magic_line(magic: str) -> str | None:
    """``magic`` on one line, when it is a cell magic. Never cut inside: a magic line cut at a
    word could end in half an option, which the magic would refuse or misread; one longer than
    :data:`MAGIC_CHARS` keeps its magic and first argument (the model) only."""
    words = magic.split()
    if not words or not words[0].startswith("%%") or len(words[0]) < 3:
        return None
    line = " ".join(words)
    return line if len(line) <= MAGIC_CHARS else " ".join(words[:2])[:MAGIC_CHARS]


def _failure(failure: Failure, say: Callable[[str, int], str]) -> str:
    """``run_sql (billing_v2.invoices) in In[7]: IntegrityError: …``."""
    where = f"In[{failure.count}]" if failure.count is not None else ""
    label = say(failure.label, LABEL_CHARS)
    place = f" in {where}" if where and where != failure.label else ""
    again = f" (failed {failure.times} times)" if failure.times > 1 else ""
    return f"{label}{place}: {say(failure.error, ERROR_CHARS)}{again}"


def agent_magic(
    recorded: str | None,
    *,
    model: str | None,
    cell_magics: Collection[str],
    agent_magics: Collection[str],
) -> str | None:
    """The first line of a handoff cell: the agent magic this notebook uses.

    1. ``recorded``: the first line of the latest agent cell that ran here, as written — the
       notebook's own magic with its model and options (``%%ai openai:gpt-4o-mini``).
    2. Else (a resumed session, a restarted kernel, only ``%ai`` lines so far) jupyter-ai's
       ``%%ai``, when it is loaded here (in ``cell_magics``) and counts as an agent magic, with
       the session's ``model``: ``%%ai <its model>``.
    3. Else the first of ``agent_magics`` loaded here, bare: its arguments are its own, and
       nothing here knows them (the person adds them).
    4. Else None: the cell is the prompt alone. No agent magic is loaded (the session was
       recorded from an agent SDK, or the magic's extension is not loaded yet), so any magic
       written here could be the wrong one or not exist, and running the cell would fail on
       it; a plain prompt is ready to paste into whatever agent the person uses, and an
       unrun cell holding it harms nothing.
    """
    if recorded is not None and recorded.strip().startswith("%%"):
        return " ".join(recorded.split())
    names = [name.strip().lstrip("%") for name in agent_magics]
    loaded = [name for name in names if name and name in cell_magics]
    if "ai" in loaded and model:
        return f"%%ai {model}"
    return f"%%{loaded[0]}" if loaded else None
