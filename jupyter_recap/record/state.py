"""A session's state: what a person coming back must learn, as typed data.

The transcript is the story in order; the state is what it adds up to, folded entry by entry
(:mod:`.statefold`) whatever recorded it (agent cells, SDK capture, chats, CLI hooks), and
rendered for a person or a model (:mod:`.statetext`). A :class:`SessionState` holds:

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

Every text is cut at a space to one of the ``*_CHARS`` below when folded (:func:`cut_line`,
:func:`cut_head`), so a state costs the same in any session. Texts are kept as recorded and
redacted when rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Characters kept of an ask (the sentence that asks may come after a preamble).
ASK_CHARS = 600
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

FailureKind = Literal["tool", "cell", "turn"]


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


def in_label(count: int | None) -> str:
    """``In[n]`` for a cell's execution count, "" when it has none yet."""
    return f"In[{count}]" if count is not None else ""


def cut_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to about ``limit`` characters at a space: a secret holds no
    space, so no piece of one is left for redaction (at rendering) to miss."""
    flat = " ".join(text[: 4 * limit].split())
    if len(flat) <= limit:
        return flat
    space = flat.rfind(" ", 0, limit)
    return (flat[:space] if space > limit // 3 else flat[:limit].rsplit(None, 1)[0]) + " …"


def cut_head(text: str, limit: int) -> str:
    """The head of ``text``, its lines kept, cut at a space like :func:`cut_line` (a secret
    holds no space: redaction at rendering sees it whole or not at all)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 3 else "") + " …"
