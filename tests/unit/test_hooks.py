"""CLI agents' hooks: ``jupyter recap hook``, the hook spool and what a notebook's record gets.

The payloads under tests/data/hooks/ are sessions of Claude Code (with its own tools, and with
an MCP notebook server's), Codex and VS Code's agent hooks, written from their documented
shapes; ``{root}`` stands for the folder of the session's notebooks. The real command runs on
them (a subprocess, as an agent runs it) and so do malformed, huge and hostile payloads: every
run exits 0 and prints nothing, and the spool holds only bounded, redacted events.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cliutil import VENV_BIN, offline_env
from hypothesis import given
from hypothesis import strategies as st
from outsidekit import FakeSink

from jupyter_recap.cli import hook as hook_command
from jupyter_recap.errors import StoreWriteError, UnsafeStoreError
from jupyter_recap.hooks.events import (
    CLAUDE_CODE,
    CODEX,
    ERROR_CHARS,
    NAME_CHARS,
    OUTPUT_CHARS,
    PROMPT_CHARS,
    SUMMARY_CHARS,
    UNKNOWN_AGENT,
    VSCODE,
    HookEvent,
    event_from_json,
    normalise,
)
from jupyter_recap.hooks.sessions import (
    MAX_ASKS,
    MAX_CALLS,
    MAX_NOTEBOOKS,
    Delivery,
    HookSessions,
    notebook_under,
)
from jupyter_recap.server.outside.hooks import HookIntake
from jupyter_recap.stores import hookspool, sessionfiles
from jupyter_recap.stores.hookspool import SpoolReader, append, spool_path, store_root

DATA = Path(__file__).parent.parent / "data" / "hooks"
SESSIONS = {
    "claude_code_session.json": (CLAUDE_CODE, "churn.ipynb"),
    "claude_code_mcp_session.json": (CLAUDE_CODE, "eda.ipynb"),
    "codex_session.json": (CODEX, "forecast.ipynb"),
    "vscode_session.json": (VSCODE, "sales.ipynb"),
}
SECRET = "sk-proj-Q2xhdWRlQ29kZUhvb2tTZWNyZXQ0MjQyNDI0MjQy"
ENV_SECRET = "hunter2-but-much-longer-and-unshaped"


def session(name: str, root: Path) -> list[dict[str, Any]]:
    """A recorded session's payloads, with ``{root}`` and ``{home}`` filled in."""

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("{root}", str(root)).replace("{home}", "/home/someone")
        if isinstance(value, list):
            return [fill(item) for item in value]
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return value

    payloads: list[dict[str, Any]] = fill(json.loads((DATA / name).read_text()))
    return payloads


def events_of(payloads: list[dict[str, Any]], **options: Any) -> list[HookEvent]:
    found = [normalise(payload, at=1000.0 + n, **options) for n, payload in enumerate(payloads)]
    return [event for event in found if event is not None]


def entries_for(deliveries: list[Delivery], notebook: str) -> list[tuple[str, str | None]]:
    return [
        (entry["kind"], entry["name"])
        for delivery in deliveries
        if delivery.notebook == notebook
        for entry in delivery.entries
    ]


def spooled(store: Path) -> list[dict[str, Any]]:
    path = spool_path(store)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run_hook(
    payload: bytes, store: Path, *args: str, command: list[str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``jupyter recap hook ARGS`` (``python -m jupyter_recap.cli`` unless ``command``) with
    ``payload`` on stdin, as an agent runs it."""
    env = offline_env(JUPYTER_RECAP_HOME=str(store), MY_SERVICE_TOKEN=ENV_SECRET)
    return subprocess.run(
        [*(command or [sys.executable, "-m", "jupyter_recap.cli"]), "hook", *args],
        input=payload,
        capture_output=True,
        env=env,
        timeout=60,
    )


def silent(result: subprocess.CompletedProcess[bytes]) -> None:
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


# -- the documented configuration ---------------------------------------------------------------

#: The user guide's page on CLI agents' hooks (the README's section of old).
README = Path(__file__).parent.parent.parent / "docs" / "user-guide" / "cli-agents.md"


def readme_hook_configurations() -> list[dict[str, Any]]:
    """The JSON configurations of the documentation's page on CLI agents' hooks."""
    text = README.read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]


def commands_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["command"]] if isinstance(value.get("command"), str) else []
        return own + [c for item in value.values() for c in commands_in(item)]
    if isinstance(value, list):
        return [c for item in value for c in commands_in(item)]
    return []


def test_the_readme_s_hook_configurations_run_the_fast_command_and_it_records(
    tmp_path: Path,
) -> None:
    """Claude Code, Codex and VS Code run the configured line through a shell, from the
    environment's PATH: the package's own script, not the ``jupyter`` launcher (twice as slow),
    and it records the event."""
    configurations = readme_hook_configurations()
    assert len(configurations) == 3  # Claude Code, Codex, VS Code
    commands = [command for config in configurations for command in commands_in(config)]
    assert len(commands) == 9 and set(commands) == {"jupyter-recap hook"}
    store = tmp_path / "store"
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "fix it"}
    done = subprocess.run(
        commands[0],
        shell=True,
        input=json.dumps(prompt).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=offline_env(JUPYTER_RECAP_HOME=str(store)),
        timeout=60,
    )
    silent(done)
    assert [(event["kind"], event["text"]) for event in spooled(store)] == [("prompt", "fix it")]


# -- recorded sessions of each agent -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_each_agent_s_session_gives_its_notebook_the_ask_the_edit_and_the_answer(
    name: str, tmp_path: Path
) -> None:
    agent, notebook_name = SESSIONS[name]
    payloads = session(name, tmp_path)
    events = events_of(payloads)
    assert {event.agent for event in events} == {agent}
    notebook = str(tmp_path / notebook_name)
    sessions = HookSessions()
    deliveries = [delivery for event in events for delivery in sessions.feed(event)]
    kinds = [kind for kind, _ in entries_for(deliveries, notebook)]
    # The ask was held until the session touched the notebook; an event says who took it.
    assert kinds[:3] == ["user", "event", "tool_call"], kinds
    assert kinds[-1] == "outcome"
    records = [e for d in deliveries if d.notebook == notebook for e in d.entries]
    assert records[0]["text"] == events[0].text == payloads[0]["prompt"]
    assert records[1]["text"] == f"Asked of {agent}, which worked on this notebook from " + (
        "outside its kernel."
    )
    stop = payloads[-1]
    if "last_assistant_message" in stop:
        assert records[-2] == {
            "kind": "assistant",
            "text": stop["last_assistant_message"],
            "name": None,
            "error": None,
        }
    assert {d.notebook for d in deliveries} == {notebook}
    assert sum(d.edited for d in deliveries) >= 1


def test_claude_code_s_notebook_edit_is_one_line_with_the_cell_and_the_line_that_changed(
    tmp_path: Path,
) -> None:
    """The edit keeps the cell's ``import`` line and adds one under it: the line shown is the
    added one (the notebook before the edit is in the answer's ``original_file``)."""
    events = events_of(session("claude_code_session.json", tmp_path))
    read, edit, bash = (event for event in events if event.kind == "tool")
    assert (read.tool, read.notebook, read.touch) == ("Read", str(tmp_path / "churn.ipynb"), None)
    assert (edit.tool, edit.touch) == ("NotebookEdit", "edit")
    assert edit.text == "replace cell cell-1 of churn.ipynb: df['region'] = " + (
        "df['region'].fillna('unknown')"
    )
    assert (edit.output, edit.error) == ("", None)
    assert bash.text.startswith("jupyter nbconvert --to notebook --execute churn.ipynb")
    assert bash.output.startswith("[NbConvertApp] Writing")  # stdout was empty
    sessions = HookSessions()
    deliveries = [d for event in events for d in sessions.feed(event)]
    assert entries_for(deliveries, str(tmp_path / "churn.ipynb")) == [
        ("user", None),
        ("event", None),
        ("tool_call", "NotebookEdit"),
        ("tool_result", "NotebookEdit"),
        ("tool_call", "Bash"),
        ("tool_result", "Bash"),
        ("assistant", None),
        ("outcome", None),
    ]


def notebook_edit(
    new: str, response: dict[str, Any], *, cell: object = "c-2", mode: str = "replace"
) -> str:
    """The one line a ``NotebookEdit`` of cell ``cell`` writing ``new`` is recorded as."""
    event = normalise(
        {
            "hook_event_name": "PostToolUse",
            "session_id": "s",
            "permission_mode": "default",
            "tool_name": "NotebookEdit",
            "tool_input": {
                "notebook_path": "/home/me/churn.ipynb",
                "cell_id": cell,
                "new_source": new,
                "edit_mode": mode,
            },
            "tool_response": response,
        },
        at=1.0,
    )
    assert event is not None and event.touch == "edit"
    return event.text.partition(": ")[2]


def notebook_file(*sources: str, ids: bool = True) -> str:
    """A notebook's JSON text, as Claude Code's ``original_file`` holds it."""
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "source": source.splitlines(keepends=True),
            **({"id": f"c-{n}"} if ids else {}),
        }
        for n, source in enumerate(sources)
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_edit_shows_the_first_line_that_changed_however_the_old_source_is_told() -> None:
    before = "import pandas as pd\ndf = load()\nsummary = df.mean()"
    after = "import pandas as pd\ndf = load()\ndf = df.dropna()\nsummary = df.mean()"
    nb = notebook_file("x = 1", "y = 2", before)
    # The notebook before the edit, the cell found by its id, or by its index without ids.
    assert notebook_edit(after, {"original_file": nb}) == "df = df.dropna()"
    bare = notebook_file("x = 1", "y = 2", before, ids=False)
    assert notebook_edit(after, {"original_file": bare}, cell="cell-2") == "df = df.dropna()"
    assert notebook_edit(after, {"original_file": bare}, cell=2) == "df = df.dropna()"
    # Newer versions answer with the cell's old source itself.
    assert notebook_edit(after, {"old_source": before}) == "df = df.dropna()"
    # A line changed in place; lines only taken out.
    assert notebook_edit(before.replace("load()", "load(2024)"), {"old_source": before}) == (
        "df = load(2024)"
    )
    assert notebook_edit(before, {"old_source": after}) == "removed: df = df.dropna()"
    # The old source unknown (no answer, a cell not found, a torn file): the first line.
    assert notebook_edit(after, {}) == "import pandas as pd"
    assert notebook_edit(after, {"original_file": nb}, cell="c-9") == "import pandas as pd"
    assert notebook_edit(after, {"original_file": nb[:50]}) == "import pandas as pd"
    # An inserted cell is all new, whatever cell the answer's notebook has at that id.
    assert notebook_edit(after, {"original_file": nb}, mode="insert") == "import pandas as pd"
    # The line is redacted like the rest of the record.
    leaky = before + f"\nkey = '{SECRET}'"
    assert SECRET not in notebook_edit(leaky, {"old_source": before})
    assert notebook_edit(leaky, {"old_source": before}).startswith("key = ")


@given(
    lines=st.lists(
        st.sampled_from(["import os", "x = 1", "", "df = load()", "# note"]), max_size=8
    ),
    at=st.integers(min_value=0, max_value=8),
    replace=st.booleans(),
)
def test_the_line_shown_is_the_one_added_or_changed_wherever_it_is(
    lines: list[str], at: int, replace: bool
) -> None:
    at = min(at, len(lines) - 1 if replace and lines else len(lines))
    changed = "df = df.dropna() # the agent's line"
    after = list(lines)
    if replace and lines:
        after[at] = changed
    else:
        after.insert(at, changed)
    shown = notebook_edit("\n".join(after), {"old_source": "\n".join(lines)})
    assert shown == changed


def test_an_mcp_server_s_cell_tools_work_on_the_notebook_the_session_chose(
    tmp_path: Path,
) -> None:
    """``use_notebook`` names it; ``insert_cell`` and ``execute_cell`` name none but say they
    work on cells, so they work on it; the failed run's error reaches the record."""
    events = events_of(session("claude_code_mcp_session.json", tmp_path))
    use, insert, execute = (event for event in events if event.kind == "tool")
    assert (use.tool, use.notebook, use.touch) == (
        "use_notebook",
        str(tmp_path / "eda.ipynb"),
        None,
    )
    assert (insert.tool, insert.notebook, insert.touch) == ("insert_cell", None, "edit")
    assert (execute.touch, execute.error) == ("run", "NameError: name 'df' is not defined")
    sessions = HookSessions()
    deliveries = [d for event in events for d in sessions.feed(event)]
    notebook = str(tmp_path / "eda.ipynb")
    assert [(d.edited, d.ran) for d in deliveries if d.edited or d.ran] == [(1, 0), (0, 1)]
    results = [e for d in deliveries for e in d.entries if e["kind"] == "tool_result"]
    assert results[-1]["error"] == "NameError: name 'df' is not defined"
    assert entries_for(deliveries, notebook)[-1] == ("outcome", None)


def test_codex_s_apply_patch_names_the_notebook_it_changed(tmp_path: Path) -> None:
    events = events_of(session("codex_session.json", tmp_path))
    patch = next(event for event in events if event.tool == "apply_patch")
    assert (patch.agent, patch.notebook, patch.touch) == (
        CODEX,
        str(tmp_path / "forecast.ipynb"),
        "edit",
    )
    assert patch.text == "patch: update forecast.ipynb"


def test_the_payload_s_shape_says_which_agent_sent_it_and_agent_overrides_it() -> None:
    base = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "go"}
    claude = {**base, "transcript_path": "/h/.claude/projects/p/s.jsonl"}
    codex = {**base, "turn_id": "t"}
    vscode = {"hookEventName": "UserPromptSubmit", "sessionId": "s", "prompt": "go"}
    agents = [normalise(p, at=1.0) for p in (claude, codex, vscode, base)]
    assert [event.agent if event else None for event in agents] == [
        CLAUDE_CODE,
        CODEX,
        VSCODE,
        UNKNOWN_AGENT,
    ]
    named = normalise(base, at=1.0, agent="Gemini \x1b[31mCLI")
    assert named is not None and named.agent == "Gemini CLI"  # the escape removed whole


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "PreToolUse", "tool_name": "NotebookEdit", "tool_input": {}},
        {"hook_event_name": "Notification", "message": "Claude needs your permission"},
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "SubagentStop", "last_assistant_message": "sub-answer"},
        {"hook_event_name": "UserPromptSubmit", "prompt": ""},
        {"hook_event_name": "PostToolUse", "tool_input": {"notebook_path": "/a.ipynb"}},
        {"hook_event_name": 42},
        {},
    ],
)
def test_events_a_recap_does_not_need_are_no_events(payload: dict[str, Any]) -> None:
    assert normalise(payload, at=1.0) is None


def test_todo_writes_and_other_files_are_no_notebook_touch(tmp_path: Path) -> None:
    def tool(name: str, inputs: dict[str, Any]) -> HookEvent:
        payload = {"hook_event_name": "PostToolUse", "tool_name": name, "tool_input": inputs}
        event = normalise({**payload, "cwd": str(tmp_path)}, at=1.0)
        assert event is not None
        return event

    assert tool("TodoWrite", {"todos": []}).touch is None
    assert tool("Edit", {"file_path": "model.py", "new_string": "x"}).touch is None
    assert tool("mcp__files__edit_cell_file", {"path": "notes.md"}).touch is None
    write = tool("Write", {"file_path": "new.ipynb", "content": '{"cells": []}'})
    assert (write.notebook, write.touch, write.text) == (
        str(tmp_path / "new.ipynb"),
        "edit",
        "new.ipynb",
    )
    uri = tool("edit_notebook_file", {"uri": f"file://{tmp_path}/a%20b.ipynb"})
    assert uri.notebook == str(tmp_path / "a b.ipynb")
    escaped = tool("NotebookEdit", {"notebook_path": "../../etc/x.ipynb"})
    assert escaped.notebook == os.path.normpath(str(tmp_path / "../../etc/x.ipynb"))
    assert tool("NotebookEdit", {"notebook_path": "a\x1b]0;x\x07.ipynb"}).notebook is None


# -- what a notebook's record gets: the session rules ------------------------------------------


def prompt(text: str, session: str = "s", at: float = 1.0) -> HookEvent:
    return HookEvent("Claude Code", session, "prompt", at, text=text)


def edit(
    notebook: str | None, session: str = "s", at: float = 2.0, tool: str = "NotebookEdit"
) -> HookEvent:
    return HookEvent(
        "Claude Code", session, "tool", at, notebook=notebook, touch="edit", tool=tool, text="edit"
    )


def other_tool(session: str = "s", at: float = 3.0) -> HookEvent:
    return HookEvent("Claude Code", session, "tool", at, tool="Bash", text="pytest -q", output="ok")


def stop(
    answer: str = "Done.", session: str = "s", at: float = 4.0, error: str | None = None
) -> HookEvent:
    return HookEvent("Claude Code", session, "stop", at, text=answer, error=error)


def test_prompts_are_held_until_an_edit_names_a_notebook() -> None:
    sessions = HookSessions()
    assert sessions.feed(prompt("look at the data")) == []
    assert sessions.feed(other_tool()) == []  # no notebook yet: nothing to tell
    assert sessions.feed(stop("It has 3 columns.")) == []  # and the ask stays held
    assert sessions.feed(prompt("now put the plot in a.ipynb")) == []
    [first] = sessions.feed(edit("/w/a.ipynb"))
    assert [e["text"] for e in first.entries if e["kind"] == "user"] == [
        "look at the data",
        "now put the plot in a.ipynb",
    ]
    assert (first.edited, first.ran, first.agent) == (1, 0, "Claude Code")
    [call] = sessions.feed(other_tool())
    assert [e["kind"] for e in call.entries] == ["tool_call", "tool_result"]
    [done] = sessions.feed(stop("Plotted."))
    assert done.entries == [
        {"kind": "assistant", "text": "Plotted.", "name": None, "error": None},
        {"kind": "outcome", "text": "ok", "name": None, "error": None},
    ]
    # The next turn starts afresh: its ask waits for its own edit.
    assert sessions.feed(prompt("and a title")) == []
    [again] = sessions.feed(edit("/w/a.ipynb", at=9.0))
    assert [e["text"] for e in again.entries if e["kind"] == "user"] == ["and a title"]


def test_a_turn_cut_short_ends_aborted_and_a_failed_one_errored() -> None:
    sessions = HookSessions()
    sessions.feed(prompt("fix a.ipynb"))
    sessions.feed(edit("/w/a.ipynb"))
    # No stop came (the person interrupted the agent): the next prompt ends the turn.
    [aborted] = sessions.feed(prompt("no, stop", at=5.0))
    assert aborted.entries == [{"kind": "outcome", "text": "aborted", "name": None, "error": None}]
    sessions.feed(edit("/w/a.ipynb", at=6.0))
    [failed] = sessions.feed(stop("", at=7.0, error="overloaded"))
    assert failed.entries == [
        {"kind": "outcome", "text": "errored", "name": None, "error": "overloaded"}
    ]
    sessions.feed(prompt("once more", at=8.0))
    sessions.feed(edit("/w/a.ipynb", at=9.0))
    [ended] = sessions.feed(HookEvent("Claude Code", "s", "end", 10.0))
    assert ended.entries[-1]["text"] == "aborted"
    assert len(sessions) == 0


def test_sessions_are_apart_and_a_turn_tells_every_notebook_it_touched() -> None:
    sessions = HookSessions()
    sessions.feed(prompt("fix both", session="one"))
    sessions.feed(prompt("unrelated", session="two"))
    sessions.feed(edit("/w/a.ipynb", session="one"))
    [to_b, to_a] = sessions.feed(edit("/w/b.ipynb", session="one", at=3.0))
    assert (to_b.notebook, to_a.notebook) == ("/w/b.ipynb", "/w/a.ipynb")
    assert [e["text"] for e in to_b.entries if e["kind"] == "user"] == ["fix both"]
    assert (to_b.edited, to_a.edited) == (1, 0)
    finished = sessions.feed(stop(session="one"))
    assert {d.notebook for d in finished} == {"/w/a.ipynb", "/w/b.ipynb"}
    assert sessions.feed(stop(session="two")) == []  # its ask never touched a notebook


def test_the_state_is_bounded() -> None:
    sessions = HookSessions(max_sessions=3, idle=100.0)
    for n in range(10):
        sessions.feed(prompt(f"ask {n}", session=f"s{n}", at=float(n)))
    assert len(sessions) == 3
    sessions.feed(prompt("late", session="s9", at=1000.0))
    assert len(sessions) == 1  # the others were silent longer than `idle`

    sessions = HookSessions()
    for n in range(MAX_ASKS + 3):
        sessions.feed(prompt(f"ask {n}"))
        sessions.feed(stop())
    sessions.feed(prompt("last"))
    [first] = sessions.feed(edit("/w/a.ipynb"))
    asks = [e["text"] for e in first.entries if e["kind"] == "user"]
    assert len(asks) == MAX_ASKS and asks[-1] == "last"
    for n in range(MAX_CALLS + 5):
        sessions.feed(other_tool(at=10.0 + n))
    calls = sum(
        1 for d in sessions.feed(other_tool(at=99.0)) for e in d.entries if e["kind"] == "tool_call"
    )
    assert calls == 0
    sessions.feed(stop())
    sessions.feed(prompt("many notebooks"))
    touched = [d for n in range(MAX_NOTEBOOKS + 2) for d in sessions.feed(edit(f"/w/{n}.ipynb"))]
    with_entries = {d.notebook for d in touched if d.entries and d.edited}
    assert len(with_entries) == MAX_NOTEBOOKS
    assert sum(d.edited for d in touched) == MAX_NOTEBOOKS + 2  # every touch is still noted


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/srv/root/a.ipynb", "a.ipynb"),
        ("/srv/root/analysis/deep/b.ipynb", "analysis/deep/b.ipynb"),
        ("/srv/root/../root/c.ipynb", "c.ipynb"),
        ("/srv/root/../elsewhere/c.ipynb", None),
        ("/srv/root2/d.ipynb", None),
        ("/srv/root/notes.py", None),
        ("relative.ipynb", None),
        ("/srv/real/e.ipynb", "e.ipynb"),
    ],
)
def test_a_notebook_is_named_relative_to_the_root_only_from_inside_it(
    path: str, expected: str | None
) -> None:
    assert notebook_under(path, ["/srv/root", "/srv/real"]) == expected


# -- the command ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_command_spools_each_payload_s_event_and_prints_nothing(
    name: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    payloads = session(name, tmp_path)
    for payload in payloads:
        silent(run_hook(json.dumps(payload).encode(), store))
    lines = spooled(store)
    events = [event_from_json(line) for line in lines]
    assert None not in events
    expected = events_of(payloads)
    assert [(e.kind, e.tool, e.notebook, e.text) for e in events if e] == [
        (e.kind, e.tool, e.notebook, e.text) for e in expected
    ]
    assert stat.S_IMODE(spool_path(store).stat().st_mode) == 0o600
    assert stat.S_IMODE(spool_path(store).parent.stat().st_mode) == 0o700


def test_both_command_forms_and_the_agent_option(tmp_path: Path) -> None:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi"})
    store = tmp_path / "store"
    silent(run_hook(payload.encode(), store, command=[str(VENV_BIN / "jupyter-recap")]))
    silent(run_hook(payload.encode(), store, command=[str(VENV_BIN / "jupyter"), "recap"]))
    silent(run_hook(payload.encode(), store, "--agent", "Gemini CLI"))
    silent(run_hook(payload.encode(), store, "--agent=Copilot CLI", "--unknown-flag"))
    assert [line["agent"] for line in spooled(store)] == [
        UNKNOWN_AGENT,
        UNKNOWN_AGENT,
        "Gemini CLI",
        "Copilot CLI",
    ]


HOSTILE = [
    b"",
    b"not json at all",
    b"\xff\xfe\x00garbage",
    b"[]",
    b"null",
    b'"UserPromptSubmit"',
    b'{"hook_event_name": "UserPromptSubmit", "prompt": 12}',
    b'{"hook_event_name": ["Stop"], "session_id": {"x": 1}}',
    b"[" * 200_000 + b"]" * 200_000,
    b'{"a": ' * 50_000 + b"1" + b"}" * 50_000,
    b'{"hook_event_name": "Stop", "last_assistant_message": 1e999999}',
    b'{"hook_event_name": "PostToolUse", "tool_name": "NotebookEdit", "tool_input": "a string"}',
    b'{"hook_event_name": "PostToolUse", "tool_name": "NotebookEdit", '
    b'"tool_input": {"notebook_path": ["x"]}}',
    b'{"hook_event_name": "UserPromptSubmit", "prompt": "' + b"9" * 5000 + b'"}',
]


@pytest.mark.parametrize("payload", HOSTILE, ids=[f"payload-{n}" for n in range(len(HOSTILE))])
def test_malformed_payloads_exit_0_silently_and_write_nothing_unsafe(
    payload: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    silent(run_hook(payload, store))
    for line in spooled(store):
        assert event_from_json(line) is not None
        assert len(json.dumps(line)) < hookspool.MAX_LINE_BYTES


def test_a_huge_payload_is_read_to_its_end_and_dropped(tmp_path: Path) -> None:
    """An agent writing 3 MB to the hook never sees its write fail (the command reads it all),
    and nothing of it is kept."""
    store = tmp_path / "store"
    prompt_text = "x" * (3 << 20)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt_text})
    silent(run_hook(payload.encode(), store))
    assert spooled(store) == []


def test_hostile_text_is_bounded_printable_and_redacted(tmp_path: Path) -> None:
    store = tmp_path / "store"
    evil = (
        f"use {SECRET} and password={ENV_SECRET} \x1b]52;c;cGF5bG9hZA==\x07\u202eoverride "
        "\ud800" + "long " * 5000
    )
    payloads = [
        {"hook_event_name": "UserPromptSubmit", "session_id": "s" * 500, "prompt": evil},
        {
            "hook_event_name": "PostToolUse",
            "session_id": "s",
            "cwd": str(tmp_path),
            "tool_name": "Bash" + "\x1b[2J" * 50,
            "tool_input": {"command": evil},
            "tool_response": {"stdout": evil, "exit_code": 2, "stderr": evil},
        },
        {"hook_event_name": "Stop", "session_id": "s", "last_assistant_message": evil},
    ]
    for payload in payloads:
        silent(run_hook(json.dumps(payload).encode(), store))
    raw = spool_path(store).read_text(encoding="utf-8")
    for secret in (SECRET, ENV_SECRET, "\x1b", "\u202e", "\\u001b", "\\u202e", "\\ud800"):
        assert secret not in raw
    prompt_line, tool_line, stop_line = spooled(store)
    assert len(prompt_line["text"]) <= PROMPT_CHARS + 1 and prompt_line["text"].endswith("…")
    assert len(prompt_line["session"]) <= 128
    assert len(tool_line["tool"]) <= NAME_CHARS and len(tool_line["text"]) <= SUMMARY_CHARS
    assert len(tool_line["output"]) <= OUTPUT_CHARS and len(tool_line["error"]) <= ERROR_CHARS
    assert "[redacted]" in stop_line["text"]


def test_a_store_others_can_write_gets_nothing_and_the_agent_sees_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    store.chmod(0o777)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "secret plans"})
    silent(run_hook(payload.encode(), store))
    assert not (store / "hooks").exists()
    with pytest.raises(UnsafeStoreError):
        append({"v": 1}, store=store)


def test_a_link_planted_at_the_spool_is_never_followed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "hooks").mkdir(parents=True, mode=0o700)
    store.chmod(0o700)
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched\n")
    spool_path(store).symlink_to(target)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hello"})
    silent(run_hook(payload.encode(), store))
    assert target.read_text() == "untouched\n"
    with pytest.raises(StoreWriteError, match="cannot open the hook spool"):
        append({"v": 1}, store=store)


def test_the_command_loads_nothing_it_does_not_need(tmp_path: Path) -> None:
    """On every tool call of the agent: no sessions store, no argparse or dataclasses, no
    jupyter_core.paths (the data folder is worked out here), no server or kernel code."""
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    (tmp_path / "payload.json").write_text(payload)
    probe = (
        "import sys; from jupyter_recap.cli import main;"
        "sys.stdin = open(sys.argv[1]); main(['hook']);"
        "sys.stderr.write(' '.join(sorted(sys.modules)))"
    )
    env = offline_env(XDG_DATA_HOME=str(tmp_path / "data"))
    for name in ("JUPYTER_RECAP_HOME", "JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "payload.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "", done
    loaded = set(done.stderr.split())
    unwanted = {
        "jupyter_core.paths",
        "jupyter_recap.stores.sessions",
        "jupyter_recap.record.transcript",
        "jupyter_recap.cli.common",
        "argparse",
        "dataclasses",
        "IPython",
        "tornado",
        "httpx",
    }
    assert loaded & unwanted == set()
    assert spool_path(tmp_path / "data" / "jupyter" / "recap").exists()


# -- the spool -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        {"JUPYTER_RECAP_HOME": "~/recap-here"},
        {"JUPYTER_DATA_DIR": "/srv/jupyter-data"},
        {"XDG_DATA_HOME": "/srv/xdg"},
        {},
        {"JUPYTER_PLATFORM_DIRS": "1"},
    ],
)
def test_the_spool_is_in_the_session_store_s_folder(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "JUPYTER_RECAP_HOME",
        "JUPYTER_DATA_DIR",
        "XDG_DATA_HOME",
        "JUPYTER_PLATFORM_DIRS",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hookspool.HOME_ENV == sessionfiles.HOME_ENV
    assert store_root() == sessionfiles.store_dir()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store"


def line(n: int, size: int = 0) -> dict[str, Any]:
    return {"v": 1, "n": n, "pad": "x" * size}


def test_the_reader_starts_at_the_end_and_reads_each_line_once(store: Path) -> None:
    append(line(0), store=store)  # history
    reader = SpoolReader(store)
    reader.skip_to_end()
    assert not reader.changed()
    append(line(1), store=store)
    append(line(2), store=store)
    assert reader.changed()
    assert [item["n"] for item in reader.read()] == [1, 2]
    assert not reader.changed() and reader.read() == []


def test_a_partial_last_line_waits_and_a_torn_one_is_skipped(store: Path) -> None:
    reader = SpoolReader(store)
    reader.skip_to_end()
    append(line(1), store=store)
    with spool_path(store).open("ab") as spool:
        spool.write(b'{"v": 1, "n": 2')  # still being written
    assert [item["n"] for item in reader.read()] == [1]
    with spool_path(store).open("ab") as spool:
        spool.write(b', "pad": ""}\n{"torn\n')  # finished; then a hook killed mid-line
    append(line(3), store=store)
    assert [item["n"] for item in reader.read()] == [2, 3]


def test_a_long_backlog_is_read_over_several_looks(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hookspool, "READ_BYTES", 1024)
    monkeypatch.setattr(hookspool, "MAX_LINE_BYTES", 300)
    reader = SpoolReader(store)
    reader.skip_to_end()
    for n in range(40):
        append(line(n, 100), store=store)
    seen: list[int] = []
    for _ in range(40):
        if reader.changed():
            seen += [item["n"] for item in reader.read()]
    assert seen == list(range(40))


def test_the_spool_rotates_and_the_reader_follows_without_loss(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hookspool, "ROTATE_BYTES", 4096)
    reader = SpoolReader(store)
    reader.skip_to_end()
    seen: list[int] = []
    for n in range(60):
        append(line(n, 200), store=store)
        if n % 7 == 0:
            seen += [item["n"] for item in reader.read()]
    seen += [item["n"] for item in reader.read()]
    assert seen == list(range(60))
    folder = store / "hooks"
    assert sorted(p.name for p in folder.iterdir()) == ["events.1.jsonl", "events.jsonl"]
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total <= 2 * 4096 + 2 * 300
    assert stat.S_IMODE((folder / "events.1.jsonl").stat().st_mode) == 0o600


def test_the_reader_refuses_a_store_others_can_write(store: Path) -> None:
    append(line(1), store=store)
    reader = SpoolReader(store)
    store.chmod(0o777)
    try:
        with pytest.raises(UnsafeStoreError):
            reader.read()
    finally:
        store.chmod(0o700)
    assert [item["n"] for item in reader.read()] == [1]


# -- arbitrary JSON ------------------------------------------------------------------------------

EVENT_NAMES = ["UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "StopFailure"]
KEYS = [
    "prompt",
    "tool_name",
    "tool_input",
    "tool_response",
    "last_assistant_message",
    "error",
    "cwd",
    "session_id",
    "notebook_path",
    "command",
    "stdout",
    "new_source",
    "file_path",
]
leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
texts = st.text(max_size=30).map(lambda t: f"{t} {SECRET} {ENV_SECRET} ") | st.text(max_size=30)
values = st.recursive(
    leaves | texts,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=20,
)
payloads = st.fixed_dictionaries(
    {"hook_event_name": st.sampled_from(EVENT_NAMES)},
    optional={key: values for key in KEYS},
)


@given(payload=payloads | values)
def test_any_json_gives_no_error_and_no_secret(payload: Any) -> None:
    env = {"MY_SERVICE_TOKEN": ENV_SECRET}
    event = normalise(payload, at=1.0, cwd="/w", env=env)
    if event is None:
        return
    text = json.dumps(event.to_json(), ensure_ascii=False)
    assert SECRET not in text and ENV_SECRET not in text
    assert event_from_json(json.loads(text)) == event
    HookSessions().feed(event)


@given(data=values)
def test_any_json_in_a_spool_line_is_an_event_or_nothing(data: Any) -> None:
    record = data if not isinstance(data, dict) else {"v": 1, "kind": "tool", "at": 1.0, **data}
    event = event_from_json(record)
    assert event is None or (event.kind in {"prompt", "tool", "stop", "end"} and event.agent)


# -- the server's intake -------------------------------------------------------------------------


def fake_sink(root: Path) -> FakeSink:
    """A server whose agents panel has a notebook row for ``analysis/churn.ipynb`` (kernel k1)
    and one for ``other.ipynb`` (k2)."""
    return FakeSink(root, kernels={"analysis/churn.ipynb": ["k1"], "other.ipynb": ["k2"]})


@pytest.mark.usefixtures("own_loop")
def test_the_intake_sends_new_events_to_the_notebook_s_kernel_and_notes_who(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(store))
    root = tmp_path / "root"
    (root / "analysis").mkdir(parents=True)
    payloads = session("claude_code_session.json", root / "analysis")
    first = normalise(payloads[0], at=1.0)
    assert first is not None
    append({**first.to_json(), "text": "history, not news"})
    sink = fake_sink(root)
    intake = HookIntake(sink)
    intake.start()
    try:
        for payload in payloads:
            event = normalise(payload, at=2.0)
            assert event is not None
            append(event.to_json())
        outside = first._replace(notebook="/elsewhere/x.ipynb", kind="tool", touch="edit")
        append(outside.to_json())
        intake.poll()
    finally:
        intake.stop()
    assert [(t.path, t.who, t.at, t.edited, t.ran) for t in sink.touch_list] == [
        ("analysis/churn.ipynb", CLAUDE_CODE, 2.0, 1, 0)
    ]
    assert {kernel for kernel, _, _ in sink.entries} == {"k1"}
    sent = [entry for _, entries, _ in sink.entries for entry in entries]
    texts = [entry["text"] for entry in sent if entry["kind"] == "user"]
    assert texts == [payloads[0]["prompt"]]
    assert sent[-1]["kind"] == "outcome"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.usefixtures("own_loop")
def test_the_intake_reports_an_unsafe_store_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = Lines()
    logging.getLogger("jupyter_recap.server.outside.hooks").addHandler(lines)
    store = tmp_path / "store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(store))
    append(line(0), store=store)
    intake = HookIntake(fake_sink(tmp_path))
    intake.start()
    try:
        append(line(1), store=store)
        store.chmod(0o777)
        for _ in range(3):
            intake.poll()
        store.chmod(0o700)
        intake.poll()
    finally:
        intake.stop()
        store.chmod(0o700)
        logging.getLogger("jupyter_recap.server.outside.hooks").removeHandler(lines)
    warnings = [line for line in lines.lines if "hook spool" in line]
    assert len(warnings) == 1 and "cannot be trusted" in warnings[0]


def test_the_note_of_a_failed_write_goes_to_the_debug_log(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    store.chmod(0o777)
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(store))
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}))
    with payload.open() as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert hook_command.run_hook([]) == 0
    assert "hook: not recorded" in isolated_env.read_text()
