"""Jupyter AI chats read as a persona's turns: what the row, the recap and the notebook line say.

The documents here have the shape jupyterlab-chat writes (``{messages, users, attachments,
metadata}``) and the tool calls the shape Jupyter AI's ACP client keeps in a message's
``metadata.tool_calls``.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cliutil import offline_env, one_line_error, run_cli
from hypothesis import given
from hypothesis import strategies as st

from jupyter_recap.chats.document import FIELD_CHARS, MAX_MESSAGES, read_chat
from jupyter_recap.chats.notebooks import notebook_path, outside_activity
from jupyter_recap.chats.recap import approval_text, chat_transcript
from jupyter_recap.focus.board import AgentBoard, ChatFacts, chat_row_id
from jupyter_recap.focus.validate import Report
from jupyter_recap.pipeline.context import build_context
from jupyter_recap.pipeline.offline import offline_recap

CLAUDE = "jupyter-ai-personas::jupyter_ai_acp_client::ClaudeAcpPersona"
USERS = {
    "ana": {"username": "ana", "name": "Ana", "display_name": "Ana", "bot": False},
    CLAUDE: {"username": CLAUDE, "name": "Claude", "display_name": "Claude", "bot": True},
}
ROOT = "/home/ana/work"


def call(
    call_id: str,
    title: str,
    status: str = "completed",
    *,
    kind: str = "other",
    raw_input: Any = None,
    raw_output: Any = None,
    locations: list[Any] | None = None,
    pending: bool = False,
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "tool_call_id": call_id,
        "title": title,
        "kind": kind,
        "status": status,
        "raw_input": raw_input or {},
        "raw_output": raw_output,
        "locations": locations or [],
        "diffs": [],
        "session_id": "s1",
    }
    if pending:
        state["permission_status"] = "pending"
        state["permission_options"] = [{"option_id": "allow", "name": "Allow", "kind": "allow"}]
    return state


def chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": list(messages), "users": USERS, "attachments": {}, "metadata": {"id": "c1"}}


def human(body: str, at: float, mention: bool = True) -> dict[str, Any]:
    return {
        "body": body,
        "id": f"h{at}",
        "time": at,
        "sender": "ana",
        "mentions": [CLAUDE] if mention else [],
    }


def reply(body: str, at: float) -> dict[str, Any]:
    return {"body": body, "id": f"r{at}", "time": at, "sender": CLAUDE, "mentions": []}


def tools(at: float, *calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "body": "",
        "id": f"t{at}",
        "time": at,
        "sender": CLAUDE,
        "mentions": [],
        "metadata": {"tool_calls": list(calls)},
    }


EDIT = call(
    "e1",
    "mcp__jupyter__edit_cell",
    kind="edit",
    raw_input={"path": "churn.ipynb", "cell_id": "c7", "source": "df = df.merge(rates)"},
    locations=[f"{ROOT}/churn.ipynb"],
)
RUN_FAILED = call(
    "r1",
    "mcp__jupyter__run_cell",
    "failed",
    kind="execute",
    raw_input={"path": "churn.ipynb", "cell_id": "c7"},
    raw_output={"error": "KeyError: 'region'\nTraceback (most recent call last): ..."},
    locations=[f"{ROOT}/churn.ipynb"],
)
MOVE = call(
    "m1",
    "Bash",
    "pending",
    kind="execute",
    raw_input={"command": "mv models/churn.pkl models/old/"},
    pending=True,
)
AFTERNOON = chat(
    human("@Claude retrain the churn model in churn.ipynb", 100),
    tools(101, EDIT, RUN_FAILED),
    tools(103, MOVE),
)


def test_a_pending_permission_is_waiting_and_named() -> None:
    view = read_chat(AFTERNOON)
    assert view.state() == "waiting"
    assert view.persona_name() == "Claude"
    waiting = view.latest.waiting if view.latest else None
    assert waiting is not None
    assert approval_text(waiting) == "mv models/churn.pkl models/old/"


def test_the_offline_recap_names_the_ask_the_failure_and_the_approval() -> None:
    view = read_chat(AFTERNOON)
    waiting = view.latest.waiting if view.latest else None
    assert waiting is not None
    text = offline_recap(chat_transcript(view), waiting=approval_text(waiting))
    assert text is not None
    assert "Retrain the churn model in churn.ipynb" in text  # the ask, without "@Claude"
    assert "run_cell (c7) failed: KeyError: 'region'" in text
    assert text.endswith("Waiting for your approval: mv models/churn.pkl models/old/.")


def test_the_model_context_holds_the_turn_and_what_waits() -> None:
    context = build_context(chat_transcript(read_chat(AFTERNOON)))
    assert "User: retrain the churn model in churn.ipynb" in context
    assert "Tool error (run_cell): KeyError: 'region'" in context
    assert "Claude is waiting for your approval: mv models/churn.pkl" in context


def test_a_call_that_was_approved_and_finished_is_no_longer_waiting() -> None:
    done = dict(MOVE, status="completed", permission_status="resolved")
    view = read_chat(chat(*AFTERNOON["messages"][:2], tools(103, done), reply("Done.", 104)))
    assert view.state() == "finished"
    assert view.latest is not None and view.latest.waiting is None


def test_states_through_a_turn() -> None:
    running = call("x", "read_notebook", "in_progress")
    assert read_chat(chat(human("@Claude look", 1))).state() == "idle"  # nobody answered yet
    assert read_chat(chat(human("@Claude look", 1), tools(2, running))).state() == "running"
    assert read_chat(chat(human("@Claude look", 1), reply("Hi", 2))).state() == "finished"
    assert read_chat(chat(human("@Claude look", 1), reply("Hi", 2))).state(True) == "running"
    failed = chat(human("@Claude run it", 1), tools(2, RUN_FAILED))
    assert read_chat(failed).state() == "errored"


def test_an_updated_call_counts_once_in_its_latest_state() -> None:
    started = call("r1", "mcp__jupyter__run_cell", "in_progress", kind="execute")
    view = read_chat(chat(human("@Claude run", 1), tools(2, started), tools(3, RUN_FAILED)))
    assert view.latest is not None
    assert [step.status for step in view.latest.steps] == ["failed"]


def test_a_chat_between_people_has_no_persona() -> None:
    view = read_chat(chat(human("lunch?", 1, mention=False), human("yes", 2, mention=False)))
    assert not view.has_persona
    assert view.state() == "idle"


def test_deleted_messages_and_junk_are_skipped() -> None:
    junk: list[Any] = [
        None,
        3,
        "text",
        {"sender": 5, "body": ["x"]},
        dict(human("secret plan", 0.5), deleted=True),
    ]
    view = read_chat({"messages": [*junk, *AFTERNOON["messages"]], "users": USERS})
    assert [turn.prompt for turn in view.turns] == ["retrain the churn model in churn.ipynb"]


@pytest.mark.parametrize("data", [None, [], {"users": {}}, {"messages": "no"}])
def test_not_a_chat_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError, match="not a chat document"):
        read_chat(data)


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=20),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=30,
    )
)
def test_any_json_in_the_messages_reads_without_raising(value: Any) -> None:
    for messages in ([value], [{"sender": CLAUDE, "metadata": {"tool_calls": [value]}}]):
        view = read_chat({"messages": messages, "users": USERS})
        chat_transcript(view)
        view.state()


def test_hostile_content_is_inert_bounded_and_redacted() -> None:
    key = "sk-proj-" + "A1b2C3d4E5" * 5
    token = "ghp_" + "x9Y8z7W6v5" * 4
    hostile = "<img src=x onerror=alert(1)>\x1b]0;pwned\x07\u202eevil\x1b[31m"
    huge = "y" * 2_000_000
    message = tools(
        2,
        call(
            "h1",
            f"mcp__jupyter__edit_cell{hostile}",
            "failed",
            raw_input={"command": f"curl -H 'Authorization: Bearer {token}' --key {key}"},
            raw_output={"error": hostile + huge},
        ),
        call("h2", "Bash", "pending", raw_input={"command": f"echo {key} {hostile}"}, pending=True),
    )
    view = read_chat(chat(human(f"@Claude {hostile} {huge}", 1), message, reply(hostile, 3)))
    shown = json.dumps(
        [
            [
                turn.prompt,
                *turn.replies,
                *[(s.title, s.summary, s.input, s.output, s.error) for s in turn.steps],
            ]
            for turn in view.turns
        ]
    )
    assert key not in shown and token not in shown
    assert "\\u001b" not in shown and "\\u202e" not in shown and "\\u0007" not in shown
    assert len(shown) < 40_000  # 2 MB in, a few kilobytes kept
    waiting = view.latest.waiting if view.latest else None
    assert waiting is not None and key not in approval_text(waiting)
    steps = view.latest.steps if view.latest else []
    assert all(len(step.output) <= FIELD_CHARS + 1 for step in steps)
    # The HTML stays text: it is the page's job to show it as text, and it does (text.ts).
    assert "<img src=x onerror=alert(1)>" in view.turns[0].replies[0]


def test_only_the_latest_messages_are_read() -> None:
    messages = [human(f"@Claude step {n}", n) for n in range(MAX_MESSAGES + 50)]
    view = read_chat(chat(*messages))
    assert view.turns[0].prompt == "step 50"


def labels(path: str, cell: str) -> str | None:
    return (
        {"c7": "In[7]", "c9": "In[9]", "new": "cell 4"}.get(cell) if path == "churn.ipynb" else None
    )


def test_the_notebook_line_names_what_the_agent_did_with_links() -> None:
    lines = outside_activity(
        read_chat(AFTERNOON), "churn.chat", root=ROOT, since=lambda path: 0.0, label=labels
    )
    line = lines["churn.ipynb"]
    assert (
        line["text"] == "Claude (churn.chat) edited In[7] and ran it; it failed: KeyError: 'region'"
    )
    assert line["links"] == [{"start": 27, "end": 32, "cell_id": "c7"}]
    assert line["text"][27:32] == "In[7]"


def test_the_notebook_line_counts_only_what_happened_since_the_person_looked() -> None:
    view = read_chat(AFTERNOON)
    assert outside_activity(view, "c.chat", root=ROOT, since=lambda p: 200.0, label=labels) == {}


def test_the_notebook_line_for_adds_deletes_and_other_runs() -> None:
    add = call(
        "a",
        "mcp__jupyter__insert_cell",
        raw_input={"path": "churn.ipynb", "cell_id": "new"},
        locations=[f"{ROOT}/churn.ipynb"],
    )
    delete = call(
        "d",
        "delete_cell",
        kind="delete",
        raw_input={"notebook_path": f"{ROOT}/churn.ipynb", "cell_id": "gone"},
    )
    run = call("r", "run_cell", kind="execute", raw_input={"path": "churn.ipynb", "cell_id": "c9"})
    view = read_chat(chat(human("@Claude tidy", 1), tools(2, add, delete, run)))
    line = outside_activity(view, "t.chat", root=ROOT, since=lambda p: 0.0, label=labels)[
        "churn.ipynb"
    ]
    assert line["text"] == "Claude (t.chat) added cell 4, deleted 1 cell and ran In[9]"
    assert [link["cell_id"] for link in line["links"]] == ["new", "c9"]


@pytest.mark.parametrize(
    ("given_path", "expected"),
    [
        (f"{ROOT}/churn.ipynb", "churn.ipynb"),
        (f"{ROOT}/sub/a.ipynb", "sub/a.ipynb"),
        ("sub/../a.ipynb", "a.ipynb"),
        ("/elsewhere/a.ipynb", None),
        (f"{ROOT}/../x.ipynb", None),
        ("../x.ipynb", None),
        (f"{ROOT}/notes.md", None),
    ],
)
def test_tool_paths_become_paths_under_the_root(given_path: str, expected: str | None) -> None:
    assert notebook_path(given_path, ROOT) == expected


def test_the_board_puts_a_chat_waiting_for_approval_first_and_notices_it_once() -> None:
    focused: dict[str, bool | None] = {}
    board = AgentBoard(facts=lambda key: (focused.get(key), "idle"), clock=lambda: 50.0)
    board.report("k1", Report(turn="ok", turn_started=1.0, turn_ended=2.0, last_activity=90.0))
    waiting = ChatFacts(agent="Claude", model="claude-test-1", approval="mv a b")
    report = Report(turn="running", turn_started=10.0, last_activity=20.0)
    board.chat("churn.chat", report, waiting)
    rows = board.rows()
    assert [row["id"] for row in rows] == [chat_row_id("churn.chat"), "k1"]
    first = rows[0]
    assert first["kind"] == "chat" and first["kernel_id"] is None
    assert (first["state"], first["needs_you"], first["notice"]) == ("waiting", "approval", 1)
    assert (first["agent"], first["model"], first["approval"]) == (
        "Claude",
        "claude-test-1",
        "mv a b",
    )
    board.chat("churn.chat", report, waiting)  # the same wait again: no second notice
    assert board.row(chat_row_id("churn.chat"))["notice"] == 1  # type: ignore[index]
    # Looking at the chat ends the absence; the row still sorts first while it waits.
    focused[chat_row_id("churn.chat")] = True
    board.focus(chat_row_id("churn.chat"), True)
    row = board.rows()[0]
    assert (row["id"], row["state"], row["needs_you"]) == (
        chat_row_id("churn.chat"),
        "waiting",
        None,
    )


def test_a_chat_turn_that_ends_while_away_needs_the_person() -> None:
    board = AgentBoard(facts=lambda key: (False, "idle"))
    facts = ChatFacts(agent="Claude")
    board.chat("a.chat", Report(turn="running", turn_started=1.0), facts)
    board.chat(
        "a.chat", Report(turn="errored", turn_started=1.0, turn_ended=5.0, error="boom"), facts
    )
    row = board.row(chat_row_id("a.chat"))
    assert row is not None
    assert (row["state"], row["needs_you"], row["notice"], row["error"]) == (
        "errored",
        "errored",
        1,
        "boom",
    )


def test_the_board_carries_each_notebooks_outside_line() -> None:
    board = AgentBoard(facts=lambda key: (None, "idle"))
    board.report("k1", Report())
    board.set_path("k1", "churn.ipynb")
    before = board.version
    line = {"text": "Claude (c.chat) ran In[1]", "links": [], "at": 5.0}
    board.set_outside({"churn.ipynb": line, "other.ipynb": line})  # type: ignore[dict-item]
    assert board.version == before + 1
    assert board.row("k1")["outside"] == line  # type: ignore[index]
    assert set(board.outside) == {"churn.ipynb", "other.ipynb"}


def test_the_cli_recaps_a_chat_file_offline_even_with_a_model_configured(tmp_path: Path) -> None:
    (tmp_path / "churn.chat").write_text(json.dumps(AFTERNOON), encoding="utf-8")
    # A configured model (and no key) changes nothing: a chat file is recapped offline.
    env = offline_env(JUPYTER_RECAP_MODEL="openai:gpt-test")
    result = run_cli("churn.chat", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    recap, engine = result.stdout.strip().splitlines()
    assert "KeyError: 'region'" in recap
    assert recap.endswith("Waiting for your approval: mv models/churn.pkl models/old/.")
    assert engine == "— offline"
    as_json = json.loads(run_cli("churn.chat", "--json", cwd=tmp_path, env=env).stdout)
    assert (as_json["agent"], as_json["state"]) == ("Claude", "waiting")
    assert as_json["approval"] == "mv models/churn.pkl models/old/"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such chat file: missing.chat"),
        ("{not json", "is not a chat file: not JSON"),
        ('{"messages": 3}', "is not a chat file: not a chat document"),
    ],
)
def test_the_cli_refuses_what_is_not_a_chat_in_one_line(
    tmp_path: Path, content: str | None, says: str
) -> None:
    if content is not None:
        (tmp_path / "missing.chat").write_text(content, encoding="utf-8")
    assert says in one_line_error(run_cli("missing.chat", cwd=tmp_path))


def test_a_chat_file_caught_mid_save_is_read_again(tmp_path: Path) -> None:
    """jupyterlab-chat saves by truncating and rewriting the file on every streamed update."""
    from jupyter_recap.cli.chat import read_chat_file

    path = tmp_path / "busy.chat"
    text = json.dumps(AFTERNOON, indent=2)
    cut = threading.Event()

    def save_like_jupyterlab_chat() -> None:
        with path.open("w", encoding="utf-8") as handle:
            handle.write(text[: len(text) // 2])
            handle.flush()
            cut.set()
            time.sleep(0.06)  # the rest comes a moment later
            handle.write(text[len(text) // 2 :])

    writer = threading.Thread(target=save_like_jupyterlab_chat, daemon=True)
    writer.start()
    assert cut.wait(5)
    view = read_chat_file(str(path))
    writer.join(5)
    assert view.turns == read_chat(AFTERNOON).turns


def test_the_cli_has_nothing_to_say_of_a_chat_between_people(tmp_path: Path) -> None:
    people = chat(human("lunch?", 1, mention=False))
    (tmp_path / "lunch.chat").write_text(json.dumps(people), encoding="utf-8")
    assert "no agent persona" in one_line_error(run_cli("lunch.chat", cwd=tmp_path), code=1)


def test_a_failed_run_never_rerun_stays_named_beside_the_approval(tmp_path: Path) -> None:
    """The persona's run of a cell failed; it then edited that cell without running it again
    and now waits for approval: the recap and the state say the cell's last run failed."""
    later = chat(
        human("@Claude retrain the churn model in churn.ipynb", 100),
        tools(101, RUN_FAILED),
        tools(102, EDIT),
        reply("I changed the merge; next I'll move the old model away.", 103),
        tools(104, MOVE),
    )
    (tmp_path / "churn.chat").write_text(json.dumps(later), encoding="utf-8")
    env = offline_env()
    result = run_cli("churn.chat", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    recap = result.stdout.strip().splitlines()[0]
    assert "run_cell (c7) failed: KeyError: 'region'" in recap, recap
    assert recap.endswith("Waiting for your approval: mv models/churn.pkl models/old/.")
    state = run_cli("--state", "churn.chat", cwd=tmp_path, env=env)
    assert state.returncode == 0, state.stderr
    assert "Open failures:\n- run_cell (c7): KeyError: 'region'" in state.stdout
    assert "Waiting for your approval: mv models/churn.pkl models/old/" in state.stdout
    assert "Changed: cell c7 (1 change)" in state.stdout
