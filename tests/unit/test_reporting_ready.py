"""When a resumed session may draft: after the server's first answer, or without waiting when
no server of ours started the kernel, and never later than a short bound."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from jupyter_recap.ipython import reporting as reporting_module
from jupyter_recap.ipython.reporting import AgentReporting
from jupyter_recap.ipython.worker import Worker
from jupyter_recap.record.transcript import Transcript


@pytest.fixture
def worker() -> Iterator[Worker]:
    worker = Worker("test-ready")
    yield worker
    worker.stop()


def make(worker: Worker) -> AgentReporting:
    return AgentReporting(
        None,
        Transcript(),
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        focus=lambda focused, at: None,
        typed=lambda: None,
        shown=lambda: None,
        drafting=lambda: False,
        worker=worker,
    )


def test_without_a_server_the_resume_does_not_wait(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JUPYTER_RECAP_SERVER_URL", "JPY_PARENT_PID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(reporting_module, "READY_WAIT", 30.0)
    ran = threading.Event()
    reporting = make(worker)
    reporting.when_ready(ran.set)
    reporting.start()  # finds no server: no feed, so nothing to wait for
    assert ran.wait(5), "the resume waited for a feed that will never start"
    again = threading.Event()
    reporting.when_ready(again.set)  # ready already: at once, on this thread
    assert again.is_set()
    reporting.stop()


def test_a_silent_server_holds_the_resume_only_briefly(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reporting_module, "READY_WAIT", 0.2)
    calls: list[int] = []
    reporting = make(worker)
    reporting.when_ready(lambda: calls.append(1))  # the feed never answers (never started)
    done = threading.Event()
    worker.call_later(1.0, done.set)
    assert done.wait(5)
    assert calls == [1]
    reporting.stop()


def test_an_unloaded_extension_drafts_nothing(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reporting_module, "READY_WAIT", 0.2)
    calls: list[int] = []
    reporting = make(worker)
    reporting.when_ready(lambda: calls.append(1))
    reporting.stop()  # %unload_ext before the server answered
    done = threading.Event()
    worker.call_later(0.6, done.set)
    assert done.wait(5)
    assert calls == []
