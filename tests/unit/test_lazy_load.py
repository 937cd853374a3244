"""What the extension defers until it is needed: capture sources watched by module name alone
(without wrapt), and the worker thread that runs the extension's small jobs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from jupyter_recap.capture.sources import is_installed, when_imported
from jupyter_recap.capture.specs import BUILTIN_SPECS, CaptureSpec
from jupyter_recap.ipython.reporting import AgentReporting
from jupyter_recap.ipython.worker import Job, Worker
from jupyter_recap.record.transcript import Transcript

if TYPE_CHECKING:
    from jupyter_recap.focus.report import CellCounts
    from jupyter_recap.stores.workstate import WorkState


@pytest.mark.parametrize("spec", BUILTIN_SPECS, ids=lambda spec: spec.name)
def test_each_source_is_watched_by_the_imports_its_class_names(spec: CaptureSpec) -> None:
    cls = spec.source_class()
    assert spec.modules == (cls.module, *cls.also_modules)


def test_a_post_import_hook_fires_once_without_wrapt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_framework_x.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []
    cancel = when_imported("lazy_framework_x", lambda module: seen.append(module.VALUE))
    assert seen == []
    import lazy_framework_x  # type: ignore[import-not-found]

    assert seen == [1]
    # The module keeps its real loader (the watcher's wrapper is only for the import).
    assert type(lazy_framework_x.__loader__).__name__ != "_NotifyingLoader"
    cancel()
    del sys.modules["lazy_framework_x"]


def test_checking_a_dotted_source_imports_none_of_its_packages() -> None:
    """``find_spec("opentelemetry.sdk.trace")`` would import opentelemetry and its SDK."""
    code = (
        "import sys\n"
        "from jupyter_recap.capture.sources import is_installed\n"
        "from jupyter_recap.capture.manager import Capture\n"
        "from jupyter_recap.capture.runs import RunHub\n"
        "print(is_installed('opentelemetry.sdk.trace'), is_installed('no_such_pkg.sub'))\n"
        "Capture(RunHub(lambda: None)).start(['all'])\n"
        "print(sorted(m.split('.')[0] for m in sys.modules\n"
        "    if m.split('.')[0] in ('opentelemetry', 'wrapt', 'agents', 'langchain_core')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["True False", "[]"]
    assert is_installed("json") and not is_installed("json.no_such_module")


def test_the_worker_runs_jobs_in_time_order_on_one_thread() -> None:
    worker = Worker("test-worker")
    assert worker.thread is None  # nothing scheduled: no thread
    ran: list[tuple[str, str]] = []
    done = threading.Event()
    start = time.monotonic()

    def late() -> None:
        ran.append(("late", threading.current_thread().name))
        done.set()

    worker.call_at(start + 0.2, late)
    worker.call_at(start + 0.1, lambda: ran.append(("early", threading.current_thread().name)))
    cancelled = worker.call_at(start + 0.05, lambda: ran.append(("cancelled", "")))
    cancelled.cancel()
    worker.call_soon(lambda: 1 / 0)  # a failing job does not stop the others
    assert done.wait(5)
    assert ran == [("early", "test-worker"), ("late", "test-worker")]
    thread = worker.thread
    worker.stop()
    assert thread is not None and not thread.is_alive()
    assert worker.call_soon(lambda: ran.append(("after", ""))).cancelled  # stopped: dropped


#: Modules of later paths (a draft, the usage ledger, the server's validation, listings, the
#: focus feed a kernel starts on its worker thread, the trigger schedule made on first use,
#: the project memory and a recap's framing, the protocol's shapes, and what the recorder
#: needs only for a cell with a magic or an agent cell).
LATER_MODULES = (
    "jupyter_recap.record.state",  # folded when a recap or %recap state first reads it
    "jupyter_recap.record.statefold",
    "jupyter_recap.record.statetext",
    "jupyter_recap.record.phrases",
    "jupyter_recap.record.agentcells",
    "jupyter_recap.record.outputs",
    "jupyter_recap.ipython.outputtap",
    "jupyter_recap.capture.jupyter_ai",
    "jupyter_recap.pipeline.service",
    "jupyter_recap.pipeline.context",
    "jupyter_recap.pipeline.results",
    "jupyter_recap.pipeline.providers.base",
    "jupyter_recap.stores.usage",
    "jupyter_recap.stores.listings",
    "jupyter_recap.stores.memory",
    "jupyter_recap.stores.framing",
    "jupyter_recap.focus.validate",
    "jupyter_recap.fields",
    "jupyter_recap.ipython.feed",
    "jupyter_recap.ipython.link",
    "jupyter_recap.ipython.reporter",
    "jupyter_recap.schedule",
    "jupyter_recap.wire",
    "http.client",
)


def test_loading_the_extension_compiles_no_pattern_of_ours_and_imports_no_later_path() -> None:
    """``%load_ext`` in a plain IPython shell (a fresh process): no regular expression of the
    package is compiled (they compile on first use) and no module of a later path loads."""
    code = (
        "import re, sys\n"
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "compiled = []\n"
        "real = re._compile\n"
        "def spy(pattern, flags):\n"
        "    caller = sys._getframe(2).f_globals.get('__name__', '')\n"
        "    if caller.startswith('jupyter_recap'):\n"
        "        compiled.append(caller)\n"
        "    return real(pattern, flags)\n"
        "re._compile = spy\n"
        "ip.run_line_magic('load_ext', 'jupyter_recap')\n"
        "re._compile = real\n"
        "from jupyter_recap.ipython.extension import extension_for\n"
        "assert extension_for(ip) is not None\n"
        f"later = [m for m in {LATER_MODULES!r} if m in sys.modules]\n"
        "ip.run_line_magic('unload_ext', 'jupyter_recap')\n"
        "print(sorted(set(compiled)), later)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[-1] == "[] []"


class _HeldWorker(Worker):
    """A worker whose jobs wait until the test runs them."""

    def __init__(self) -> None:
        super().__init__("held")
        self.held: list[Callable[[], object]] = []

    def call_at(self, when: float, fn: Callable[[], object]) -> Job:
        self.held.append(fn)
        return Job(when, fn)


def _reporting(worker: Worker) -> AgentReporting:
    return AgentReporting(
        object(),
        Transcript(),
        cast("CellCounts", object()),
        cast("WorkState", object()),
        focus=lambda focused, at: None,
        typed=lambda: None,
        shown=lambda: None,
        drafting=lambda: False,
        worker=worker,
    )


def test_the_feed_starts_on_the_worker_and_a_stop_before_it_starts_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jupyter_recap.ipython.link as link

    looked: list[str] = []
    monkeypatch.setattr(link, "find_server", lambda env: looked.append("server"))
    worker = _HeldWorker()
    reporting = _reporting(worker)
    reporting.start()
    assert looked == [] and len(worker.held) == 1  # %load_ext does not wait for the feed
    worker.held[0]()
    assert looked == ["server"] and reporting.feed is None  # no server here: no feed

    stopped = _reporting(worker)
    stopped.start()
    stopped.stop()  # %unload_ext before the worker ran the start
    worker.held[-1]()
    assert looked == ["server"] and stopped.feed is None and stopped.reporter is None


def test_a_stop_racing_a_start_waits_for_it_and_stops_what_it_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jupyter_recap.ipython.feed as feed
    import jupyter_recap.ipython.link as link

    inside, release = threading.Event(), threading.Event()
    stopped: list[str] = []

    class FakeFeed:
        def stop(self) -> None:
            stopped.append("feed")

    def slow_server(env: object) -> None:
        inside.set()
        release.wait(5)

    monkeypatch.setattr(link, "find_server", slow_server)
    worker = Worker("race")
    reporting = _reporting(worker)
    original = reporting._start_feed

    def start_feed() -> None:
        original()
        reporting.feed = cast("feed.FocusFeed", FakeFeed())  # what a server would have started

    monkeypatch.setattr(reporting, "_start_feed", start_feed)
    reporting.start()
    assert inside.wait(5)
    stopper = threading.Thread(target=reporting.stop)
    stopper.start()
    time.sleep(0.05)
    assert stopper.is_alive()  # the stop waits for the start under way
    release.set()
    stopper.join(5)
    worker.stop()
    assert stopped == ["feed"] and reporting.feed is None
