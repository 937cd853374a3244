"""Measure the agents panel in a real JupyterLab + chromium and print a Markdown table.

    .venv/bin/python benchmarks/bench_agents.py            # about 2.5 min
    .venv/bin/python benchmarks/bench_agents.py --quick    # fewer turns, a 20 s idle window

Needs the built labextension and /usr/bin/chromium.

1. Turn end → panel row updated: a background notebook (open in the page, not current) runs
   agent turns; from the kernel recording the turn's end (its transcript's outcome entry, stamped
   with ``time.time()``) to the row of that notebook in the page's panel leaving the "running"
   state (a MutationObserver stamps ``Date.now()``). Path: kernel reporter thread → PUT → server
   board → event bus → page → GET row → DOM. Both clocks are this machine's wall clock.
2. Requests from an idle page with 10 notebooks open, each with jupyter_recap loaded: every
   request the page sends in a window, by kind. The focus heartbeats are what the page sent
   before the panel existed; the panel's own requests are what it adds.
3. Server memory per tracked kernel: the focus hub's and the agents board's state for many
   kernels, each with two tabs reporting, a full report (a 600-character recap with links, a
   task list, a stop cell) and a full ring of server events, measured with tracemalloc.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from browser import launch  # noqa: E402
from figurelib import figure  # noqa: E402
from labfocus import EXT, LabPage  # noqa: E402
from labserver import running_lab  # noqa: E402

from jupyter_recap.focus.board import MAX_ROW_EVENTS, AgentBoard  # noqa: E402
from jupyter_recap.focus.hub import FocusHub  # noqa: E402
from jupyter_recap.focus.validate import parse_report  # noqa: E402

FRONT, BACK = "front.ipynb", "agent.ipynb"
LOAD = "%load_ext jupyter_recap"

SHOW_PANEL = "() => window.jupyterapp.shell.activateById('jupyter-recap-agents')"

# In the page: stamp every change of each row's state with the wall clock (rows by their id:
# a notebook's kernel id, or a chat's).
OBSERVE = """() => {
  window._rowLog = [];
  const seen = new Map();
  const look = () => {
    for (const row of document.querySelectorAll('.jp-RecapAgents-row')) {
      const id = row.dataset.rowId, state = row.dataset.state;
      if (seen.get(id) !== state) {
        seen.set(id, state);
        window._rowLog.push({id, state, t: Date.now()});
      }
    }
  };
  new MutationObserver(look).observe(document.body,
    {subtree: true, childList: true, attributes: true, attributeFilter: ['data-state']});
  look();
}"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def turn_latency(browser: Any, tmp: Path, turns: int) -> list[float]:
    (tmp / "latency").mkdir()
    with running_lab(tmp / "latency", {"JUPYTER_RECAP_MODEL": "offline"}) as lab:
        lab.write_notebook(FRONT, ["1"])
        lab.write_notebook(BACK, [LOAD])
        page = LabPage.open(browser, lab, BACK)
        page.run_cells(BACK, [0])
        page.open_document(FRONT)
        page.activate(FRONT)  # the agent's notebook is in the background now
        latencies = background_turns(page, BACK, turns)
        page.page.close()
    return latencies


def background_turns(page: LabPage, name: str, turns: int) -> list[float]:
    """Run ``turns`` agent turns in notebook ``name`` (its extension loaded, the notebook not
    current) with the agents panel shown: each turn's end → its row leaving "running", in ms."""
    page.prepare_kernel(name)
    kernel = page.kernel_id(name)
    page.page.evaluate(SHOW_PANEL)
    page.page.wait_for_selector(f'.jp-RecapAgents-row[data-kernel-id="{kernel}"]', timeout=60_000)
    page.page.evaluate(OBSERVE)
    ends: list[float] = []
    for n in range(turns):
        # A turn of 0.3 s through the transcript API (what an agent framework's capture
        # records): the row shows it running, then ended.
        page.kernel_exec(
            name,
            f"import time\nwith {EXT}.transcript.turn('step {n}'):\n    time.sleep(0.3)",
        )
        ends.append(page.kernel_eval(name, f"{EXT}.transcript.entries[-1].time"))
        page.page.wait_for_timeout(400)
    log = page.page.evaluate("window._rowLog")
    changes = [(entry["t"] / 1000, entry["state"]) for entry in log if entry["id"] == kernel]
    latencies = []
    for end in ends:
        after = [t for t, state in changes if t >= end - 0.05 and state != "running"]
        if after:
            latencies.append((after[0] - end) * 1000)
    return latencies


def idle_requests(browser: Any, tmp: Path, window: float) -> dict[str, float]:
    (tmp / "idle").mkdir()
    with running_lab(tmp / "idle", {"JUPYTER_RECAP_MODEL": "offline"}) as lab:
        names = [f"nb{n}.ipynb" for n in range(10)]
        for name in names:
            lab.write_notebook(name, [LOAD])
        page = LabPage.open(browser, lab, names[0])
        for name in names[1:]:
            page.open_document(name)
        for name in names:
            page.run_as_cell(name, LOAD, "cell-0")
        page.page.evaluate(SHOW_PANEL)
        page.page.wait_for_function(
            "() => document.querySelectorAll('.jp-RecapAgents-row').length === 10",
            timeout=60_000,
        )
        # Playwright delivers page events only while it is called: wait inside it.
        page.page.wait_for_timeout(12_000)  # let start-up traffic settle
        counts: dict[str, int] = {}

        def count(request: Any) -> None:
            url = request.url.split("?", 1)[0]
            if "/jupyter-recap/api/focus" in url:
                kind = "focus heartbeats"
            elif "/jupyter-recap/api/agents" in url:
                kind = "agents panel"
            elif "/jupyter-recap/api/" in url:
                kind = "other jupyter_recap"
            else:
                kind = "JupyterLab itself"
            counts[kind] = counts.get(kind, 0) + 1

        page.page.on("request", count)
        page.page.wait_for_timeout(window * 1000)
        page.page.remove_listener("request", count)
        page.page.close()
    return {kind: n * 60 / window for kind, n in counts.items()}


def report_body() -> dict[str, Any]:
    text = "Reconciling the March invoices against the ledger; In[12] failed. " * 9
    return {
        "turn": "ok",
        "turn_started": 1795968398.43,
        "turn_ended": 1795968410.1,
        "error": None,
        "last_activity": 1795968410.1,
        "recap": {
            "text": text[:600],
            "model": "openai:gpt-4o-mini",
            "at": 1795968415.0,
            "links": [{"start": 55, "end": 61, "cell_id": "9b2c5a1e-3f4d-4e5f-8a7b-1c2d3e4f5a6b"}],
        },
        "drafting": False,
        "progress": {"done": 3, "total": 7},
        "stop_cell": {
            "cell_id": "9b2c5a1e-3f4d-4e5f-8a7b-1c2d3e4f5a6b",
            "label": "In[12]",
            "failed": True,
        },
    }


def memory_per_kernel(kernels: int) -> float:
    """Bytes of server state per kernel (hub + board), each kernel fully populated."""
    import uuid

    ids = [str(uuid.uuid4()) for _ in range(kernels)]
    bodies = [report_body() for _ in ids]  # the request bodies are not the server's state
    tabs = [str(uuid.uuid4()) for _ in range(2)]
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    hub = FocusHub()
    board = AgentBoard(facts=lambda k: (hub.focused(k), hub.execution_state(k)), max_agents=kernels)
    for kernel_id, body in zip(ids, bodies, strict=True):
        for tab in tabs:
            hub.report(kernel_id, tab, "work/reconcile-march.ipynb", False)
        hub.set_execution(kernel_id, "idle")
        board.report(kernel_id, parse_report(body))
        board.set_path(kernel_id, "work/reconcile-march.ipynb")
        for _ in range(MAX_ROW_EVENTS):
            board.kernel_event(kernel_id, "long_cell", seconds=75.2, failed=False)
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(board) == kernels and len(hub.kernel_ids()) == kernels
    return (after - before) / kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns, a shorter window")
    args = parser.parse_args()
    turns, window = (10, 20.0) if args.quick else (30, 60.0)

    with tempfile.TemporaryDirectory() as tmp:
        for browser in launch():
            latencies = turn_latency(browser, Path(tmp), turns)
            rates = idle_requests(browser, Path(tmp), window)
    per_kernel = memory_per_kernel(1000)

    print("| measure | value |")
    print("| --- | --- |")
    print(
        f"| turn end → panel row updated, p50 / p95 ({len(latencies)} of {turns} turns) | "
        f"{statistics.median(latencies):.0f} ms / {percentile(latencies, 0.95):.0f} ms |"
    )
    for kind in ("focus heartbeats", "agents panel", "other jupyter_recap", "JupyterLab itself"):
        print(
            f"| idle page, 10 notebooks: {kind} | {rates.get(kind, 0.0):.0f} requests/min "
            f"({window:.0f} s window) |"
        )
    print(f"| server state per tracked kernel (hub + board, full) | {per_kernel / 1024:.1f} KiB |")
    worst = percentile(latencies, 0.95)
    figure(
        "row_latency",
        f"{statistics.median(latencies):.0f} / {worst:.0f}",
        unit="ms",
        label=f"agent turn ends in a background notebook → its panel row updated, p50 / p95 "
        f"({len(latencies)} of {turns} turns)",
        target="p95 < 200 ms",
        met=worst < 200 and len(latencies) == turns,
    )
    beats, panel = rates.get("focus heartbeats", 0.0), rates.get("agents panel", 0.0)
    figure(
        "idle_requests",
        f"{beats:.0f} / {panel:.0f} / {rates.get('JupyterLab itself', 0.0):.0f}",
        unit="per minute",
        label=f"requests from an idle page with 10 agent notebooks ({window:.0f} s window): "
        "focus heartbeats / agents panel / JupyterLab's own",
        target="panel ≤ heartbeats",
        met=panel <= beats,
    )
    figure(
        "board_memory",
        round(per_kernel / 1024, 1),
        unit="KiB",
        label="server state per tracked kernel: focus hub (2 tabs) + agents row (600-character "
        "recap, task progress, stop cell, full event ring)",
    )


if __name__ == "__main__":
    main()
