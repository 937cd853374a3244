"""CLI agents that wait for the person's approval, told by their hooks.

The payloads under tests/data/hooks/approvals.json are written from the documented shapes of
Claude Code's ``PermissionRequest``, ``PermissionDenied`` and ``Notification`` hooks and Codex's
``PermissionRequest`` (see ``jupyter_recap/hooks/events.py`` for the sources). They are read
into spool events (bounded, printable, redacted; never an error on any JSON), a session's wait
follows its events (an auto-allowed call never waits; the next tool result, denial, prompt,
stop, end or idle-input notification ends a wait; a wait is not a silence), and the server's
intake puts the wait on a real agents board: on the notebook's row, else on a row of its own,
first in the order, with the away-only notice and in the title's count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manualclock import Clock
from outsidekit import FakeSink
from strength import examples

from jupyter_recap.focus.board import AgentBoard, cli_row_id
from jupyter_recap.focus.validate import Report
from jupyter_recap.hooks.events import (
    CLAUDE_CODE,
    CODEX,
    ERROR_CHARS,
    KINDS,
    NAME_CHARS,
    SUMMARY_CHARS,
    HookEvent,
    event_from_json,
    normalise,
)
from jupyter_recap.hooks.sessions import HookSessions, Wait
from jupyter_recap.server.outside.hooks import APPROVAL_CHARS, HookIntake, approval_line
from jupyter_recap.stores.hookspool import append
from jupyter_recap.textutil import UNSAFE_CHARS
from jupyter_recap.wire import AgentRow

DATA = Path(__file__).parent.parent / "data" / "hooks" / "approvals.json"
SECRET = "sk-proj-Q2xhdWRlQ29kZUhvb2tTZWNyZXQ0MjQyNDI0MjQy"
ENV_SECRET = "hunter2-but-much-longer-and-unshaped"
WHERE = " (Claude Code, answer in its terminal)"


def documented(name: str, root: Path | str) -> dict[str, Any]:
    """One documented payload, with ``{root}`` and ``{home}`` filled in."""
    text = DATA.read_text(encoding="utf-8")
    text = text.replace("{root}", str(root)).replace("{home}", "/home/someone")
    payload: dict[str, Any] = json.loads(text)[name]
    return payload


def read(name: str, root: Path | str = "/srv/churn", at: float = 100.0) -> HookEvent | None:
    return normalise(documented(name, root), at=at)


# -- the documented payloads ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "agent", "tool", "text"),
    [
        ("claude_code_bash", "approval", CLAUDE_CODE, "Bash", "Bash rm -rf build/"),
        (
            "claude_code_notebook_edit",
            "approval",
            CLAUDE_CODE,
            "NotebookEdit",
            "NotebookEdit replace cell cell-3 of churn.ipynb: model = fit(df)",
        ),
        (
            "claude_code_web_fetch",
            "approval",
            CLAUDE_CODE,
            "WebFetch",
            "WebFetch https://example.org/churn-data.csv",
        ),
        ("claude_code_mcp_tool", "approval", CLAUDE_CODE, "execute_cell", "execute_cell cell 4"),
        ("claude_code_denied", "denied", CLAUDE_CODE, "Bash", ""),
        ("claude_code_permission_notification", "permission", CLAUDE_CODE, "Bash", "Bash"),
        (
            "claude_code_permission_notification_untyped",
            "permission",
            CLAUDE_CODE,
            "execute_cell",
            "execute_cell",
        ),
        ("claude_code_idle_notification", "idle", CLAUDE_CODE, None, ""),
        ("codex_shell", "approval", CODEX, "Bash", "Bash pip install lightgbm"),
        ("codex_network", "approval", CODEX, "Bash", "Bash curl -sO https://example.org/churn.csv"),
    ],
)
def test_each_documented_payload_reads_as_what_it_says(
    name: str, kind: str, agent: str, tool: str | None, text: str
) -> None:
    event = read(name)
    assert event is not None
    assert (event.kind, event.agent, event.tool, event.text) == (kind, agent, tool, text)
    assert event.cwd == "/srv/churn" and event.session
    # The spool keeps it as it is: a server reads back the same event.
    assert event_from_json(json.loads(json.dumps(event.to_json()))) == event


def test_a_call_waiting_for_approval_names_the_notebook_it_would_change() -> None:
    edit = read("claude_code_notebook_edit")
    assert edit is not None and edit.notebook == "/srv/churn/churn.ipynb"
    bash = read("claude_code_bash")
    assert bash is not None and bash.notebook is None


def test_a_denial_keeps_its_reason_and_other_notifications_are_no_event() -> None:
    denied = read("claude_code_denied")
    assert denied is not None
    assert denied.error == "Deleting files outside the task was blocked by auto mode"
    assert read("claude_code_login_notification") is None
    # A permission notification with neither its type nor the tool it names says too little.
    assert (
        normalise(
            {"hook_event_name": "Notification", "message": "Claude needs your permission"}, at=1
        )
        is None
    )


def test_a_secret_in_a_waiting_command_never_reaches_the_spool() -> None:
    payload = documented("claude_code_bash", "/srv/churn")
    payload["tool_input"] = {
        "command": f"curl -H 'Authorization: Bearer {SECRET}' https://api.example.org "
        f"&& echo {ENV_SECRET}"
    }
    event = normalise(payload, at=1.0, env={"MY_SERVICE_TOKEN": ENV_SECRET})
    assert event is not None and event.kind == "approval"
    spooled = json.dumps(event.to_json())
    assert SECRET not in spooled and ENV_SECRET not in spooled
    assert event.text.startswith("Bash curl -H")


def test_hostile_and_huge_calls_are_one_bounded_printable_line() -> None:
    payload = documented("claude_code_bash", "/srv/churn")
    payload["tool_name"] = "Ba\x1b[31msh" + "x" * 10_000
    payload["tool_input"] = {"command": "rm -rf \u202ebuild/\x07\n" + "y " * 50_000}
    event = normalise(payload, at=1.0)
    assert event is not None and event.tool is not None
    assert len(event.tool) <= NAME_CHARS and len(event.text) <= SUMMARY_CHARS
    assert not set(event.text) & (set(UNSAFE_CHARS) | {"\n"})
    line = approval_line(wait_of(event))
    assert len(line) <= APPROVAL_CHARS and line.endswith(WHERE)


# -- any JSON ------------------------------------------------------------------------------------

EVENT_NAMES = [
    "PermissionRequest",
    "PermissionDenied",
    "Notification",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
]
KEYS = [
    "tool_name",
    "tool_input",
    "command",
    "notebook_path",
    "url",
    "questions",
    "question",
    "message",
    "notification_type",
    "reason",
    "cwd",
    "session_id",
    "turn_id",
    "transcript_path",
    "permission_suggestions",
]
TYPES = ["permission_prompt", "idle_prompt", "auth_success", "elicitation_dialog"]
MESSAGES = [
    "Claude needs your permission to use Bash",
    "Claude is waiting for your input",
    f"Claude needs your permission to use {SECRET}",
]
leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=40)
    | st.sampled_from(TYPES + MESSAGES + ["/srv/churn/a.ipynb", "a.ipynb", "Bash"])
    | st.text(max_size=20).map(lambda t: f"{t} {SECRET} {ENV_SECRET}")
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=20,
)
# The fields the readers look at, each present or not, at the top or nested at any depth.
payloads = st.fixed_dictionaries(
    {"hook_event_name": st.sampled_from(EVENT_NAMES)},
    optional={key: values for key in KEYS},
)


@settings(max_examples=examples(300))
@given(payload=payloads | values)
def test_any_json_gives_a_bounded_clean_event_or_none_and_never_an_error(payload: Any) -> None:
    event = normalise(payload, at=1.0, cwd="/w", env={"MY_SERVICE_TOKEN": ENV_SECRET})
    if event is None:
        return
    assert event.kind in KINDS
    text = json.dumps(event.to_json(), ensure_ascii=False)
    assert SECRET not in text and ENV_SECRET not in text
    for field in (event.tool or "", event.error or ""):
        assert not set(field) & set(UNSAFE_CHARS)
    if event.kind in ("approval", "permission"):
        assert len(event.text) <= SUMMARY_CHARS and "\n" not in event.text
        assert not set(event.text) & set(UNSAFE_CHARS)
    assert event.tool is None or len(event.tool) <= NAME_CHARS
    assert event.error is None or len(event.error) <= ERROR_CHARS
    assert event_from_json(json.loads(text)) == event
    sessions = HookSessions()
    sessions.feed(event)
    for wait in sessions.waits():
        line = approval_line(wait)
        assert len(line) <= APPROVAL_CHARS and line.endswith(", answer in its terminal)")


# -- a session's wait ----------------------------------------------------------------------------


def event(kind: str, at: float, **fields: Any) -> HookEvent:
    return HookEvent(CLAUDE_CODE, fields.pop("session", "s"), kind, at, **fields)


def approval(at: float = 10.0, text: str = "Bash rm -rf build/", **fields: Any) -> HookEvent:
    return event("approval", at, tool="Bash", text=text, cwd="/srv/churn", **fields)


def wait_of(found: HookEvent) -> Wait:
    sessions = HookSessions()
    sessions.feed(found)
    [wait] = sessions.waits()
    return wait


def test_an_auto_allowed_call_never_waits() -> None:
    """A call the agent's rules allow runs with no PermissionRequest: only its result comes."""
    sessions = HookSessions()
    sessions.feed(event("prompt", 1.0, text="clean the build"))
    sessions.feed(event("tool", 2.0, tool="Bash", text="rm -rf build/", output="ok"))
    sessions.feed(event("stop", 3.0, text="Done."))
    assert sessions.waits() == []


@pytest.mark.parametrize(
    "after",
    [
        event("tool", 11.0, tool="Bash", text="rm -rf build/", output="ok"),
        event("tool", 11.0, tool="Bash", text="rm -rf build/", error="exit code 1"),
        event("denied", 11.0, tool="Bash", error="blocked"),
        event("prompt", 11.0, text="no, keep the build"),
        event("stop", 11.0, text="I left the build alone."),
        event("end", 11.0),
        event("idle", 11.0),
    ],
    ids=["result", "failed result", "denial", "prompt", "stop", "end", "idle input"],
)
def test_a_wait_ends_when_the_session_goes_on_or_stops(after: HookEvent) -> None:
    sessions = HookSessions()
    sessions.feed(approval())
    assert [(w.text, w.precise) for w in sessions.waits()] == [("Bash rm -rf build/", True)]
    sessions.feed(after)
    assert sessions.waits() == []


def test_the_permission_notification_is_the_fallback_of_the_request() -> None:
    sessions = HookSessions()
    sessions.feed(event("permission", 5.0, tool="Bash", text="Bash"))
    assert [(w.text, w.precise) for w in sessions.waits()] == [("Bash", False)]
    sessions.feed(approval(at=6.0))
    assert [w.text for w in sessions.waits()] == ["Bash rm -rf build/"]
    # Claude Code's notification comes some seconds after the request: it tells less.
    sessions.feed(event("permission", 12.0, tool="Bash", text="Bash"))
    assert [(w.text, w.precise, w.at) for w in sessions.waits()] == [
        ("Bash rm -rf build/", True, 6.0)
    ]
    # Another session's wait is its own.
    sessions.feed(approval(at=13.0, text="Bash git push", session="other"))
    assert sorted(w.text for w in sessions.waits()) == ["Bash git push", "Bash rm -rf build/"]


def test_the_wait_is_on_the_notebook_the_call_names_else_the_one_named_last() -> None:
    sessions = HookSessions()
    sessions.feed(event("tool", 1.0, tool="Read", text="churn.ipynb", notebook="/r/churn.ipynb"))
    sessions.feed(approval(at=2.0))
    assert [w.notebook for w in sessions.waits()] == ["/r/churn.ipynb"]
    sessions.feed(
        approval(at=3.0, text="NotebookEdit cell 2 of eda.ipynb", notebook="/r/eda.ipynb")
    )
    assert [w.notebook for w in sessions.waits()] == ["/r/eda.ipynb"]
    fresh = HookSessions()
    fresh.feed(approval())
    assert [w.notebook for w in fresh.waits()] == [None]  # named none


def test_a_session_waiting_for_the_person_is_not_silent() -> None:
    """Its turn is not ended as interrupted while it waits, however long: the person holds it
    up. Back at its prompt (the person said no in its terminal), the silence counts again."""
    sessions = HookSessions(silence=60.0)
    sessions.feed(event("prompt", 1.0, text="retrain"))
    sessions.feed(
        event("tool", 2.0, tool="NotebookEdit", text="edit", notebook="/r/a.ipynb", touch="edit")
    )
    sessions.feed(approval(at=3.0))
    assert sessions.quiet(3.0 + 3600.0) == []
    assert [w.text for w in sessions.waits()] == ["Bash rm -rf build/"]
    sessions.feed(event("idle", 3700.0))
    assert sessions.waits() == []
    [ended] = sessions.quiet(3700.0 + 61.0)
    assert ended.notebook == "/r/a.ipynb" and ended.entries[-1]["text"] == "aborted"


def test_a_session_forgotten_for_its_idleness_takes_its_wait_along() -> None:
    sessions = HookSessions(idle=100.0)
    sessions.feed(approval(at=1.0))
    sessions.feed(event("prompt", 500.0, text="hi", session="other"))
    assert sessions.waits() == []


ORDERLY = st.sampled_from(
    ["approval", "permission", "tool", "denied", "prompt", "stop", "end", "idle"]
)


@settings(max_examples=examples(200))
@given(steps=st.lists(st.tuples(st.sampled_from(["a", "b"]), ORDERLY, st.booleans()), max_size=30))
def test_a_session_waits_exactly_while_its_latest_say_is_a_request_for_approval(
    steps: list[tuple[str, str, bool]],
) -> None:
    """Over any sequence of two sessions' events (and silences between them): a session waits
    after a request (or a notification, when no request is in force), until any other event of
    its own; what another session does, and a silence, change nothing."""
    sessions = HookSessions(silence=5.0)
    expected: dict[str, tuple[str, bool] | None] = {"a": None, "b": None}
    for n, (who, kind, silence) in enumerate(steps):
        at = 10.0 * n
        text = f"Bash step {n}" if kind == "approval" else "Bash"
        sessions.feed(event(kind, at, session=who, tool="Bash", text=text))
        if kind == "approval":
            expected[who] = (text, True)
        elif kind == "permission":
            expected[who] = expected[who] or (text, False)
        else:
            expected[who] = None
        if silence:
            sessions.quiet(at + 9.0)
        got = {w.session: (w.text, w.precise) for w in sessions.waits()}
        assert got == {key: value for key, value in expected.items() if value is not None}


# -- on the agents board: the server's intake ----------------------------------------------------


class World:
    """A server root with ``analysis/churn.ipynb`` served by kernel k1 (jupyter_recap loaded)
    and ``other.ipynb`` by k2, whose turn finished while the person was away; the hook intake
    reads the spool into a real agents board."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "analysis").mkdir(parents=True)
        self.focused: dict[str, bool | None] = {"k1": False, "k2": False}
        self.board = AgentBoard(facts=lambda k: (self.focused.get(k), "idle"), clock=Clock())
        self.board.report("k1", Report(turn="ok", last_activity=900.0))
        self.board.set_path("k1", "analysis/churn.ipynb")
        self.board.report("k2", Report(turn="running", turn_started=800.0, last_activity=800.0))
        self.board.report(
            "k2", Report(turn="ok", turn_started=800.0, turn_ended=950.0, last_activity=950.0)
        )
        self.board.set_path("k2", "other.ipynb")
        sink = FakeSink(root, kernels={"analysis/churn.ipynb": ["k1"], "other.ipynb": ["k2"]})
        self.intake = HookIntake(sink, board=self.board)

    def hooks(self, *payloads: dict[str, Any], at: float = 2_000.0) -> None:
        """The agent's hooks run on ``payloads``; the server's next look at the spool."""
        for n, payload in enumerate(payloads):
            found = normalise(payload, at=at + n)
            if found is not None:
                append(found.to_json())
        self.intake.poll()

    def rows(self) -> list[AgentRow]:
        return self.board.rows()

    def row(self, row_id: str) -> AgentRow:
        found = self.board.row(row_id)
        assert found is not None
        return found


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_loop: Any) -> Iterator[World]:
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(tmp_path / "store"))
    made = World(tmp_path / "root")
    made.intake.start()
    try:
        yield made
    finally:
        made.intake.stop()


def session_payloads(root: Path) -> Callable[..., dict[str, Any]]:
    """Payloads of one Claude Code session working in ``root/analysis``."""
    cwd = root / "analysis"

    def make(kind: str, **fields: Any) -> dict[str, Any]:
        base = documented("claude_code_bash", cwd)
        base = {
            key: base[key] for key in ("session_id", "transcript_path", "cwd", "permission_mode")
        }
        return {**base, "hook_event_name": kind, **fields}

    return make


def test_a_call_waiting_for_approval_tops_its_notebook_s_row_and_clears_at_its_result(
    world: World,
) -> None:
    make = session_payloads(world.root)
    read = {"tool_name": "Read", "tool_input": {"file_path": "churn.ipynb"}, "tool_response": {}}
    world.hooks(
        make("UserPromptSubmit", prompt="clean up and retrain"), make("PostToolUse", **read)
    )
    assert [r["id"] for r in world.rows()] == ["k2", "k1"]  # finished while away, then seen
    assert world.board.needing() == 1
    # The session asks to run a command: churn.ipynb is the notebook it worked on.
    bash = documented("claude_code_bash", world.root / "analysis")
    world.hooks(bash, at=2_100.0)
    first = world.rows()[0]
    assert (first["id"], first["state"], first["needs_you"]) == ("k1", "waiting", "approval")
    assert first["approval"] == "Bash rm -rf build/" + WHERE
    assert first["notice"] == 1 and first["attention"]["rank"] == 0
    assert world.board.needing() == 2  # the title's count
    # The person approves in the terminal: the command's result ends the wait.
    result = {
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build/"},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
    }
    world.hooks(make("PostToolUse", **result), at=2_200.0)
    row = world.row("k1")
    assert (row["state"], row["needs_you"], row["approval"]) == ("idle", None, None)
    assert [r["id"] for r in world.rows()] == ["k2", "k1"] and world.board.needing() == 1


def test_an_auto_allowed_call_makes_no_row_and_changes_none(world: World) -> None:
    make = session_payloads(world.root)
    before = world.rows()
    result = {
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "a"},
    }
    world.hooks(make("UserPromptSubmit", prompt="look"), make("PostToolUse", **result))
    assert world.rows() == before and len(world.board) == 2


def test_a_wait_with_no_notebook_row_has_a_row_of_its_own_until_it_ends(world: World) -> None:
    elsewhere = world.root.parent / "scripts"
    codex = documented("codex_shell", elsewhere)
    world.hooks(codex)
    row_id = cli_row_id(CODEX, codex["session_id"])
    row = world.rows()[0]
    assert (row["id"], row["kind"], row["kernel_id"], row["path"]) == (row_id, "cli", None, "")
    assert (row["name"], row["folder"], row["agent"]) == ("scripts", str(elsewhere), CODEX)
    assert row["approval"] == "Bash pip install lightgbm (Codex, answer in its terminal)"
    assert (row["state"], row["needs_you"], row["notice"]) == ("waiting", "approval", 1)
    assert world.board.needing() == 2
    stop = {k: codex[k] for k in ("session_id", "turn_id", "cwd", "transcript_path")}
    world.hooks({**stop, "hook_event_name": "Stop", "last_assistant_message": "Not installed."})
    assert world.board.row(row_id) is None and len(world.board) == 2


def test_a_notebook_without_a_row_is_named_on_the_session_s_own_row(world: World) -> None:
    payload = documented("claude_code_notebook_edit", world.root)  # churn.ipynb at the root
    world.hooks(payload)
    row = world.rows()[0]
    assert (row["kind"], row["path"], row["name"]) == ("cli", "churn.ipynb", "churn.ipynb")
    assert row["approval"] == (
        "NotebookEdit replace cell cell-3 of churn.ipynb: model = fit(df)" + WHERE
    )
    # A notebook outside the server's root is never named.
    outside = documented("claude_code_notebook_edit", world.root.parent / "elsewhere")
    outside["session_id"] = "another-session"
    world.hooks(outside)
    other = world.row(cli_row_id(CLAUDE_CODE, "another-session"))
    assert other["path"] == "" and other["folder"] == str(world.root.parent / "elsewhere")


def test_a_wait_on_a_notebook_looked_at_gives_no_notice_but_still_comes_first(
    world: World,
) -> None:
    world.focused["k1"] = True
    world.board.focus("k1", True)
    edit = documented("claude_code_notebook_edit", world.root / "analysis")
    world.hooks(edit)
    first = world.rows()[0]
    assert (first["id"], first["state"], first["needs_you"], first["notice"]) == (
        "k1",
        "waiting",
        None,
        0,
    )


def test_a_row_that_needed_the_person_needs_them_again_when_the_wait_ends_unseen(
    world: World,
) -> None:
    edit = documented("claude_code_notebook_edit", os.fspath(world.root))
    edit["tool_input"]["notebook_path"] = str(world.root / "other.ipynb")
    world.hooks(edit)
    row = world.row("k2")
    assert (row["state"], row["needs_you"], row["notice"]) == ("waiting", "approval", 1)
    make = session_payloads(world.root)
    world.hooks(make("PermissionDenied", tool_name="NotebookEdit", reason="no"), at=2_500.0)
    row = world.row("k2")
    assert (row["state"], row["needs_you"]) == ("finished", "finished")


def test_the_fallback_notification_alone_shows_the_tool(world: World) -> None:
    make = session_payloads(world.root)
    read = {"tool_name": "Read", "tool_input": {"file_path": "churn.ipynb"}, "tool_response": {}}
    notification = documented("claude_code_permission_notification", world.root / "analysis")
    world.hooks(make("PostToolUse", **read), notification)
    assert world.row("k1")["approval"] == "Bash" + WHERE
    world.hooks(documented("claude_code_idle_notification", world.root / "analysis"), at=3_000.0)
    assert world.row("k1")["state"] == "idle"
