"""A CLI agent's session on a notebook, told by its hooks, is a turn of the notebook's record.

A real ``jupyter lab`` on 127.0.0.1 and a notebook session's kernel with jupyter_recap loaded;
the real ``jupyter recap hook`` command (through the ``jupyter`` launcher, as an agent's hook
configuration runs it) is fed a recorded Claude Code session on that notebook: its prompt, a
read and a ``NotebookEdit`` of the notebook by its absolute path, a shell command, the stop
with its final answer. The server reads the spool into the kernel, whose ``%recap --dry-run``
then shows the ask, the edit and the answer, in that order.

And the same session interrupted (Claude Code then sends no ``Stop``), run through the
README's command (``jupyter-recap hook``) against a server whose silence is short: ``%recap``
answers while the turn has no stop, the agents row then says "no stop received" and stops
counting, the automatic recap that waited for the turn comes, and a late stop still lands.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cliutil import VENV_BIN, offline_env
from kernelutil import execute, feed_ready, stream_text
from labserver import LabServer, running_lab

pytestmark = pytest.mark.timeout(240)

DATA = Path(__file__).parent.parent / "data" / "hooks"
SETUP = feed_ready(reported=True)
ENTRIES = "[(e.kind, e.name, e.text) for e in ext.transcript.entries]"
SILENCE = 15.0
"""The quiet server's ``hook_silence_seconds``: long enough to ask ``%recap`` within it."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    tmp: Path = tmp_path_factory.mktemp("hooks")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as server:
        yield server, tmp


@pytest.fixture(scope="module")
def quiet_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    """A lab whose server ends a CLI agent's turn after ``SILENCE`` seconds without a word."""
    tmp: Path = tmp_path_factory.mktemp("hooks-silence")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    args = [f"--RecapServer.hook_silence_seconds={SILENCE:g}"]
    with running_lab(tmp, env, args=args) as server:
        yield server, tmp


def until(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def kernel_value(kc: Any, expression: str) -> Any:
    """A value of the kernel, read from the execute reply (no output in the way)."""
    msg_id = kc.execute("", user_expressions={"v": expression}, store_history=False)
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    result = reply["content"]["user_expressions"]["v"]
    assert result["status"] == "ok", result
    return eval(result["data"]["text/plain"])  # our own kernel's repr


def claude_code_session(root: Path) -> list[dict[str, Any]]:
    text = (DATA / "claude_code_session.json").read_text()
    payloads: list[dict[str, Any]] = json.loads(
        text.replace("{root}", str(root)).replace("{home}", "/home/someone")
    )
    return payloads


def test_a_claude_code_session_on_a_notebook_is_a_turn_of_its_kernel_s_record(
    lab: tuple[LabServer, Path],
) -> None:
    server, tmp = lab
    path = server.write_notebook("churn.ipynb", ["import pandas as pd", "df = load()"])
    session = {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}
    kernel_id = server.api("POST", "api/sessions", session)["kernel"]["id"]
    kc = server.connect(kernel_id)
    try:
        assert stream_text(execute(kc, SETUP)).strip() == "connected"
        row = f"jupyter-recap/api/agents/{kernel_id}"
        until(lambda: server.api("GET", row)["agent"]["path"] == path)
        # The agent's hooks run the real command, with the server's store.
        env = offline_env(JUPYTER_RECAP_HOME=str(tmp / "recap-home"))
        payloads = claude_code_session(server.root)
        for payload in payloads:
            done = subprocess.run(
                [str(VENV_BIN / "jupyter"), "recap", "hook"],
                input=json.dumps(payload).encode(),
                capture_output=True,
                cwd=server.root,
                env=env,
                timeout=60,
            )
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done
        entries = until(
            lambda: (found := kernel_value(kc, ENTRIES)) and found[-1][0] == "outcome" and found
        )
        outside = [(kind, name) for kind, name, _ in entries if kind != "code"]
        assert outside[-8:] == [
            ("user", None),
            ("event", None),
            ("tool_call", "NotebookEdit"),
            ("tool_result", "NotebookEdit"),
            ("tool_call", "Bash"),
            ("tool_result", "Bash"),
            ("assistant", None),
            ("outcome", None),
        ]
        # What a model would read for a recap of this notebook: the agent's turn.
        request = stream_text(execute(kc, "%recap --dry-run --model openai:gpt-test"))
        ask = request.index("User: churn.ipynb fails on the region column")
        edit = request.index("Tool call: NotebookEdit(replace cell cell-1 of churn.ipynb")
        answer = request.index("Assistant: Fixed: missing regions are now 'unknown'")
        who = request.index(
            "Event: Asked of Claude Code, which worked on this notebook from outside"
        )
        assert ask < who < edit < answer, request
    finally:
        kc.stop_channels()
        server.api("DELETE", f"api/kernels/{kernel_id}")


def run_hooks(command: list[str], payloads: list[dict[str, Any]], cwd: Path, home: Path) -> None:
    """Run the hook ``command`` on each payload, as the agent does, with the server's store."""
    env = offline_env(JUPYTER_RECAP_HOME=str(home))
    for payload in payloads:
        done = subprocess.run(
            command,
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=cwd,
            env=env,
            timeout=60,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done


def test_an_interrupted_claude_code_turn_never_holds_the_notebook_s_recaps(
    quiet_lab: tuple[LabServer, Path],
) -> None:
    server, tmp = quiet_lab
    path = server.write_notebook("churn.ipynb", ["import pandas as pd", "df = load()"])
    session = {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}
    kernel_id = server.api("POST", "api/sessions", session)["kernel"]["id"]
    kc = server.connect(kernel_id)
    row = f"jupyter-recap/api/agents/{kernel_id}"
    try:
        setup = feed_ready(
            after_load="%config Recap.away_seconds = 1\n%config Recap.post_turn_seconds = 0.2",
            reported=True,
        )
        assert stream_text(execute(kc, setup)).strip() == "connected"
        until(lambda: server.api("GET", row)["agent"]["path"] == path)
        # The notebook is open in a tab; the person works in a terminal with Claude Code.
        tab = {"kernel_id": kernel_id, "path": path, "client_id": "tab", "focused": False}
        server.api("POST", "jupyter-recap/api/focus", tab)
        until(lambda: kernel_value(kc, "ext.schedule.focused") is False)
        prompt, read, edit, bash, stop = claude_code_session(server.root)
        command = [str(VENV_BIN / "jupyter-recap"), "hook"]  # the README's configuration
        run_hooks(command, [prompt, read, edit], server.root, tmp / "recap-home")
        until(lambda: ("tool_call", "NotebookEdit") in [e[:2] for e in kernel_value(kc, ENTRIES)])
        running = server.api("GET", row)["agent"]
        assert (running["state"], running["turn"]) == ("running", "running")

        # The person interrupts Claude Code (no Stop hook runs) and asks for a recap: one comes,
        # saying the CLI agent's turn has no stop yet.
        execute(kc, "%recap")
        result = "ext.drafting.last_result"
        answer = kernel_value(kc, f"({result}.reason, {result}.recap and {result}.recap.note)")
        assert answer[1] == "a CLI agent's turn on this notebook has no stop yet", answer
        assert kernel_value(kc, f"{result}.recap.text").strip()
        schedule = kernel_value(kc, "ext.schedule.status()")
        assert (schedule["turn_running"], schedule["outside_turn"]) == (False, True)
        execute(kc, "looked = True")  # the person reads it and goes on: the banner clears

        # After the silence the row says why the turn ended and no longer counts it.
        ended = until(
            lambda: (r := server.api("GET", row)["agent"])["turn"] == "aborted" and r,
            seconds=SILENCE + 30,
        )
        assert (ended["state"], ended["error"]) == ("idle", "no stop received (interrupted?)")
        assert ended["turn_ended"] >= running["turn_started"]
        # The automatic recap that waited for the turn comes, the person still away.
        recapped = until(
            lambda: (
                (r := server.api("GET", row)["agent"])["recap"]
                and r["recap"]["at"] >= ended["turn_ended"]
                and r
            ),
        )
        assert recapped["recap"]["model"] == "offline"
        assert kernel_value(kc, "ext.schedule.counters.last_reason") in ("away", "post_turn")

        # Claude Code was only slow: its last call and its stop come late, and still land.
        run_hooks(command, [bash, stop], server.root, tmp / "recap-home")
        finished = until(lambda: (r := server.api("GET", row)["agent"])["turn"] == "ok" and r)
        assert (finished["state"], finished["needs_you"]) == ("finished", "finished")
        told = [(kind, text) for kind, _, text in kernel_value(kc, ENTRIES) if kind != "recap"]
        assert [kind for kind, _ in told[-6:]] == [
            "outcome",  # aborted: no stop received
            "event",  # Claude Code went on after a silence
            "tool_call",
            "tool_result",
            "assistant",
            "outcome",  # ok
        ]
        assert told[-5][1].startswith("Claude Code went on after a silence")
    finally:
        kc.stop_channels()
        server.api("DELETE", f"api/kernels/{kernel_id}")


# -- CLI agents waiting for approval ---------------------------------------------------------------


def claude_code(session: str, cwd: Path, event: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook payload of ``session`` working in ``cwd`` (the documented fields)."""
    return {
        "session_id": session,
        "transcript_path": f"/home/someone/.claude/projects/-work/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def documented_approval(name: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    """A documented approval payload (tests/data/hooks/approvals.json) in ``cwd``."""
    text = (DATA / "approvals.json").read_text().replace("{home}", "/home/someone")
    payload: dict[str, Any] = json.loads(text.replace("{root}", str(cwd)))[name]
    return {**payload, **fields}


def loaded_kernel(server: LabServer, path: str) -> tuple[str, Any]:
    """A kernel with jupyter_recap loaded for the notebook at ``path``, its row there, and a tab
    of it reporting that the person looks elsewhere."""
    session = {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}
    kernel_id = server.api("POST", "api/sessions", session)["kernel"]["id"]
    kc = server.connect(kernel_id)
    assert stream_text(execute(kc, SETUP)).strip() == "connected"
    until(
        lambda: server.api("GET", f"jupyter-recap/api/agents/{kernel_id}")["agent"]["path"] == path
    )
    tab = {"kernel_id": kernel_id, "path": path, "client_id": f"tab-{path}", "focused": False}
    server.api("POST", "jupyter-recap/api/focus", tab)
    return kernel_id, kc


def test_a_claude_code_call_waiting_for_approval_tops_the_panel_until_its_result(
    lab: tuple[LabServer, Path],
) -> None:
    """Three Claude Code sessions in a terminal while the person is away from two notebooks:
    one's turn on failing.ipynb fails; one runs a command its rules allow; one, after reading
    approve.ipynb, asks to run ``rm -rf build/``. The approval heads the panel on
    approve.ipynb's row, before the failure, with a notice and in the title's count; the
    allowed command made no row; the command's result clears it."""
    server, tmp = lab
    home = tmp / "recap-home"
    fast = [str(VENV_BIN / "jupyter-recap"), "hook"]
    approve = server.write_notebook("approve.ipynb", ["import shutil", "shutil.rmtree('build')"])
    failing = server.write_notebook("failing.ipynb", ["import pandas as pd", "df = load()"])
    clients: list[tuple[str, Any]] = []
    try:
        clients = [loaded_kernel(server, approve), loaded_kernel(server, failing)]
        (approve_kernel, _), (failing_kernel, _) = clients
        root = server.root
        edit = {
            "tool_name": "NotebookEdit",
            "tool_input": {
                "notebook_path": str(root / failing),
                "cell_id": "cell-1",
                "new_source": "df = load('churn.csv')",
                "edit_mode": "replace",
            },
            "tool_response": {"cell_id": "cell-1", "edit_mode": "replace", "error": ""},
        }
        failed = {"error": "API Error: overloaded", "error_details": "529"}
        run_hooks(
            fast,
            [
                claude_code("b", root, "UserPromptSubmit", prompt="load the churn data"),
                claude_code("b", root, "PostToolUse", **edit),
                claude_code("b", root, "StopFailure", **failed),
            ],
            root,
            home,
        )
        failing_row = f"jupyter-recap/api/agents/{failing_kernel}"
        until(lambda: server.api("GET", failing_row)["agent"]["needs_you"] == "errored")

        # A command the agent's rules allow: it runs, and only its result is told.
        allowed = {
            "tool_name": "Bash",
            "tool_input": {"command": "ls build/"},
            "tool_response": {"stdout": "model.pkl", "stderr": "", "interrupted": False},
        }
        read = {
            "tool_name": "Read",
            "tool_input": {"file_path": str(root / approve)},
            "tool_response": {"type": "notebook", "file": {"cells": []}},
        }
        run_hooks(
            fast,
            [
                claude_code("c", root, "UserPromptSubmit", prompt="what is in build/?"),
                claude_code("c", root, "PostToolUse", **allowed),
                claude_code("a", root, "UserPromptSubmit", prompt="clean the build and rerun"),
                claude_code("a", root, "PostToolUse", **read),
            ],
            root,
            home,
        )
        # approve.ipynb's row needs nothing before (its kernel's session is named as JupyterLab
        # names it, so it resumes no other notebook's stored session).
        approve_row = f"jupyter-recap/api/agents/{approve_kernel}"
        before = server.api("GET", approve_row)["agent"]["needs_you"]
        assert before is None
        # Then a call that waits, through the jupyter launcher as a configuration may name it.
        asked = documented_approval("claude_code_bash", root, session_id="a")
        run_hooks([str(VENV_BIN / "jupyter"), "recap", "hook"], [asked], root, home)
        listing = until(
            lambda: (
                (found := server.api("GET", "jupyter-recap/api/agents"))["agents"][0]["state"]
                == "waiting"
                and found
            )
        )
        first, second = listing["agents"][:2]
        assert first["kernel_id"] == approve_kernel
        assert first["approval"] == ("Bash rm -rf build/ (Claude Code, answer in its terminal)")
        assert (first["needs_you"], first["notice"]) == ("approval", 1)
        assert (second["kernel_id"], second["needs_you"]) == (failing_kernel, "errored")
        assert listing["needing"] == 2  # the title's count
        # The command the rules allowed made no row and waits for nobody.
        assert [row["kind"] for row in listing["agents"]] == ["notebook", "notebook"]
        assert [row["state"] for row in listing["agents"]].count("waiting") == 1

        # The person approves in the terminal: the command's result clears the wait.
        done = {
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf build/"},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
        }
        run_hooks(fast, [claude_code("a", root, "PostToolUse", **done)], root, home)
        cleared = until(
            lambda: (row := server.api("GET", approve_row)["agent"])["state"] != "waiting" and row
        )
        # The row needs again what it needed before, if anything: the person has not looked.
        assert (cleared["needs_you"], cleared["approval"]) == (before, None)
        listing = server.api("GET", "jupyter-recap/api/agents")
        assert listing["needing"] == 1 + (before is not None)
        assert listing["agents"][0]["kernel_id"] == failing_kernel
    finally:
        for kernel_id, kc in clients:
            kc.stop_channels()
            server.api("DELETE", f"api/kernels/{kernel_id}")


def test_a_codex_call_waiting_with_no_notebook_has_a_row_of_its_own_until_the_stop(
    lab: tuple[LabServer, Path],
) -> None:
    server, tmp = lab
    folder = tmp / "scripts"
    folder.mkdir()
    asked = documented_approval("codex_shell", folder, session_id="codex-1")
    command = [str(VENV_BIN / "jupyter-recap"), "hook"]
    run_hooks(command, [asked], folder, tmp / "recap-home")
    row = until(
        lambda: next(
            (
                r
                for r in server.api("GET", "jupyter-recap/api/agents")["agents"]
                if r["kind"] == "cli"
            ),
            None,
        )
    )
    assert row["approval"] == "Bash pip install lightgbm (Codex, answer in its terminal)"
    assert (row["name"], row["folder"], row["agent"], row["path"]) == (
        "scripts",
        str(folder),
        "Codex",
        "",
    )
    assert (row["state"], row["needs_you"], row["notice"]) == ("waiting", "approval", 1)
    assert server.api("GET", f"jupyter-recap/api/agents/{row['id']}")["agent"]["id"] == row["id"]
    stop = {key: asked[key] for key in ("session_id", "turn_id", "cwd", "transcript_path")}
    run_hooks(command, [{**stop, "hook_event_name": "Stop"}], folder, tmp / "recap-home")
    until(
        lambda: all(
            r["kind"] != "cli" for r in server.api("GET", "jupyter-recap/api/agents")["agents"]
        )
    )
