"""The agents panel's server side, against a real jupyter server and real kernels.

Kernels report their agent state with their own proof; the page reads rows and hears which row
changed on jupyter_server's event bus; restarts, deaths and long cells are seen by the server.
The panel's line of today's recap cost is read from the person's usage ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.base.handlers import log as server_log
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest

from jupyter_recap.focus.validate import Report
from jupyter_recap.server import AGENTS_SCHEMA, agents
from jupyter_recap.stores.usage import UsageLedger, local_day
from jupyter_recap.wire import KERNEL_HEADER, TurnState, kernel_proof

pytestmark = pytest.mark.timeout(120)

NO_AUTH = {"Authorization": ""}
RECAP = "Fixing the invoice totals. Next: rerun In[4] after the fix."


def proof(recap: Any, kernel_id: str) -> dict[str, str]:
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    return {**NO_AUTH, KERNEL_HEADER: kernel_proof(key, kernel_id)}


def report(turn: str | None = "ok", ended: float | None = 100.0, **extra: Any) -> dict[str, Any]:
    return {
        "turn": turn,
        "turn_started": 90.0,
        "turn_ended": ended if turn != "running" else None,
        "error": "ValueError: bad total" if turn == "errored" else None,
        "last_activity": 99.0,
        "recap": {"text": RECAP, "model": "offline", "at": 101.0, "links": []},
        "drafting": False,
        "progress": {"done": 2, "total": 5},
        "stop_cell": {"cell_id": "cell-4", "label": "In[4]", "failed": turn == "errored"},
        **extra,
    }


async def send(api: Any, recap: Any, kernel_id: str, body: Any) -> tuple[int, Any]:
    result: tuple[int, Any] = await api(
        "kernels", kernel_id, "agent", method="PUT", body=body, headers=proof(recap, kernel_id)
    )
    return result


async def row(api: Any, kernel_id: str) -> dict[str, Any]:
    code, answer = await api("agents", kernel_id)
    assert code == 200, answer
    agent: dict[str, Any] = answer["agent"]
    return agent


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@asynctest
async def test_a_kernel_report_becomes_a_row(api: Any, recap: Any, kernel_id: str) -> None:
    assert (await api("agents"))[1]["agents"] == []  # loaded nowhere yet: no row
    assert (await api("agents", kernel_id))[0] == 404
    code, answer = await send(api, recap, kernel_id, report("running"))
    assert code == 200 and answer["agents_version"] >= 1
    code, board = await api("agents")
    assert code == 200 and abs(board["now"] - time.time()) < 5
    [agent] = board["agents"]
    assert agent["kernel_id"] == kernel_id
    assert (agent["state"], agent["turn"], agent["needs_you"]) == ("running", "running", None)
    assert agent["recap"]["text"] == RECAP
    assert agent["progress"] == {"done": 2, "total": 5}
    assert agent["stop_cell"] == {"cell_id": "cell-4", "label": "In[4]", "failed": False}
    # The browser names the notebook; the focus answer carries the board's version.
    body = {"kernel_id": kernel_id, "path": "work/billing.ipynb", "focused": False}
    code, answer = await api("focus", method="POST", body={**body, "client_id": "tab"})
    assert code == 200 and answer["agents_version"] == (await api("agents"))[1]["version"]
    agent = await row(api, kernel_id)
    assert (agent["path"], agent["name"]) == ("work/billing.ipynb", "billing.ipynb")


@asynctest
async def test_a_turn_that_ends_while_away_needs_you_until_you_look(
    api: Any, recap: Any, kernel_id: str
) -> None:
    tab = {"kernel_id": kernel_id, "path": "nb.ipynb", "client_id": "tab"}
    await api("focus", method="POST", body={**tab, "focused": True})
    await send(api, recap, kernel_id, report("running"))
    await send(api, recap, kernel_id, report("ok", ended=100.0))
    agent = await row(api, kernel_id)
    assert (agent["state"], agent["needs_you"], agent["notice"]) == ("idle", None, 0)

    await api("focus", method="POST", body={**tab, "focused": False})  # the person leaves
    await send(api, recap, kernel_id, report("running"))
    await send(api, recap, kernel_id, report("errored", ended=200.0))
    agent = await row(api, kernel_id)
    assert (agent["state"], agent["needs_you"], agent["notice"]) == ("errored", "errored", 1)
    await send(api, recap, kernel_id, report("ok", ended=300.0))  # same absence: no new notice
    agent = await row(api, kernel_id)
    assert (agent["state"], agent["needs_you"], agent["notice"]) == ("finished", "finished", 1)

    await api("focus", method="POST", body={**tab, "focused": True})  # back: looked at
    agent = await row(api, kernel_id)
    assert (agent["state"], agent["needs_you"], agent["notice"]) == ("idle", None, 1)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def server_warnings() -> Iterator[list[str]]:
    """The warnings the server logs meanwhile (its log does not propagate to pytest's)."""
    handler, logger = Lines(), server_log()
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)


@asynctest
async def test_a_bad_field_is_dropped_named_and_logged_and_the_rest_taken(
    api: Any, recap: Any, kernel_id: str
) -> None:
    for body, line, dropped in [
        (report(turn="finished"), "turn: must be one of", ("turn", None)),
        (report(turn_started=-1), "turn_started: must not be negative", ("turn_started", None)),
        (report(progress={"done": 6, "total": 5}), "progress.done: larger", ("progress", None)),
        (report(recap={"model": "x"}), "recap.text: must be a string", ("recap", None)),
    ]:
        with server_warnings() as logged:
            code, answer = await send(api, recap, kernel_id, body)
        assert code == 200, answer
        [ignored] = answer["ignored"]
        assert ignored.startswith(line) and "\n" not in ignored
        [warning] = [text for text in logged if "ignored" in text]  # once, all lines in it
        assert ignored in warning and kernel_id in warning
        agent = await row(api, kernel_id)
        name, default = dropped
        assert agent[name] == default, name  # the bad value reaches nothing
        assert agent["stop_cell"] == body["stop_cell"]  # the rest is taken
    code, answer = await send(api, recap, kernel_id, report())
    assert (code, answer["ignored"]) == (200, [])


@asynctest
async def test_a_body_that_is_not_an_object_is_refused_in_one_line(
    api: Any, recap: Any, kernel_id: str
) -> None:
    code, answer = await send(api, recap, kernel_id, [1, 2])
    assert code == 400 and "object" in answer["message"] and "\n" not in answer["message"]
    assert (await api("agents"))[1]["agents"] == []  # nothing half-taken
    code, answer = await send(api, recap, kernel_id, "x" * 20_000)
    assert code == 413


@asynctest
async def test_a_model_id_too_long_no_longer_leaves_the_row_drafting(
    api: Any, recap: Any, kernel_id: str
) -> None:
    """Regression: a 300-character model id made the whole report a 400, and the row stayed at
    "drafting…" until another report came."""
    await send(api, recap, kernel_id, report("ok", recap=None, drafting=True))
    assert (await row(api, kernel_id))["drafting"] is True
    shown = {"text": RECAP, "model": "m" * 300, "at": 101.0, "links": []}
    code, answer = await send(api, recap, kernel_id, report("ok", recap=shown))
    assert code == 200 and answer["ignored"] == ["recap.model: longer than 256 characters"]
    agent = await row(api, kernel_id)
    assert agent["recap"] == {**shown, "model": ""}
    assert agent["drafting"] is False


@asynctest
async def test_a_huge_task_count_drops_the_progress_and_keeps_the_rest(
    api: Any, recap: Any, kernel_id: str
) -> None:
    body = report("ok", progress={"done": 1, "total": 2**70})
    code, answer = await send(api, recap, kernel_id, body)
    assert code == 200 and [line.split(":")[0] for line in answer["ignored"]] == ["progress.total"]
    agent = await row(api, kernel_id)
    assert agent["progress"] is None
    assert (agent["turn"], agent["recap"], agent["stop_cell"]) == (
        "ok",
        body["recap"],
        body["stop_cell"],
    )


@asynctest
async def test_a_kernel_proof_reports_for_its_own_kernel_only(
    api: Any, recap: Any, kernel_id: str, jp_fetch: Any
) -> None:
    other_id = await start_kernel_in_loop(jp_fetch)
    code, _ = await api(
        "kernels", other_id, "agent", method="PUT", body=report(), headers=proof(recap, kernel_id)
    )
    assert code == 403
    # A kernel's proof never reads the board, and nobody without credentials does.
    assert (await api("agents", headers=proof(recap, kernel_id)))[0] == 403
    assert (await api("agents", headers=dict(NO_AUTH)))[0] == 403
    assert (await api("agents", kernel_id, headers=dict(NO_AUTH)))[0] == 403
    ghost = "00000000-0000-4000-8000-000000000000"
    code, answer = await api("agents", ghost)
    assert code == 404 and ghost in answer["message"]
    assert (await api("kernels", ghost, "agent", method="PUT", body=report()))[0] == 404


async def start_kernel_in_loop(jp_fetch: Any) -> str:
    response = await jp_fetch("api", "kernels", method="POST", body="{}")
    return str(json.loads(response.body)["id"])


async def subscribe(jp_ws_fetch: Any) -> Any:
    return await jp_ws_fetch("api", "events", "subscribe")


async def agents_events(socket: Any, count: int, seconds: float = 10.0) -> list[dict[str, Any]]:
    """The next ``count`` agents-board events on the bus (other schemas skipped)."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while len(found) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {found} arrived"
        message = await asyncio.wait_for(socket.read_message(), remaining)
        assert message is not None, "the event socket closed"
        event = json.loads(message)
        if event["schema_id"] == AGENTS_SCHEMA:
            found.append(event)
    return found


@asynctest
async def test_changes_are_pushed_on_the_event_bus_without_content(
    api: Any, recap: Any, kernel_id: str, jp_ws_fetch: Any, jp_fetch: Any
) -> None:
    socket = await subscribe(jp_ws_fetch)
    try:
        await send(api, recap, kernel_id, report("running"))
        [event] = await agents_events(socket, 1)
        assert {k: event[k] for k in ("id", "action")} == {"id": kernel_id, "action": "update"}
        assert RECAP not in json.dumps(event)  # which row, never what it says
        version = event["version"]
        await send(api, recap, kernel_id, report("ok"))
        [event] = await agents_events(socket, 1)
        assert event["version"] > version
        # A shut-down kernel leaves the panel with one push.
        await jp_fetch("api", "kernels", kernel_id, method="DELETE")
        [event] = await agents_events(socket, 1)
        assert (event["id"], event["action"]) == (kernel_id, "remove")
        assert (await api("agents"))[1]["agents"] == []
    finally:
        socket.close()


@asynctest
async def test_a_restart_shows_in_the_row_and_ends_a_running_turn(
    api: Any, recap: Any, kernel_id: str, jp_fetch: Any
) -> None:
    await send(api, recap, kernel_id, report("running"))
    await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="{}")
    agent = await row(api, kernel_id)
    [event] = agent["events"]
    assert (event["type"], event["crashed"]) == ("restarted", False)
    assert (agent["turn"], agent["error"]) == ("aborted", "the kernel restarted")
    assert agent["state"] != "running"
    # The next process of the kernel hears of it in its feed (to tell its recaps).
    code, feed = await api("kernels", kernel_id, "events", params={"since": 0, "timeout": 0})
    assert code == 200
    assert [e["what"] for e in feed["events"] if e["type"] == "kernel"] == ["restarted"]


@pytest.mark.parametrize("recap_config", [{"long_cell_seconds": 0.5}])
@asynctest
async def test_long_cells_and_crashes_are_seen_by_the_server(
    api: Any, recap: Any, kernel_id: str
) -> None:
    await send(api, recap, kernel_id, report("ok"))
    client = recap.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=30)
        client.execute("import time\ntime.sleep(0.1)")  # short: not news
        client.execute("time.sleep(0.8)\n1/0")

        async def long_cell() -> bool:
            events = (await row(api, kernel_id))["events"]
            return any(e["type"] == "long_cell" for e in events)

        await until(long_cell)
        [event] = (await row(api, kernel_id))["events"]
        assert event["failed"] is True and 0.7 < event["seconds"] < 5

        client.execute("import os\nos._exit(1)")  # the process dies; the server restarts it

        async def crashed() -> bool:
            return any(e["type"] == "restarted" for e in (await row(api, kernel_id))["events"])

        await until(crashed)

        async def up() -> bool:
            return (await row(api, kernel_id))["state"] not in ("restarting", "dead")

        await until(up)  # the restarted process answers: the row is back to normal
        agent = await row(api, kernel_id)
        assert [(e["type"], e.get("crashed")) for e in agent["events"]][1:] == [("restarted", True)]
        code, feed = await api("kernels", kernel_id, "events", params={"since": 0, "timeout": 0})
        assert code == 200
        assert [e["what"] for e in feed["events"] if e["type"] == "kernel"] == ["crashed"]
    finally:
        client.stop_channels()


@asynctest
async def test_a_kernel_the_restarter_gives_up_on_is_dead_in_its_row(
    api: Any, recap: Any, kernel_id: str, jp_fetch: Any
) -> None:
    await send(api, recap, kernel_id, report("running"))
    tab = {"path": "nb.ipynb", "client_id": "tab", "focused": False}
    await api("focus", method="POST", body={**tab, "kernel_id": kernel_id})
    # What the kernel's auto-restarter does when a dead process will not come back.
    restarter = recap.kernel_manager.get_kernel(kernel_id)._restarter
    restarter._fire_callbacks("dead")
    recap.reconcile()  # jupyter_server dropped the kernel; its row stays to say it died
    assert kernel_id not in recap.kernel_manager
    agent = await row(api, kernel_id)
    assert (agent["state"], agent["execution_state"]) == ("dead", "dead")
    assert [e["type"] for e in agent["events"]] == ["died"]
    assert (agent["turn"], agent["error"]) == ("aborted", "the kernel died")
    # The notebook's next kernel takes its place in the panel.
    fresh = await start_kernel_in_loop(jp_fetch)
    await send(api, recap, fresh, report("ok"))
    await api("focus", method="POST", body={**tab, "kernel_id": fresh})
    assert [r["kernel_id"] for r in (await api("agents"))[1]["agents"]] == [fresh]


# -- past the board's bound: the attention order and the count ------------------------------


@pytest.mark.parametrize("recap_config", [{"reconcile_interval": 3600.0}])
@asynctest
async def test_at_70_notebooks_that_need_you_the_count_is_70_and_the_list_says_how_many_more(
    api: Any, recap: Any, recap_config: dict[str, Any]
) -> None:
    """Regression: at 70 notebooks whose turn ended while the person was away the board held
    64 rows and the title said "(64)": six were not shown and nothing said so. Seventy kernels
    do not fit a test machine, so the rows go into the running server's board as its kernel
    route puts them (the reconcile, which would forget kernels it does not run, is an hour
    away); everything else is the server's own answer over HTTP."""
    board = recap.board
    for n in range(70):
        kernel = f"kernel-{n:02d}"
        turn: TurnState = "errored" if n % 7 == 0 else "ok"  # ten failed, sixty finished
        board.report(kernel, Report(turn="running", turn_started=100.0 + n, last_activity=100.0))
        board.report(
            kernel,
            Report(turn=turn, turn_started=100.0 + n, turn_ended=200.0 + n, last_activity=200.0),
        )
        board.set_path(kernel, f"nb{n:02d}.ipynb")
    code, answer = await api("agents")
    assert code == 200
    rows = answer["agents"]
    assert len(rows) == 64 and all(row["needs_you"] for row in rows)
    assert (answer["needing"], answer["left_out"], answer["left_out_needing"]) == (70, 6, 6)
    # The attention order: the ten failures first, then the finished ones; latest first.
    assert [row["needs_you"] for row in rows[:10]] == ["errored"] * 10
    assert [row["attention"]["rank"] for row in rows] == [1] * 10 + [2] * 54
    ended = [row["turn_ended"] for row in rows]
    assert ended[:10] == sorted(ended[:10], reverse=True)
    assert ended[10:] == sorted(ended[10:], reverse=True)
    # The six left out are the finished turns that ended first.
    shown = {row["id"] for row in rows}
    assert sorted(set(board.left_out)) == sorted(f"kernel-{n:02d}" for n in (1, 2, 3, 4, 5, 6))
    assert not shown & set(board.left_out)

    # The person looks at a notebook shown: one of those left out takes its place.
    board.focus(rows[0]["id"], True)
    code, answer = await api("agents")
    assert code == 200
    assert (answer["needing"], answer["left_out"], answer["left_out_needing"]) == (69, 6, 5)
    assert len(answer["agents"]) == 64 and rows[0]["id"] not in {r["id"] for r in answer["agents"]}
    assert "kernel-06" in {r["id"] for r in answer["agents"]}  # the latest of the left out


@pytest.mark.parametrize("recap_config", [{"max_agents": 1}])
@asynctest
async def test_a_full_board_shows_the_row_that_asks_most_and_counts_the_other(
    api: Any, recap: Any, kernel_id: str, jp_fetch: Any, recap_config: dict[str, Any]
) -> None:
    """Two real kernels, a board of one row: a failure while away outranks a turn that finished;
    both count; looking at the failure brings the other back."""
    other = await start_kernel_in_loop(jp_fetch)
    for kernel, path, turn in ((other, "done.ipynb", "ok"), (kernel_id, "failed.ipynb", "errored")):
        tab = {"kernel_id": kernel, "path": path, "client_id": f"tab-{path}", "focused": False}
        await api("focus", method="POST", body=tab)
        await send(api, recap, kernel, report("running"))
        await send(api, recap, kernel, report(turn, ended=100.0))
    code, answer = await api("agents")
    assert code == 200
    assert [row["kernel_id"] for row in answer["agents"]] == [kernel_id]
    assert answer["agents"][0]["needs_you"] == "errored"
    assert (answer["needing"], answer["left_out"], answer["left_out_needing"]) == (2, 1, 1)
    tab = {"kernel_id": kernel_id, "path": "failed.ipynb", "client_id": "tab-failed.ipynb"}
    await api("focus", method="POST", body={**tab, "focused": True})
    code, answer = await api("agents")
    assert code == 200
    assert [row["kernel_id"] for row in answer["agents"]] == [other]
    assert answer["agents"][0]["needs_you"] == "finished"
    assert (answer["needing"], answer["left_out"], answer["left_out_needing"]) == (1, 1, 0)


# -- today's recap cost ---------------------------------------------------------------------


@asynctest
async def test_the_usage_of_today_comes_from_the_ledger_every_kernel_writes(
    api: Any, store: Path
) -> None:
    code, answer = await api("usage")
    assert (code, answer["error"], answer["cost"]) == (200, None, "$0")
    today = answer["today"]
    assert today["day"] == local_day(time.time())
    assert (today["calls"], today["tokens_in"], today["tokens_out"], today["cost"]) == (0, 0, 0, 0)

    # What kernels write when they pay for recaps: two automatic, one asked for, one unpriced.
    ledger = UsageLedger(store)
    for automatic, tokens_in, tokens_out, cost in [
        (True, 1_000, 200, 0.0021),
        (False, 3_000, 100, 0.0010),
        (True, 500, 50, None),
    ]:
        ticket = ledger.start("openai:gpt-4o-mini", automatic=automatic)
        assert ticket is not None
        ledger.finish(
            ticket, tokens_in=tokens_in, tokens_out=tokens_out, estimated=False, cost=cost
        )
    code, answer = await api("usage")
    assert code == 200 and answer["error"] is None
    today = answer["today"]
    assert (today["calls"], today["automatic"], today["unpriced"]) == (3, 2, 1)
    assert (today["tokens_in"], today["tokens_out"]) == (4_500, 350)
    assert today["models"] == {"openai:gpt-4o-mini": 3}
    assert answer["cost"] == "~$0.0031"

    # A corrupt day file (a hand edit) is moved aside, and counting starts again: no 500.
    day_file = store / "usage" / f"{today['day']}.jsonl"
    with day_file.open("a") as handle:
        handle.write("not a record\n")
    code, answer = await api("usage")
    assert (code, answer["today"]["calls"], answer["error"]) == (200, 0, None)
    assert [p.name for p in day_file.parent.iterdir() if ".corrupt-" in p.name]


@asynctest
async def test_a_usage_figure_that_is_not_finite_is_null_not_a_500(
    api: Any, monkeypatch: pytest.MonkeyPatch, store: Path
) -> None:
    """The last guard: whatever the ledger's totals hold, the answer is strict JSON (Python's
    ``json.loads`` would read ``Infinity`` as inf: None shows the server wrote ``null``)."""
    read_usage = agents.read_usage

    def corrupt_usage() -> tuple[Any, list[str]]:
        answer, warnings = read_usage()
        assert answer["today"] is not None
        today: dict[str, Any] = dict(answer["today"])
        today.update(cost=math.inf, tokens_in=-math.inf, models={"m": math.nan})
        return {**answer, "today": today}, warnings

    monkeypatch.setattr(agents, "read_usage", corrupt_usage)
    code, answer = await api("usage")
    assert code == 200, answer
    today = answer["today"]
    assert (today["cost"], today["tokens_in"], today["models"]) == (None, None, {"m": None})
    assert today["calls"] == 0  # the finite figures are as they were


@asynctest
async def test_a_refused_store_is_one_line_and_usage_is_for_browsers_only(
    api: Any, recap: Any, kernel_id: str, store: Path
) -> None:
    ledger = UsageLedger(store)
    ticket = ledger.start("openai:gpt-4o-mini", automatic=True)
    assert ticket is not None
    store.chmod(0o770)  # someone else could write it: its figures are not believed
    try:
        code, answer = await api("usage")
    finally:
        store.chmod(0o700)
    assert code == 200 and (answer["today"], answer["cost"]) == (None, None)
    assert "cannot be trusted" in answer["error"] and "\n" not in answer["error"]

    code, answer = await api("usage", headers=NO_AUTH)
    assert code == 403 and "message" in answer
    # A kernel's proof opens its own kernel's routes, not the browser's.
    code, _ = await api("usage", headers=proof(recap, kernel_id))
    assert code == 403


@asynctest
async def test_without_jupyterlab_chat_the_chat_source_costs_nothing(
    recap: Any, jp_serverapp: Any
) -> None:
    await asyncio.sleep(0.05)  # the source starts from the loop, once every extension loaded
    assert "chat_manager" not in jp_serverapp.web_app.settings
    assert (recap.chats.enabled, recap.chats.fallback) == (False, False)
    assert recap.chats.chats == {} and recap.chats._poller is None
