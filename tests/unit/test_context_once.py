"""A draft's context is built once: the fingerprint the schedule keys on and the text the model
reads are the same build, reused until the transcript, the framing or the cap changes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jupyter_recap.ipython.triggers import Surface, TriggerRunner
from jupyter_recap.pipeline import context, service
from jupyter_recap.pipeline.service import RecapStats
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.settings import Recap


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the context builds of the kernel's path; the service must not build at all."""
    counted: list[int] = []
    real = context.build_context

    def counting(*args: Any, **kwargs: Any) -> str:
        counted.append(1)
        return real(*args, **kwargs)

    def refused(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("the service built the context a second time")

    # The trigger runner reaches the pipeline's module at call time (it loads lazily).
    monkeypatch.setattr(context, "build_context", counting)
    monkeypatch.setattr(service, "build_context", refused)
    return counted


def runner(transcript: Transcript, shown: list[str]) -> TriggerRunner:
    settings = Recap(model="offline", post_turn_seconds=0.0)
    surface = Surface(
        show=lambda action: shown.append(action.text), clear=lambda: None, drafting=lambda d: None
    )
    return TriggerRunner(transcript, settings, RecapStats(), surface)


def test_one_build_per_draft_and_none_while_nothing_changes(builds: list[int]) -> None:
    transcript = Transcript()
    transcript.user("reconcile the March invoices", cell_id="c1")
    transcript.assistant("Two invoices differ. Next: check the rounding.")
    transcript.outcome("ok")
    shown: list[str] = []
    trigger = runner(transcript, shown)
    first = trigger.fingerprint()
    assert trigger.fingerprint() == first and len(builds) == 1  # nothing changed: no rebuild

    job, refusal = trigger.manual(None)
    assert refusal is None and job is not None
    assert job.done.wait(10)
    assert job.result is not None and job.result.recap is not None
    assert job.result.recap.fingerprint == first  # the model read the text it was keyed on
    assert len(builds) == 1 and shown  # and the staleness check reused it

    transcript.meta("bookkeeping")  # nothing a recap sees
    transcript.recap("the recap just shown")
    assert trigger.fingerprint() == first and len(builds) == 1
    transcript.code("rates = load_rates()", count=3, cell_id="c2")
    assert trigger.fingerprint() != first and len(builds) == 2


def test_concurrent_readers_get_one_consistent_pair() -> None:
    transcript = Transcript()
    transcript.user("plot churn by cohort")
    trigger = runner(transcript, [])
    results: list[tuple[str, str]] = []
    threads = [threading.Thread(target=lambda: results.append(trigger.context())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1
    text, digest = results[0]
    assert context.fingerprint(text) == digest and "plot churn by cohort" in text
