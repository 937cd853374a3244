"""A CLI agent's session on a notebook, told by its hooks, is a turn of the notebook's record.

A real ``jupyter lab`` on 127.0.0.1 and a notebook session's kernel with jupyter_recap loaded;
the real ``jupyter recap hook`` command (through the ``jupyter`` launcher, as an agent's hook
configuration runs it) is fed a recorded Claude Code session on that notebook: its prompt, a
read and a ``NotebookEdit`` of the notebook by its absolute path, a shell command, the stop
with its final answer. The server reads the spool into the kernel, whose ``%recap --dry-run``
then shows the ask, the edit and the answer, in that order.
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
from kernelutil import execute, stream_text
from labserver import LabServer, running_lab

pytestmark = pytest.mark.timeout(240)

DATA = Path(__file__).parent.parent / "data" / "hooks"
SETUP = """\
import time
%load_ext jupyter_recap
from jupyter_recap.ipython.extension import extension_for
ext = extension_for(get_ipython())
ready = lambda: ext.reporter and ext.reporter.sent and ext.feed and ext.feed.connected
deadline = time.time() + 30
while not ready() and time.time() < deadline:
    time.sleep(0.05)
print('ready' if ready() else ext.feed and ext.feed.last_error)
"""
ENTRIES = "[(e.kind, e.name, e.text) for e in ext.transcript.entries]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    tmp: Path = tmp_path_factory.mktemp("hooks")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as server:
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
    session = {"path": path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    kernel_id = server.api("POST", "api/sessions", session)["kernel"]["id"]
    kc = server.connect(kernel_id)
    try:
        assert stream_text(execute(kc, SETUP)).strip() == "ready"
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
