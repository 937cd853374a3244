"""Drive a real ipykernel through jupyter_client and collect what a frontend would receive."""

from __future__ import annotations

import os
import queue
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def start_kernel(env: dict[str, str] | None = None) -> tuple[Any, Any]:
    """A started kernel's manager (for interrupts) and client; stop it with :func:`stop`."""
    kernel_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))
    }
    # Session records go to a private temporary store unless the test names one.
    kernel_env["JUPYTER_RECAP_HOME"] = tempfile.mkdtemp(prefix="recap-home-")
    kernel_env.update(env or {})
    # A test's own PYTHONPATH (e.g. a plugin's folder) comes first.
    extra = (env or {}).get("PYTHONPATH", "")
    kernel_env["PYTHONPATH"] = os.pathsep.join([*filter(None, [extra]), str(ROOT), str(TESTS)])
    return start_new_kernel(kernel_name="python3", env=kernel_env, cwd=str(ROOT))


def stop(km: Any, kc: Any) -> None:
    """Shut down a kernel from :func:`start_kernel`."""
    kc.stop_channels()
    km.shutdown_kernel(now=True)


@contextmanager
def running_kernel(env: dict[str, str] | None = None) -> Iterator[Any]:
    """A started kernel's client; the kernel is shut down afterwards."""
    km, kc = start_kernel(env)
    try:
        yield kc
    finally:
        stop(km, kc)


def execute(
    kc: Any,
    code: str,
    timeout: float = 60,
    *,
    store_history: bool = True,
    cell_id: str | None = None,
) -> list[dict[str, Any]]:
    """Run ``code`` and return every IOPub message of that execution, up to idle.

    ``store_history=False`` runs it the way frontends run their own requests: not recorded.
    ``cell_id`` is sent the way JupyterLab sends a cell's id (``metadata.cellId``).
    """
    if cell_id is None:
        msg_id = kc.execute(code, store_history=store_history)
    else:
        content = {
            "code": code,
            "silent": False,
            "store_history": store_history,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
    messages: list[dict[str, Any]] = []
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty as error:
            raise AssertionError(f"no idle after {code!r}: {messages}") from error
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


def collect(kc: Any, seconds: float) -> list[dict[str, Any]]:
    """Every IOPub message arriving within ``seconds`` (for updates sent between cells)."""
    messages = []
    while True:
        try:
            messages.append(kc.get_iopub_msg(timeout=seconds))
        except queue.Empty:
            return messages


def collect_until(
    kc: Any, done: Callable[[list[dict[str, Any]]], bool], seconds: float = 30
) -> list[dict[str, Any]]:
    """IOPub messages until ``done(messages so far)`` holds: a wait for a condition, not for a
    time, so a loaded machine is only slower. Fails after ``seconds``."""
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while not done(messages):
        left = deadline - time.monotonic()
        if left <= 0:
            kinds = [m["msg_type"] for m in messages]
            raise AssertionError(f"not seen within {seconds} s; got {kinds}")
        with suppress(queue.Empty):
            messages.append(kc.get_iopub_msg(timeout=min(left, 0.5)))
    return messages


def stream_text(messages: list[dict[str, Any]], name: str = "stdout") -> str:
    return "".join(
        m["content"]["text"]
        for m in messages
        if m["msg_type"] == "stream" and m["content"]["name"] == name
    )


def widget_states(messages: list[dict[str, Any]], comm_id: str) -> list[dict[str, Any]]:
    """The state one widget's comm_open and comm_msg updates carry, in order."""
    states = []
    for m in messages:
        if m["content"].get("comm_id") != comm_id:
            continue
        if m["msg_type"] == "comm_open" or (
            m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"
        ):
            states.append(m["content"]["data"].get("state", {}))
    return states


# -- the extension's link to a server ------------------------------------------------------------


def feed_ready(
    *, load: bool = True, after_load: str = "", reported: bool = False, seconds: float = 30
) -> str:
    """A cell's source: ``%load_ext jupyter_recap`` (unless ``load`` is false) and the lines of
    ``after_load``, ``time`` imported and ``ext`` bound to the extension, then a wait of up to
    ``seconds`` until its focus feed is connected to the server (and, with ``reported``, its
    first focus report sent). The cell prints ``connected``, or why not: the feed's last error,
    or why it has no feed."""
    done = "ext.feed and ext.feed.connected" + (" and ext.reporter.sent" if reported else "")
    return (
        "import time\n"
        + ("%load_ext jupyter_recap\n" if load else "")
        + (after_load.rstrip("\n") + "\n" if after_load else "")
        + "from jupyter_recap.ipython.extension import extension_for\n"
        "ext = extension_for(get_ipython())\n"
        "def _recap_wait():\n"
        f"    deadline = time.time() + {seconds}\n"
        f"    while not ({done}) and time.time() < deadline:\n"
        "        time.sleep(0.05)\n"
        f"    print('connected' if {done} else\n"
        "          (ext.feed and ext.feed.last_error) or ext.feed_problem)\n"
        "_recap_wait()\n"
        "del _recap_wait\n"
    )


# -- the recap banner, as a frontend sees it on IOPub --------------------------------------------

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SETUP = """\
import agentmagic, time
from jupyter_recap.ipython.extension import extension_for
agent = agentmagic.install(get_ipython())
%load_ext jupyter_recap
ext = extension_for(get_ipython())
"""


def banner_id(messages: list[dict[str, Any]]) -> str | None:
    """The banner widget's model id, if ``messages`` display it (a cell's own output, or the
    live output ``%load_ext`` left, filled when the banner is made); None when they do not:
    the kernel makes its banner only when it first has something to show."""
    ids = {
        str(m["content"]["data"][WIDGET_VIEW]["model_id"])
        for m in messages
        if m["msg_type"] in ("display_data", "update_display_data")
        and WIDGET_VIEW in m["content"]["data"]
    }
    assert len(ids) <= 1, ids
    return ids.pop() if ids else None


def shown_updates(messages: list[dict[str, Any]], comm_id: str | None) -> list[dict[str, Any]]:
    """Banner updates that put a recap on screen, in order (``comm_id`` None: any widget's —
    the banner is the only one with a ``shown`` state)."""
    return [
        m["content"]["data"]["state"]
        for m in messages
        if m["msg_type"] == "comm_msg"
        and (comm_id is None or m["content"]["comm_id"] == comm_id)
        and m["content"]["data"].get("state", {}).get("state") == "shown"
    ]


def wait_for_shown(kc: Any, comm_id: str | None, seconds: float) -> tuple[dict[str, Any], float]:
    """The first banner update showing a recap within ``seconds``, and when it arrived."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for message in collect(kc, 0.1):
            updates = shown_updates([message], comm_id)
            if updates:
                return updates[0], time.monotonic()
    raise AssertionError(f"no recap was shown within {seconds} s")
