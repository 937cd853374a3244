"""The protocol both ends share (docs/focus-protocol.md): the JSON the server's routes exchange,
as types, and the kernel's proof of identity.

Also :func:`strict_json`, which every JSON the project writes goes through. The server's
handlers answer these, the kernel sends :class:`AgentReport`, and
``labextension/src/api.ts`` declares the same shapes for the page: a change here is a change of
the protocol and goes there too. A kernel proves which kernel it is with :func:`kernel_proof`
in :data:`KERNEL_HEADER`; the server checks it (``server/handlers``), the kernel's link sends it
(``ipython/link``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from typing import Literal, TypedDict

KERNEL_HEADER = "X-Jupyter-Recap-Kernel"
"""The header that carries :func:`kernel_proof`."""
# A fixed label, so the proof can never be mistaken for an HMAC the key signs elsewhere (the
# kernel's messages are signed with the same key).
_PROOF_LABEL = b"jupyter-recap kernel feed v1\x00"


def kernel_proof(key: bytes, kernel_id: str) -> str:
    """What kernel ``kernel_id`` sends to prove it is that kernel: HMAC-SHA256 with its key.

    Both ends know the key (the kernel from its connection file, the server that started it
    from its kernel manager) and nobody else needs to; it stays the same across restarts.
    """
    message = _PROOF_LABEL + kernel_id.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


TurnState = Literal["running", "ok", "errored", "aborted"]
RowState = Literal["running", "waiting", "finished", "errored", "idle", "restarting", "dead"]
"""``waiting``: an agent (a chat's, or a CLI agent's) waits for the person to approve a tool
call."""
RowKind = Literal["notebook", "chat", "cli"]
"""``cli``: a CLI agent's session waiting for approval where no notebook row can show it."""
NeedsYou = Literal["approval", "finished", "errored"]
"""Why a row needs the person, most pressing first."""

CHAT_ROW_PREFIX = "chat:"
"""A chat row's id is this and the chat's path (a notebook row's id is its kernel id)."""
CLI_ROW_PREFIX = "cli:"
"""A CLI row's id is this and a digest of the agent and its session."""


class Capabilities(TypedDict):
    """``GET capabilities``."""

    version: str
    features: list[str]
    heartbeat_seconds: float


class FocusAnswer(TypedDict):
    """The answer to ``POST focus``."""

    kernel_id: str
    focused: bool | None
    banner_model_id: str | None
    agents_version: int
    recapped: bool
    """jupyter_recap runs in the kernel (it polled its feed): pages keep reporting its focus."""


class KernelState(TypedDict):
    """``GET kernels/{id}``."""

    kernel_id: str
    focused: bool | None
    banner_model_id: str | None
    execution_state: str
    idle_seconds: float | None


class OutsideEntry(TypedDict):
    """An entry of a notebook's record written by something outside its kernel (a persona
    answering a ``%%ai model@Persona`` cell, a CLI agent's hook, a change made while the person
    was away). ``kind`` is ``user``, ``assistant``, ``tool_call``, ``tool_result``, ``outcome``
    (``text`` is ``ok``, ``errored`` or ``aborted``) or ``event``; ``name`` is a tool's name,
    ``error`` what a failed tool or turn said."""

    kind: str
    text: str
    name: str | None
    error: str | None


class FeedEvent(TypedDict, total=False):
    """One event of a kernel's feed: ``focus`` (with ``focused``), ``input``, ``kernel``
    (with ``what``) or ``outside`` (with ``entries``, and ``cell``: ``latest`` when they belong
    to the turn of the kernel's latest prompt)."""

    seq: int
    type: str
    at: float
    focused: bool | None
    what: str | None
    entries: list[OutsideEntry]
    cell: str


class FeedAnswer(TypedDict):
    """``GET kernels/{id}/events``."""

    seq: int
    events: list[FeedEvent]
    focused: bool | None
    focus_supported: bool
    execution_state: str
    idle_seconds: float | None


class Link(TypedDict):
    """A span of a recap (UTF-16 offsets) that names a cell."""

    start: int
    end: int
    cell_id: str


class RecapInfo(TypedDict):
    """The latest recap a kernel showed."""

    text: str
    model: str
    at: float | None
    links: list[Link]


class Progress(TypedDict):
    done: int
    total: int


class StopCell(TypedDict):
    """Where the work stopped."""

    cell_id: str
    label: str
    failed: bool


class AgentReport(TypedDict):
    """The body of ``PUT kernels/{id}/agent``: a kernel's agent state."""

    turn: TurnState | None
    turn_started: float | None
    turn_ended: float | None
    error: str | None
    last_activity: float | None
    recap: RecapInfo | None
    drafting: bool
    progress: Progress | None
    stop_cell: StopCell | None


class OutsideActivity(TypedDict):
    """What agents outside the kernel (a chat's persona) did in a notebook while the person
    was away from it: one line of plain text, its cell links, and when the latest step was."""

    text: str
    links: list[Link]
    at: float


class Attention(TypedDict):
    """A row's place in the attention order (``focus/attention.py``): ``rank`` 0 waiting for
    approval, 1 errored while away, 2 finished while away, 3 running, 4 seen; ``at`` the time
    it sorts by within its rank, latest first."""

    rank: int
    at: float


class AgentRow(AgentReport):
    """One row of the agents panel: the report plus what the server knows.

    ``id`` is the row's key: the kernel id of a notebook row, ``chat:`` and the path of a
    chat row (whose ``kernel_id`` is None), ``cli:`` and a digest for a CLI agent's row.
    ``agent``, ``model`` and ``approval`` are a chat's: the persona's name, its model when
    known, and the tool call waiting for the person's approval; ``approval`` is also a CLI
    agent's call waiting on a notebook's row or its own, with who waits and where to answer,
    and ``agent`` names the CLI agent of its own row, whose ``folder`` is the agent's working
    folder. ``outside`` is a notebook's: what a chat's agent did there while the person was
    away. ``attention`` is the row's place in the order the rows are listed in.
    """

    id: str
    kind: RowKind
    kernel_id: str | None
    path: str
    name: str
    state: RowState
    needs_you: NeedsYou | None
    agent: str | None
    model: str | None
    approval: str | None
    outside: OutsideActivity | None
    folder: str | None
    attention: Attention
    notice: int
    focused: bool | None
    execution_state: str
    events: list[dict[str, object]]
    updated: float


class AgentList(TypedDict):
    """``GET agents``. ``outside`` maps a notebook's path to what chats' agents did there
    while the person was away, for notebooks with or without a row."""

    now: float
    version: int
    agents: list[AgentRow]
    outside: dict[str, OutsideActivity]
    left_out: int
    """Rows dropped to keep the board's bound whose kernel or chat is still there ("+N more")."""
    left_out_needing: int
    """Of ``left_out``, the rows that need the person."""
    needing: int
    """Every row that needs the person, those left out included (the page's title count)."""


class AgentAnswer(TypedDict):
    """``GET agents/{id}``."""

    now: float
    version: int
    agent: AgentRow


class SessionSummaryJSON(TypedDict):
    """One stored session in ``GET sessions`` (and ``jupyter recap --sessions --json``).

    ``title`` follows the work (taken from the latest recap); ``first_prompt`` stays.
    """

    id: str
    updated: float
    title: str
    turns: int
    notebook: str | None
    last_recap: str | None
    progress: str | None
    first_prompt: str


class SessionList(TypedDict):
    """``GET sessions``."""

    sessions: list[SessionSummaryJSON]


class SessionRecapAnswer(TypedDict):
    """``POST sessions/{id}/recap``."""

    session_id: str
    recap: str | None
    model: str | None
    reason: str


class DayUsageJSON(TypedDict):
    """One local day's model calls, from every kernel of the person (``DayUsage.to_dict()``)."""

    day: str
    calls: int
    automatic: int
    failed: int
    tokens_in: int
    tokens_out: int
    estimated: int
    cost: float
    unpriced: int
    models: dict[str, int]


class UsageJSON(TypedDict):
    """``GET usage``: today's recap cost; ``today`` is null, and ``error`` says why in one line,
    when the usage ledger cannot be read."""

    today: DayUsageJSON | None
    cost: str | None
    error: str | None


ChangeKind = Literal["added", "edited", "ran", "failed"]
"""What a changed cell's mark says (its ``.jp-Cell`` carries it as ``data-recap-change``): a run
that failed first; else a cell that is new; else one whose source changed; else one that ran."""


class CellMark(TypedDict):
    """One cell of a notebook changed by someone other than the person's own page since they
    last looked at it (``GET changes``)."""

    cell_id: str
    change: ChangeKind
    label: str
    """Plain text: what happened and who did it ("edited, ran — Claude via churn.chat")."""
    before: str | None
    """The source the person last saw: null for an added cell, or where no text was kept."""
    error: str | None
    """A failed run's error line ("KeyError: 'region'"), from the cell's outputs."""
    reviewed: bool
    """The person has seen it since (on screen a second, or selected): no mark."""


class DeletedCell(TypedDict):
    """A cell the person saw that is gone from the notebook."""

    source: str | None
    """Its last-seen source (null where no text was kept)."""
    label: str
    """Plain text: "deleted — on disk"."""


class ChangeReview(TypedDict):
    """``GET changes?path=`` and ``POST changes/reviewed``: the notebook's cells to review.

    ``cells`` are in notebook order; ``reviewed`` of ``total`` of them are reviewed ("2 of 5
    reviewed"). ``diffs`` is false when the notebook is past the bound on kept text: the marks
    stay, without ``before``, and ``note`` says so in one line.
    """

    path: str
    cells: list[CellMark]
    deleted: list[DeletedCell]
    reviewed: int
    total: int
    diffs: bool
    note: str | None


def finite(value: object) -> object:
    """``value`` with every NaN and infinity (in its dicts, lists and tuples) made ``None``.

    JSON has neither: Python would write ``NaN`` / ``Infinity``, which a browser's
    ``JSON.parse`` (and any strict reader) refuses, losing the whole answer for one figure.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def strict_json(value: object, *, ensure_ascii: bool = True) -> str:
    """``value`` as strict JSON: non-finite floats are ``null`` (:func:`finite`), never a
    ``ValueError`` of ``allow_nan=False``. Every JSON the project writes goes here (the CLI's
    ``--json``, the server's answers, the store's records)."""
    return json.dumps(finite(value), ensure_ascii=ensure_ascii, allow_nan=False)
