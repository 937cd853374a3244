"""What the extension defers until it is needed: capture sources watched by module name alone
(without wrapt), and the worker thread that runs the extension's small jobs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jupyter_recap.capture.manager import SOURCE_MODULES, source_class
from jupyter_recap.capture.sources import is_installed, when_imported
from jupyter_recap.ipython.worker import Worker
from jupyter_recap.settings import SOURCE_NAMES


@pytest.mark.parametrize("name", SOURCE_NAMES)
def test_each_source_is_watched_by_the_imports_its_class_names(name: str) -> None:
    cls = source_class(name)
    assert SOURCE_MODULES[name] == (cls.module, *cls.also_modules)


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


#: Modules of later paths (a draft, the usage ledger, the server's validation, listings).
LATER_MODULES = (
    "jupyter_recap.pipeline.service",
    "jupyter_recap.pipeline.context",
    "jupyter_recap.stores.usage",
    "jupyter_recap.stores.listings",
    "jupyter_recap.focus.validate",
    "jupyter_recap.focus.fields",
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
