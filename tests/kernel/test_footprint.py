"""An idle kernel with the extension loaded stays cheap (issue 27): in a kernel a real lab
started (so its focus feed connects), ``%load_ext`` adds at most two threads of ours and none of
the heavy imports, and ``%unload_ext`` leaves no thread of ours behind."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute, feed_ready, stream_text
from labserver import LabServer, running_lab

pytestmark = pytest.mark.timeout(180)

#: Prints the live threads (name, ident) and the imported modules' names, as JSON.
PROBE = """\
import json as _json, sys as _sys, threading as _threading
print(_json.dumps({
    'threads': [[t.name, t.ident] for t in _threading.enumerate()],
    'modules': sorted(_sys.modules),
}))
"""

CONNECTED = feed_ready(load=False, reported=True)

#: Imports an idle kernel must not pay for: the banner's widgets (made with the first recap),
#: httpx (the model providers'; the feed speaks http.client), the capture sources' wrapt and
#: OpenTelemetry (until a framework that needs them is imported), and the recap pipeline.
HEAVY = (
    "ipywidgets",
    "anywidget",
    "httpx",
    "wrapt",
    "opentelemetry",
    "jupyter_recap.pipeline.providers.openai",
    "jupyter_recap.pipeline.providers.anthropic",
    "jupyter_recap.pipeline.providers.transport",
    "jupyter_recap.pipeline.service",
    "jupyter_recap.widget.banner",
)


def probe(kc: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(stream_text(execute(kc, PROBE, store_history=False)))
    return result


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp: Path = tmp_path_factory.mktemp("footprint")
    with running_lab(tmp, {"JUPYTER_RECAP_MODEL": "offline"}) as server:
        yield server


def test_an_idle_kernel_runs_two_threads_of_ours_and_imports_nothing_heavy(
    lab: LabServer,
) -> None:
    kernel_id = lab.api("POST", "api/kernels", {"name": "python3"})["id"]
    kc = lab.connect(kernel_id)
    try:
        before = probe(kc)
        assert not [m for m in HEAVY if m in before["modules"]], "imported before the load"
        execute(kc, "%load_ext jupyter_recap", store_history=False)
        assert stream_text(execute(kc, CONNECTED, store_history=False)).strip() == "connected"
        time.sleep(1.0)  # idle a moment: nothing should start later either
        after = probe(kc)
        old = {tuple(t) for t in before["threads"]}
        ours = sorted(name for name, ident in after["threads"] if (name, ident) not in old)
        # The feed's long poll and the worker (timers, reports, session writes): no per-request
        # timer thread, no reporter or timer thread of their own.
        assert ours == ["jupyter-recap-feed", "jupyter-recap-worker"]
        heavy = [m for m in HEAVY if m in after["modules"]]
        assert heavy == [], f"an idle kernel imported {heavy}"

        # A recap still makes the banner (and only now its widgets)...
        shown = stream_text(execute(kc, "%recap\nimport sys; print('ipywidgets' in sys.modules)"))
        assert shown.strip().endswith("True")

        # ... and unloading stops every thread of ours.
        execute(kc, "%unload_ext jupyter_recap", store_history=False)
        deadline = time.monotonic() + 10
        while True:
            now = {tuple(t) for t in probe(kc)["threads"]}
            left = sorted(name for name, ident in now - old if name.startswith("jupyter-recap"))
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert left == []
    finally:
        kc.stop_channels()
        lab.api("DELETE", f"api/kernels/{kernel_id}")
