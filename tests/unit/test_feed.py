"""The kernel's focus feed client: server discovery and the long-poll loop against a fake server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from jupyter_recap.ipython.feed import POLL_SECONDS, FocusFeed
from jupyter_recap.ipython.link import ServerInfo, find_server, kernel_id_from_connection_file
from jupyter_recap.ipython.reporter import StateReporter
from jupyter_recap.wire import KERNEL_HEADER, kernel_proof

KERNEL = "4f1a2b3c-0000-4000-8000-000000000001"
KEY = b"3f9c2a1e-connection-key"


def test_server_from_the_environment() -> None:
    env = {"JUPYTER_RECAP_SERVER_URL": "http://127.0.0.1:8888/user/al"}
    server = find_server(env)
    # The environment names the server only: no credential travels in it.
    assert server == ServerInfo("http://127.0.0.1:8888/user/al/", {}, "environment")


def test_the_kernel_proof_is_bound_to_key_and_kernel() -> None:
    proof = kernel_proof(KEY, KERNEL)
    assert len(proof) == 64 and int(proof, 16) >= 0  # hex SHA-256
    assert kernel_proof(KEY, KERNEL) == proof
    assert kernel_proof(KEY, KERNEL.replace("1", "2")) != proof
    assert kernel_proof(b"another-key", KERNEL) != proof
    assert KEY.decode() not in proof


def test_server_from_the_runtime_file(tmp_path: Path) -> None:
    info = {"url": "http://127.0.0.1:9999/", "token": "abc", "base_url": "/"}
    (tmp_path / "jpserver-4242.json").write_text(json.dumps(info))
    server = find_server({"JPY_PARENT_PID": "4242"}, runtime_dir=str(tmp_path))
    assert server is not None and server.headers == {"Authorization": "token abc"}
    assert server.how == "runtime file"
    no_token = {**info, "token": ""}  # JupyterHub: OAuth, no token in the file
    (tmp_path / "jpserver-4243.json").write_text(json.dumps(no_token))
    hub = find_server({"JPY_PARENT_PID": "4243"}, runtime_dir=str(tmp_path))
    assert hub is not None and hub.headers == {}


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"JPY_PARENT_PID": "not-a-pid"},
        {"JPY_PARENT_PID": "1"},
        {"JUPYTER_RECAP_SECRET": "x"},  # what older versions handed down: not a server
        {"JUPYTER_RECAP_SERVER_URL": "  "},
    ],
)
def test_no_server(env: dict[str, str], tmp_path: Path) -> None:
    assert find_server(env, runtime_dir=str(tmp_path)) is None


def test_kernel_id_from_the_connection_file() -> None:
    assert kernel_id_from_connection_file(f"/run/jupyter/kernel-{KERNEL}.json") == KERNEL
    assert kernel_id_from_connection_file("/tmp/tmpab12cd.json") is None  # started by hand


class FakeFeed:
    """A server speaking the events route; each GET pops the next scripted answer."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.lock = threading.Lock()
        feed = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                feed.requests.append((self.command, self.path, dict(self.headers), body))
                with feed.lock:
                    status, data = feed.answers.pop(0) if feed.answers else (200, {})
                if status == 0:  # hold the poll open, as the real server does
                    time.sleep(30)
                    return
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/base/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_feed() -> Iterator[FakeFeed]:
    feed = FakeFeed()
    yield feed
    feed.close()


def run_feed(fake: FakeFeed, **kwargs: Any) -> tuple[FocusFeed, list[Any]]:
    calls: list[Any] = []
    feed = FocusFeed(
        ServerInfo(fake.url, {}, "environment"),
        KERNEL,
        on_focus=lambda focused, at: calls.append(("focus", focused, at)),
        on_input=lambda: calls.append(("input",)),
        key=KEY,
        **kwargs,
    )
    feed.start()
    return feed, calls


def wait_until(predicate: Any, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def state(seq: int, events: list[dict[str, Any]], focused: bool | None) -> dict[str, Any]:
    return {
        "seq": seq,
        "events": events,
        "focused": focused,
        "focus_supported": focused is not None,
        "execution_state": "idle",
        "idle_seconds": 3.0,
    }


def test_events_reach_the_callbacks(fake_feed: FakeFeed) -> None:
    old = {"seq": 1, "type": "focus", "focused": True, "at": 1000.0}
    fake_feed.answers = [
        (200, {}),  # the banner PUT
        (200, state(1, [old], True)),  # first poll: current state only
        (
            200,
            state(
                3,
                [
                    {"seq": 2, "type": "focus", "focused": False, "at": 2000.0},
                    {"seq": 3, "type": "input", "at": 2001.0},
                ],
                False,
            ),
        ),
        (0, {}),
    ]
    feed, calls = run_feed(fake_feed, banner_model_id="model-1")
    wait_until(lambda: len(calls) == 3)
    feed.stop()
    assert calls == [("focus", True, 1000.0), ("focus", False, 2000.0), ("input",)]
    put, first, second = fake_feed.requests[:3]
    assert put[:2] == ("PUT", f"/base/jupyter-recap/api/kernels/{KERNEL}/banner")
    assert put[3] == {"model_id": "model-1"}
    assert all(r[2][KERNEL_HEADER] == kernel_proof(KEY, KERNEL) for r in (put, first, second))
    assert first[1].endswith("/events?since=0&timeout=0")  # the current state, at once
    assert second[1].endswith(f"/events?since=1&timeout={POLL_SECONDS:g}")
    assert feed.state["execution_state"] == "idle"


def test_unknown_kernel_stops_the_feed(fake_feed: FakeFeed) -> None:
    fake_feed.answers = [(404, {"message": "no such kernel"})]
    feed, calls = run_feed(fake_feed)
    wait_until(lambda: feed.stopped_because is not None)
    assert "404" in (feed.stopped_because or "") and calls == []
    assert len(fake_feed.requests) == 1
    feed.stop()


@pytest.mark.parametrize("status", [401, 403])
def test_a_refusal_stops_the_feed_and_the_reporter(fake_feed: FakeFeed, status: int) -> None:
    """Jupyter's 401/403 is the server refusing this kernel, not a model provider's key: both
    clients of the kernel's server link stop, and say so."""
    fake_feed.answers = [(status, {"message": "Forbidden"}), (status, {"message": "Forbidden"})]
    feed, calls = run_feed(fake_feed)
    wait_until(lambda: feed.stopped_because is not None)
    assert feed.stopped_because == f"the server refused this kernel (HTTP {status}): Forbidden"
    assert calls == [] and len(fake_feed.requests) == 1
    feed.stop()
    reporter = StateReporter(feed.routes, lambda: {"turn": None})
    reporter.start()
    wait_until(lambda: reporter.stopped_because is not None)
    assert f"HTTP {status}" in (reporter.stopped_because or "") and reporter.sent == 0
    reporter.stop()


def test_link_errors_say_what_failed() -> None:
    from jupyter_recap.errors import LinkBadAnswer, LinkBusy, LinkNotFound, LinkRefused
    from jupyter_recap.ipython.link import _status_error

    kinds = {code: type(_status_error(code, "")) for code in (401, 403, 404, 429, 500, 502)}
    assert kinds == {
        401: LinkRefused,
        403: LinkRefused,
        404: LinkNotFound,
        429: LinkBusy,
        500: LinkBadAnswer,
        502: LinkBadAnswer,
    }
    assert [code for code, kind in kinds.items() if kind.final] == [401, 403, 404]


def test_server_errors_are_retried(fake_feed: FakeFeed) -> None:
    fake_feed.answers = [(500, {"message": "boom"}), (200, state(5, [], False)), (0, {})]
    feed, calls = run_feed(fake_feed)
    wait_until(lambda: calls == [("focus", False, calls[0][2])] if calls else False)
    assert feed.connected
    feed.stop()


def test_stop_aborts_a_waiting_poll_at_once(fake_feed: FakeFeed) -> None:
    fake_feed.answers = [(0, {})]
    feed, _ = run_feed(fake_feed)
    wait_until(lambda: len(fake_feed.requests) == 1)
    started = time.monotonic()
    feed.stop()
    assert time.monotonic() - started < 1.5


def test_no_server_at_all_is_retried_quietly() -> None:
    feed = FocusFeed(
        ServerInfo("http://127.0.0.1:9/", {}, "environment"),
        KERNEL,
        on_focus=lambda *a: None,
        on_input=lambda: None,
    )
    feed.start()
    wait_until(lambda: feed.last_error is not None)
    assert not feed.connected and "cannot reach" in (feed.last_error or "")
    feed.stop()


ENTRIES = [
    {"kind": "event", "text": "While you were away: 1 cell edited", "name": None, "error": None}
]


def test_outside_entries_reach_their_callback_as_sent(fake_feed: FakeFeed) -> None:
    fake_feed.answers = [
        (200, state(1, [], True)),
        (
            200,
            state(
                4,
                [
                    {
                        "seq": 2,
                        "type": "outside",
                        "at": 2000.0,
                        "entries": ENTRIES,
                        "cell": "latest",
                    },
                    {"seq": 3, "type": "outside", "at": 2001.0, "entries": "not a list"},
                    {"seq": 4, "type": "outside", "at": 2002.0, "entries": ENTRIES},
                ],
                True,
            ),
        ),
        (0, {}),
    ]
    received: list[Any] = []
    feed, _ = run_feed(
        fake_feed, on_outside=lambda entries, latest: received.append((entries, latest))
    )
    wait_until(lambda: len(received) == 2)
    feed.stop()
    assert received == [(ENTRIES, True), (ENTRIES, False)]


def test_a_hanging_report_holds_a_due_timer_up_for_at_most_the_report_deadline() -> None:
    """The state reports share the worker with the trigger timers: each report request has a
    short deadline of its own (not the 10 s of a general request), so a server that hangs
    delays a due recap timer by at most :data:`REPORT_TIMEOUT`."""
    from jupyter_recap.errors import LinkNotFound
    from jupyter_recap.ipython.reporter import REPORT_TIMEOUT
    from jupyter_recap.ipython.worker import Worker

    asked: list[float] = []

    class HangingLink:
        def request(self, method: str, path: str, body: Any, timeout: float, cancel: Any) -> Any:
            asked.append(timeout)
            if path == "/agent":  # the reporter stops here: nothing left to send
                raise LinkNotFound("not this server's kernel", status=404)
            return {}

    worker = Worker("test-report-worker")
    reporter = StateReporter(HangingLink(), lambda: {"turn": None}, worker=worker)  # type: ignore[arg-type]
    reporter.banner("model-1")
    reporter.start()
    wait_until(lambda: reporter.stopped_because is not None)
    reporter.stop()
    worker.stop()
    assert len(asked) == 2  # the banner, then the report
    assert all(timeout <= REPORT_TIMEOUT for timeout in asked)
    assert REPORT_TIMEOUT <= 2.0


def test_ready_comes_once_after_the_first_answer_is_taken_in(fake_feed: FakeFeed) -> None:
    """A resumed session drafts only once the first answer is in: in a restarted kernel that
    answer writes the restart into the transcript, and a draft begun before would be stale."""
    restart = {"seq": 1, "type": "kernel", "what": "restarted", "at": 1500.0}
    fake_feed.answers = [(200, state(1, [restart], True)), (200, state(1, [], True)), (0, {})]
    seen: list[Any] = []
    feed = FocusFeed(
        ServerInfo(fake_feed.url, {}, "environment"),
        KERNEL,
        on_focus=lambda focused, at: seen.append(("focus", focused)),
        on_input=lambda: seen.append(("input",)),
        on_kernel=lambda what, at: seen.append(("kernel", what)),
        on_ready=lambda: seen.append(("ready",)),
        key=KEY,
    )
    feed.start()
    wait_until(lambda: len(fake_feed.requests) >= 3)
    feed.stop()
    # The focus and the restart were handed over first; ready came once, however many polls.
    assert seen == [("focus", True), ("kernel", "restarted"), ("ready",)], seen


def test_ready_comes_when_the_feed_stops_before_any_answer(fake_feed: FakeFeed) -> None:
    fake_feed.answers = [(404, {"message": "no such kernel"})]
    ready: list[bool] = []
    feed, _ = run_feed(fake_feed, on_ready=lambda: ready.append(True))
    wait_until(lambda: feed.stopped_because is not None)
    wait_until(lambda: ready == [True])
    feed.stop()
    assert ready == [True]
