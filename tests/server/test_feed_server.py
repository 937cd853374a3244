"""A kernel started by a real server hears focus changes through the feed, even mid-cell."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute, feed_ready, stream_text
from labserver import LabServer, running_lab

pytestmark = pytest.mark.timeout(120)


#: Binds `ext` to the loaded extension and waits until its feed is connected.
RECONNECT = feed_ready(load=False)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, str, Any]]:
    tmp: Path = tmp_path_factory.mktemp("feed")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as lab:
        kernel_id = lab.api("POST", "api/kernels", {"name": "python3"})["id"]
        kc = lab.connect(kernel_id)
        assert stream_text(execute(kc, "%load_ext jupyter_recap\n" + RECONNECT)) == "connected\n"
        try:
            yield lab, kernel_id, kc
        finally:
            kc.stop_channels()


def test_focus_change_reaches_the_engine_while_a_cell_runs(kernel: Any) -> None:
    lab, kernel_id, kc = kernel
    client = str(uuid.uuid4())
    report = {"kernel_id": kernel_id, "path": "feed.ipynb", "client_id": client}
    lab.api("POST", "jupyter-recap/api/focus", {**report, "focused": True})
    waiting = (
        "t0 = time.time()\n"
        "while ext.schedule.focused is not False and time.time() - t0 < 15:\n"
        "    time.sleep(0.005)\n"
        "print(time.time(), ext.schedule.focused, ext.focus_source)"
    )
    msg_id = kc.execute(waiting)
    time.sleep(1.0)  # the cell is running now: the shell channel is busy
    sent = time.time()
    lab.api("POST", "jupyter-recap/api/focus", {**report, "focused": False})
    output = ""
    while True:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            output += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    noticed, focused, source = output.split()
    assert (focused, source) == ("False", "browser")
    assert float(noticed) - sent < 1.0  # heard mid-cell, promptly


def test_status_shows_the_feed(kernel: Any) -> None:
    _, _, kc = kernel
    status = stream_text(execute(kc, "%recap status"))
    assert "focus feed connected to" in status and "found via environment" in status


def test_unloading_takes_the_banner_off_the_server(kernel: Any) -> None:
    """After the last %unload_ext the server no longer points pages at the closed banner."""
    lab, kernel_id, kc = kernel
    route = f"jupyter-recap/api/kernels/{kernel_id}"
    # The banner is made with the first recap (or on first use): the server learns it then.
    execute(kc, "_ = ext.banner")
    deadline = time.monotonic() + 20
    while lab.api("GET", route)["banner_model_id"] is None:
        assert time.monotonic() < deadline, "the banner was never announced"
        time.sleep(0.05)
    execute(kc, "%unload_ext jupyter_recap")
    # The unload waits for the feed's thread at most 2 s, and the thread says "banner gone"
    # last: on a loaded machine that news can come just after the cell.
    deadline = time.monotonic() + 20
    while lab.api("GET", route)["banner_model_id"] is not None:
        assert time.monotonic() < deadline, "the closed banner stayed on the server"
        time.sleep(0.05)
    # Loaded again (the person's next %load_ext): the new banner is announced and stays, the
    # old feed's clearing does not overtake it.
    execute(kc, "%load_ext jupyter_recap")
    assert stream_text(execute(kc, RECONNECT + "\n_ = ext.banner")).strip() == "connected"
    deadline = time.monotonic() + 20
    while lab.api("GET", route)["banner_model_id"] is None:
        assert time.monotonic() < deadline, "the new banner was never announced"
        time.sleep(0.05)
    time.sleep(2.0)  # longer than the old feed's clearing may take
    assert lab.api("GET", route)["banner_model_id"] is not None
    # The module's other tests talk to `ext`: leave them the loaded extension, connected.
    assert stream_text(execute(kc, RECONNECT)).strip() == "connected"


def test_the_long_poll_keeps_one_connection_to_the_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Regression: each poll opened a new TCP connection (every 25 s per kernel), which left
    hundreds of sockets closing at a time with many kernels. Polls answered every 0.2 s here."""
    import psutil

    tmp: Path = tmp_path_factory.mktemp("feedconn")
    env = {"JUPYTER_RECAP_MODEL": "offline"}
    with running_lab(tmp, env, args=["--RecapServer.max_poll_timeout=0.2"]) as lab:
        kernel_id = lab.api("POST", "api/kernels", {"name": "python3"})["id"]
        kc = lab.connect(kernel_id)
        try:
            assert stream_text(execute(kc, "%load_ext jupyter_recap\n" + RECONNECT)) == (
                "connected\n"
            )
            pid = int(stream_text(execute(kc, "import os; print(os.getpid())")))
            port = int(lab.url.rsplit(":", 1)[1].strip("/"))
            ports: set[int] = set()
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:  # about 15 polls
                for conn in psutil.Process(pid).net_connections(kind="tcp"):
                    if conn.raddr and conn.raddr.port == port and conn.status == "ESTABLISHED":
                        ports.add(conn.laddr.port)
                time.sleep(0.02)
            polls = stream_text(execute(kc, "print(ext.feed.routes.connections)"))
            # The feed's connection, and the reporter's: not one per poll.
            assert 1 <= len(ports) <= 2, ports
            assert int(polls) <= 2
        finally:
            kc.stop_channels()
