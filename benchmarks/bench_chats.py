"""Measure the chat source: its cost per message and per chat, and a chat's row in a real page.

    .venv/bin/python benchmarks/bench_chats.py            # about 2 min
    .venv/bin/python benchmarks/bench_chats.py --quick    # fewer turns, a 20 s idle window

Needs the built labextension and /usr/bin/chromium.

1. Server cost per observed message: a jupyter_server in this process with jupyterlab-chat and
   jupyter_recap; turns written into a real chat model the way Jupyter AI's ACP client writes
   them (a prompt, a tool-call message updated three times, a reply streamed in ten updates),
   the loop run until every coalesced read is done. CPU time with the chat source following the
   chat minus without, per message change (median of rounds, both measured in each round).
2. Server memory per tracked chat: 20 chats of 400 messages each followed by the source;
   tracemalloc's count of what jupyter_recap's own code holds for them, per chat.
3. Turn end → the chat's row updated in the page: the test persona (tests/persona/, behind
   Jupyter AI's ACP client) answers in a chat open in a background tab; from the persona
   manager's "processing: false" event (received by a client of the event bus in this process)
   to the row leaving "running" in the Agents panel (a MutationObserver stamps Date.now()).
4. Requests from an idle page with three chats open in background tabs: requests that name a
   chat, per minute.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench_agents import OBSERVE, SHOW_PANEL, percentile  # noqa: E402
from browser import launch  # noqa: E402
from chatkit import Chat, chat_lab  # noqa: E402
from figurelib import figure  # noqa: E402
from labfocus import LabPage  # noqa: E402
from labserver import (  # noqa: E402
    CHAT_SERVER_EXTENSIONS,
    COLLABORATION_SERVER_EXTENSIONS,
    MCP_SERVER_EXTENSIONS,
    OFF_SERVER_EXTENSIONS,
)

PERSONA = "jupyter-ai-personas::recap_test_persona::TestClaudePersona"
MESSAGES_PER_TURN = 1 + 1 + 3 + 1 + 10  # prompt, call message + 3 updates, reply + 10 chunks

OPEN = "async (p) => { await window.jupyterapp.commands.execute('docmanager:open', {path: p}); }"


# -- in this process: a real server, a real chat model ------------------------------------------


class Server:
    """A jupyter_server in this process with jupyterlab-chat and jupyter_recap loaded."""

    def __init__(self, root: Path) -> None:
        from jupyter_server.serverapp import ServerApp
        from traitlets.config import Config

        # Only these two: every other extension installed here stays off (one of Jupyter AI's
        # fetches a price list from the internet as it loads).
        others: tuple[str, ...] = CHAT_SERVER_EXTENSIONS + COLLABORATION_SERVER_EXTENSIONS
        others += OFF_SERVER_EXTENSIONS + MCP_SERVER_EXTENSIONS
        extensions = {name: False for name in others}
        extensions.update({"jupyter_recap": True, "jupyterlab_chat": True})
        config = Config(
            {
                "ServerApp": {
                    "jpserver_extensions": extensions,
                    "root_dir": str(root),
                    "open_browser": False,
                    "port": 0,
                },
                "Recap": {"auto": False},  # what is measured is following, not drafting
            }
        )
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.app = ServerApp(config=config)
        self.app.initialize(argv=[], new_httpserver=False)
        self.settle(0.05)  # the chat source starts from the loop
        self.recap = self.app.web_app.settings["jupyter_recap"]
        self.manager = self.app.web_app.settings["chat_manager"]
        assert self.recap.chats.enabled
        self.root = root

    def settle(self, seconds: float = 0.08) -> None:
        """Run the loop long enough for every coalesced read to happen."""
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def chat(self, name: str) -> Any:
        from jupyterlab_chat import models

        user: Any = models.User  # untyped constructor
        (self.root / name).write_text(json.dumps({"messages": [], "users": {}}))

        async def opened() -> Any:  # events are delivered on the running loop
            return self.manager.ws_open(name)

        model = self.loop.run_until_complete(opened())
        model.set_user(user(username=PERSONA, name="Claude", display_name="Claude", bot=True))
        model.set_user(user(username="ana", name="Ana", display_name="Ana"))
        return model


def write_turn(model: Any, n: int) -> None:
    """One persona turn, written as Jupyter AI's ACP client writes it."""
    from jupyterlab_chat.models import NewMessage

    asked = model.add_message(NewMessage(body=f"@Claude step {n}: rerun the merge", sender="ana"))
    message = model.get_message(asked)
    message.mentions = [PERSONA]
    message.metadata = {"to_persona": PERSONA}
    model.update_message(message)
    calls = model.add_message(NewMessage(body="", sender=PERSONA))
    call = {"tool_call_id": f"c{n}", "title": "mcp__Jupyter_MCP_Server__run_cell"}
    for status in ("in_progress", "in_progress", "completed"):
        message = model.get_message(calls)
        message.metadata = {"tool_calls": [{**call, "status": status, "kind": "execute"}]}
        model.update_message(message)
    reply = model.add_message(NewMessage(body="Done:", sender=PERSONA))
    for _ in range(10):
        message = model.get_message(reply)
        message.body = " the merge ran; next the region column."
        model.update_message(message, append=True)


def cost_per_message(server: Server, rounds: int, turns: int) -> tuple[float, float]:
    """µs of CPU per message change with the source following the chat, and without."""
    with_source: list[float] = []
    without: list[float] = []
    for r in range(rounds):
        for follow in (True, False):
            model = server.chat(f"cost-{r}-{follow}.chat")
            server.settle()
            if not follow:
                chat = server.recap.chats.chats.get(model.get_path())
                assert chat is not None
                server.recap.chats._detach(chat)  # the same chat, nobody following it
            start = time.process_time()
            for n in range(turns):
                write_turn(model, n)
                server.settle(0.06)  # the reads of this turn happen, as in a real turn
            spent = time.process_time() - start
            (with_source if follow else without).append(spent / (turns * MESSAGES_PER_TURN))
    return statistics.median(with_source) * 1e6, statistics.median(without) * 1e6


def memory_per_chat(server: Server, chats: int, messages: int) -> float:
    """Bytes jupyter_recap's own code holds per followed chat of ``messages`` messages."""
    models = []
    for n in range(chats):
        model = server.chat(f"memory-{n}.chat")
        server.recap.chats._detach(server.recap.chats.chats[model.get_path()])
        for t in range(messages // MESSAGES_PER_TURN):
            write_turn(model, t)
        models.append(model)
    gc.collect()
    tracemalloc.start(10)
    for model in models:
        server.recap.chats._attach(model.get_id(), model)
    server.settle(0.3)
    gc.collect()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    ours = snapshot.filter_traces([tracemalloc.Filter(True, "*jupyter_recap*")])
    total = sum(stat.size for stat in ours.statistics("filename"))
    return total / chats


# -- in a real lab and chromium --------------------------------------------------------------


class TurnEnds:
    """Listens on the server's event bus; stamps each "processing: false" of the persona."""

    STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"

    def __init__(self, lab: Any) -> None:
        import websocket

        url = lab.url.replace("http", "ws", 1) + f"api/events/subscribe?token={lab.token}"
        self.socket = websocket.create_connection(url, timeout=60)
        self.ends: list[float] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                frame = json.loads(self.socket.recv())
            except Exception:  # noqa: BLE001 - the socket closed: the benchmark is over
                return
            if frame.get("schema_id") == self.STATE and frame.get("processing") is False:
                self.ends.append(time.time())

    def close(self) -> None:
        self.socket.close()


def row_latency(browser: Any, tmp: Path, turns: int) -> list[float]:
    (tmp / "latency").mkdir()
    with chat_lab(tmp / "latency", {"JUPYTER_RECAP_MODEL": "offline"}) as lab:
        lab.write_notebook("front.ipynb", ["1"])
        chat = Chat.create(lab, "bench.chat")
        page = LabPage.open(browser, lab, "front.ipynb")
        page.page.evaluate(OPEN, "bench.chat")
        page.activate("front.ipynb")  # the chat in a background tab
        page.page.evaluate(SHOW_PANEL)
        ends = TurnEnds(lab)
        chat.post("@Claude warm up")
        chat.wait_for_reply()
        page.page.wait_for_selector('.jp-RecapAgents-row[data-row-id="chat:bench.chat"]')
        page.page.evaluate(OBSERVE)
        time.sleep(1)
        first = len(ends.ends)
        for n in range(turns):
            asked = chat.post(f"@Claude step {n}")
            chat.wait_for_reply(after=asked)
            deadline = time.monotonic() + 30
            while len(ends.ends) < first + n + 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.4)
        log = page.page.evaluate("window._rowLog")
        ends.close()
        chat.close()
        page.page.close()
    changes = [(e["t"] / 1000, e["state"]) for e in log if e["id"] == "chat:bench.chat"]
    latencies = []
    for end in ends.ends[first:]:
        after = [t for t, state in changes if t >= end - 0.05 and state != "running"]
        if after:
            latencies.append(max(0.0, after[0] - end) * 1000)
    return latencies


def idle_chat_requests(browser: Any, tmp: Path, window: float) -> tuple[float, float]:
    """Requests per minute that name a chat, and all jupyter_recap requests, from an idle page
    with three chats open in background tabs."""
    (tmp / "idle").mkdir()
    with chat_lab(tmp / "idle", {"JUPYTER_RECAP_MODEL": "offline"}) as lab:
        lab.write_notebook("front.ipynb", ["1"])
        names = [f"idle{n}.chat" for n in range(3)]
        for name in names:
            Chat.create(lab, name).close()
        page = LabPage.open(browser, lab, "front.ipynb")
        for name in names:
            page.page.evaluate(OPEN, name)
        page.activate("front.ipynb")
        page.page.wait_for_timeout(12_000)  # start-up traffic settles
        page.set_visible(False)  # the person is elsewhere: an idle page
        page.page.wait_for_timeout(2_000)
        counts = {"chat": 0, "all": 0}

        def count(request: Any) -> None:
            if "/jupyter-recap/api/" in request.url:
                counts["all"] += 1
                if "chat" in (request.post_data or "") or "chat%3A" in request.url:
                    counts["chat"] += 1

        page.page.on("request", count)
        page.page.wait_for_timeout(window * 1000)
        page.page.remove_listener("request", count)
        page.page.close()
    return counts["chat"] * 60 / window, counts["all"] * 60 / window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns, a shorter window")
    args = parser.parse_args()
    turns, window, rounds = (8, 20.0, 3) if args.quick else (25, 60.0, 7)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "inproc"
        root.mkdir()
        server = Server(root)
        following, alone = cost_per_message(server, rounds, 20)
        per_chat = memory_per_chat(server, 20, 400)
        for browser in launch():
            latencies = row_latency(browser, Path(tmp), turns)
            chat_rate, recap_rate = idle_chat_requests(browser, Path(tmp), window)

    per_message = following - alone
    print("| measure | value |")
    print("| --- | --- |")
    print(
        f"| server CPU per chat message change, following minus not "
        f"({rounds} rounds, median) | {per_message:.0f} µs ({following:.0f} − {alone:.0f}) |"
    )
    print(
        f"| server memory per followed chat (400 messages, our code) | {per_chat / 1024:.1f} KiB |"
    )
    print(
        f"| persona turn end → chat row updated in the page, p50 / p95 "
        f"({len(latencies)} of {turns} turns) | {statistics.median(latencies):.0f} ms / "
        f"{percentile(latencies, 0.95):.0f} ms |"
    )
    print(
        f"| idle page, 3 chats open in background tabs ({window:.0f} s): requests naming a chat "
        f"/ all jupyter_recap requests | {chat_rate:.0f} / {recap_rate:.0f} per minute |"
    )
    figure(
        "chat_message_cost",
        round(per_message),
        unit="µs",
        label="server CPU per chat message change (following minus not following, "
        f"{rounds} rounds, median)",
    )
    figure(
        "chat_memory",
        round(per_chat / 1024, 1),
        unit="KiB",
        label="server memory jupyter_recap holds per followed chat of 400 messages",
    )
    worst = percentile(latencies, 0.95)
    figure(
        "chat_row_latency",
        f"{statistics.median(latencies):.0f} / {worst:.0f}",
        unit="ms",
        label=f"persona turn ends → its chat row updated in the page, p50 / p95 "
        f"({len(latencies)} of {turns} turns)",
        target="p95 < 200 ms",
        met=worst < 200 and len(latencies) == turns,
    )
    figure(
        "chat_idle_requests",
        round(chat_rate),
        unit="per minute",
        label=f"requests naming a chat from an idle page with 3 chats open ({window:.0f} s window)",
        target="0",
        met=chat_rate == 0,
    )


if __name__ == "__main__":
    main()
