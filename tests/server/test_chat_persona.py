"""The test persona "Claude" in a real lab with Jupyter AI's chats (tests/persona/, chatkit).

These tests hold the persona and its helpers to what the chat tests rely on: a message posted
as the person reaches the persona, which leaves in the ``.chat`` file the messages Jupyter AI's
ACP client writes for a Claude Code turn (tool calls with their statuses, a permission request
that waits for the person, the reply), and really edits the notebook the prompt names. One lab
per module; each test uses chat files and notebooks of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chatkit import (
    FAKE_GITHUB_TOKEN,
    FAKE_OPENAI_KEY,
    MCP_TOOL,
    PERSONA_MODEL,
    PERSONA_NAME,
    Call,
    Chat,
    Events,
    chat_lab,
    is_reply,
    tool_calls,
    write_chat,
)
from labserver import PERSONA_ID, LabServer

MOVE = "mv models/churn.pkl models/old/"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with chat_lab(tmp_path_factory.mktemp("chatlab")) as server:
        yield server


def cells(lab: LabServer, name: str) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads((lab.root / name).read_text())["cells"]
    return cells


def by_title(chat: Chat) -> dict[str, dict[str, Any]]:
    return {call["title"]: call for call in chat.calls()}


def test_a_notebook_fix_that_fails_then_waits_for_approval(lab: LabServer) -> None:
    lab.write_notebook("churn.ipynb", ["import math", "print('old')"])
    with Chat.create(lab, "fix.chat") as chat:
        prompt = chat.post("@Claude fix churn.ipynb, fail and approval")
        call = chat.wait_for_permission()
        # The person is away: the persona waits, showing it is busy, with no reply yet.
        assert call["title"] == f"`{MOVE}`"
        assert call["kind"] == "execute"
        assert call["raw_input"]["command"] == MOVE
        assert call["status"] == "in_progress"
        assert [o["option_id"] for o in call["permission_options"]] == [
            "allow_always",
            "allow",
            "reject",
        ]
        assert call["session_id"] == chat.read()["metadata"]["acp_session_ids"][PERSONA_ID]
        assert chat.writing() == "is typing..."
        assert not any(is_reply(m) for m in chat.messages())

        chat.answer(call, "allow")
        reply = chat.wait_for_reply(after=prompt)
        assert reply["body"] == (
            "Error: running cell cell-1 of churn.ipynb raised KeyError: 'region'."
        )
        chat.wait(lambda c: c.writing() is None, 10)

    messages = chat.messages()
    assert messages[0]["id"] == prompt
    assert messages[0]["metadata"] == {"to_persona": PERSONA_ID}
    assert messages[0]["mentions"] == [PERSONA_ID]
    notebook = str(lab.root / "churn.ipynb")
    calls = by_title(chat)
    read, edit, run = (
        calls[f"{MCP_TOOL}{tool}"] for tool in ("read_notebook", "edit_cell", "run_cell")
    )
    assert read["status"] == "completed" and read["kind"] == "read"
    assert read["locations"] == [notebook]
    assert edit["status"] == "completed" and edit["kind"] == "edit"
    assert edit["raw_input"]["file_path"] == "churn.ipynb"
    assert edit["raw_input"]["cell_id"] == "cell-1"
    assert edit["locations"] == [notebook]
    assert edit["diffs"] == [
        {"path": notebook, "old_text": "print('old')", "new_text": edit["raw_input"]["content"]}
    ]
    assert run["status"] == "failed" and run["kind"] == "execute"
    assert run["raw_output"]["error"] == "KeyError: 'region'"
    # The three notebook calls ran back to back: one message holds them.
    grouped = [m for m in messages if len(tool_calls(m)) == 3]
    assert len(grouped) == 1
    moved = calls[f"`{MOVE}`"]
    assert moved["status"] == "completed"
    assert moved["permission_status"] == "resolved"
    assert moved["selected_option_id"] == "allow"
    # The edit and the failed run are on disk, saved through the contents manager.
    cell = cells(lab, "churn.ipynb")[1]
    assert "region" in "".join(cell["source"])
    assert cell["outputs"][0]["ename"] == "KeyError"
    assert cell["outputs"][0]["evalue"] == "'region'"
    users = chat.read()["users"]
    assert users[PERSONA_ID]["display_name"] == PERSONA_NAME
    assert users[PERSONA_ID]["bot"] is True


def test_a_successful_fix_and_a_rejection_by_message(lab: LabServer) -> None:
    lab.write_notebook("sales.ipynb", ["print('old')"])
    with Chat.create(lab, "ok.chat") as chat:
        prompt = chat.post("@Claude tidy sales.ipynb then ask approval")
        chat.wait_for_permission()
        answer = chat.post("@Claude reject")
        reply = chat.wait_for_reply(after=prompt)
    assert reply["body"].startswith("Error: you rejected moving models/churn.pkl")
    calls = by_title(chat)
    assert calls[f"{MCP_TOOL}run_cell"]["status"] == "completed"
    assert calls[f"{MCP_TOOL}run_cell"]["raw_output"]["result"] == "churn rate: 50%"
    moved = calls[f"`{MOVE}`"]
    assert (moved["status"], moved["permission_status"]) == ("failed", "resolved")
    assert moved["selected_option_id"] == "reject"
    # "reject" answered the permission; it is not a new prompt.
    assert [m["id"] for m in chat.messages() if m["sender"] != PERSONA_ID] == [prompt, answer]
    assert cells(lab, "sales.ipynb")[0]["outputs"][0]["text"] == ["churn rate: 50%\n"]


def test_stop_while_a_permission_waits(lab: LabServer) -> None:
    with Chat.create(lab, "stop.chat") as chat:
        chat.post("@Claude this needs approval")
        chat.wait_for_permission()
        chat.stop()
        chat.wait(lambda c: c.calls()[0]["status"] == "failed", 10)
        chat.wait(lambda c: c.writing() is None, 10)
    (call,) = chat.calls()
    assert call["permission_status"] == "resolved"
    assert "selected_option_id" not in call
    assert not any(is_reply(m) for m in chat.messages())


def test_a_failing_command_without_a_notebook(lab: LabServer) -> None:
    with Chat.create(lab, "fail.chat") as chat:
        chat.post("@Claude load the data, it will fail")
        reply = chat.wait_for_reply()
    (call,) = chat.calls()
    assert call["status"] == "failed"
    assert call["raw_output"].endswith("KeyError: 'region'")
    assert reply["body"].startswith("Error:")


def test_hostile_content_arrives_whole(lab: LabServer) -> None:
    with Chat.create(lab, "hostile.chat") as chat:
        chat.post("@Claude show me something hostile")
        reply = chat.wait_for_reply()
    (call,) = chat.calls()
    assert len(call["raw_output"]) == 2 * 1024 * 1024
    assert "\x1b[31m" in call["raw_output"] and "\u202e" in call["raw_output"]
    assert call["raw_input"]["env"] == {
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "GITHUB_TOKEN": FAKE_GITHUB_TOKEN,
    }
    assert "<img src=x onerror=alert(1)>" in call["title"]
    assert "<img src=x onerror=alert(1)>" in reply["body"]
    assert re.fullmatch(r"sk-proj-[A-Za-z0-9]{48}", FAKE_OPENAI_KEY)
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", FAKE_GITHUB_TOKEN)


def test_the_persona_reports_its_model_and_usage(lab: LabServer) -> None:
    """What the persona manager publishes over Jupyter Events for the browser's toolbar."""
    with Events(lab) as events, Chat.create(lab, "model.chat") as chat:
        chat.post("@Claude hello")
        assert chat.wait_for_reply()["body"] == "Done: nothing needed changing."
        state = chat.wait(
            lambda _: (s := events.persona_state()).get("usage", {}).get("context_size") and s, 10
        )
    assert state["model"]["current"] == PERSONA_MODEL
    assert [o["id"] for o in state["model"]["options"]] == [PERSONA_MODEL, "claude-test-2"]
    assert state["usage"]["input_tokens"] > 0 and state["usage"]["output_tokens"] > 0
    assert state["usage"]["context_size"] == 200_000


def test_write_chat_matches_what_the_server_writes(lab: LabServer, tmp_path: Path) -> None:
    """A file from ``write_chat`` has the keys and shapes of one the server wrote."""
    with Chat.create(lab, "shape.chat") as chat:
        chat.post("@Claude fix shape.ipynb")
        chat.wait_for_reply()
    real = chat.read()
    written = write_chat(
        tmp_path / "w.chat",
        [
            (
                "@Claude fix shape.ipynb",
                [
                    "I'll look at shape.ipynb first.",
                    [Call(f"{MCP_TOOL}read_notebook", "read", raw_input={"file_path": "x"})],
                    "Error: could not read shape.ipynb.",
                ],
            )
        ],
    )
    assert list(written) == list(real) == ["messages", "users", "attachments", "metadata"]
    assert [list(m) for m in written["messages"]] == [list(m) for m in real["messages"]][
        : len(written["messages"])
    ]
    persona = real["users"][PERSONA_ID]
    assert written["users"][PERSONA_ID] == persona
    assert list(written["metadata"]) == list(real["metadata"])
    assert json.loads((tmp_path / "w.chat").read_text()) == written


def test_the_cli_recaps_a_chat_the_persona_wrote(lab: LabServer) -> None:
    """`jupyter recap PATH.chat` on the file the persona leaves, while it waits and after."""
    from cliutil import offline_env, run_cli

    lab.write_notebook("cli.ipynb", ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"])
    with Chat.create(lab, "cli.chat") as chat:
        chat.post("@Claude please fix cli.ipynb, fail and approval")
        call = chat.wait_for_permission()
        waiting = run_cli("cli.chat", cwd=lab.root, env=offline_env())
        assert waiting.returncode == 0, waiting.stderr
        recap, engine = waiting.stdout.strip().splitlines()
        assert "KeyError: 'region'" in recap
        assert recap.endswith(f"Waiting for your approval: {MOVE}.")
        assert engine == "— offline"
        chat.answer(call, "allow")
        chat.wait_for_reply()
        done = json.loads(run_cli("cli.chat", "--json", cwd=lab.root, env=offline_env()).stdout)
        assert (done["agent"], done["state"], done["approval"]) == ("Claude", "finished", None)
        assert "Waiting for your approval" not in done["recap"]
