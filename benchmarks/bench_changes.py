"""Measure what a notebook changed while the person was away costs, and how soon it is shown.

    .venv/bin/python benchmarks/bench_changes.py            # about a minute
    .venv/bin/python benchmarks/bench_changes.py --quick    # fewer samples

1. Memory per tracked notebook: what the server keeps of a 500-cell notebook the person looked
   at (its fingerprint and its tracking record), measured with tracemalloc.
2. Cost of the diff for a 2,000-cell notebook: parsing the file, fingerprinting its cells and
   comparing them with what the person saw (the work of one read, on the drafts pool).
3. Return → line shown: in a real JupyterLab and chromium, the notebook rewritten on disk while
   the page is hidden; from the page becoming visible to the line painted above the active
   cell, beside the banner's own latency measured the same way in the same page (a recap
   drafted while hidden), so the difference is what the line adds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_browser import INSTRUMENT, banner_latencies, percentile  # noqa: E402
from browser import launch  # noqa: E402
from figurelib import figure  # noqa: E402
from labfocus import EXT, LabPage, reports_unfocused  # noqa: E402
from labserver import LabServer, running_lab  # noqa: E402

from jupyter_recap.changes.cells import Fingerprint, notebook_cells  # noqa: E402
from jupyter_recap.changes.diff import diff  # noqa: E402
from jupyter_recap.server.outside.review import Tracked  # noqa: E402

NAME = "bench.ipynb"
OUTSIDE = ".jp-RecapBanner-outsideLine"

SHOW_LINE = """async (text) => {
  const t0 = performance.now();
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});
  document.dispatchEvent(new Event('visibilitychange'));
  for (;;) {
    await new Promise(requestAnimationFrame);
    const line = document.querySelector('.jp-RecapBanner-outsideLine');
    if (line && line.checkVisibility() && line.textContent.includes(text)) {
      return performance.now() - t0;
    }
  }
}"""


def code_cell(index: int) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": f"cell-{index}",
        "metadata": {},
        "source": f"value_{index} = compute({index})\nprint(value_{index})\n",
        "execution_count": index + 1,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{index}\n"}],
    }


def notebook_of(count: int) -> dict[str, Any]:
    return {
        "cells": [code_cell(i) for i in range(count)],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def tracked_bytes(cells: int) -> int:
    """Bytes the server keeps for one tracked notebook of ``cells`` cells."""
    parsed = notebook_cells(notebook_of(cells))
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    tracked = Tracked(f"work/notebook-{cells}.ipynb", baseline=Fingerprint(parsed))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert tracked.baseline is not None and len(tracked.baseline) == cells
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def diff_ms(cells: int, runs: int) -> tuple[float, float]:
    """Median ms of (the whole read: parse, fingerprint, diff) and of the diff alone."""
    seen = Fingerprint(notebook_cells(notebook_of(cells)))
    changed = notebook_of(cells)
    changed["cells"][cells // 2]["source"] = "edited = True\n"
    del changed["cells"][10]
    text = json.dumps(changed, indent=1)
    whole, alone = [], []
    for _ in range(runs):
        started = time.perf_counter()
        now = notebook_cells(json.loads(text))
        middle = time.perf_counter()
        change = diff(seen.cells(), now)
        ended = time.perf_counter()
        assert change.deleted == 1 and len(change.edited) == 1
        whole.append((ended - started) * 1000)
        alone.append((ended - middle) * 1000)
    return statistics.median(whole), statistics.median(alone)


def line_latencies(tab: LabPage, lab: LabServer, samples: int) -> list[float]:
    """Per sample: the notebook edited on disk while hidden; ms page visible → line painted."""
    file = lab.root / NAME
    out = []
    for index in range(samples):
        # Hidden, and the server told so (it reads what the person saw as it hears it) ...
        with tab.page.expect_response(
            lambda r: "/jupyter-recap/api/focus" in r.url and reports_unfocused(r.request.post_data)
        ):
            tab.set_visible(False)
        # ... then what the page saves on the way out (read before the answer).
        lab.api("POST", "jupyter-recap/api/seen", {"path": NAME, "client_id": "bench"})
        notebook = json.loads(file.read_text())
        notebook["cells"][2]["source"] = f"step = {index}"
        file.write_text(json.dumps(notebook))
        text = "While you were away: 1 cell edited — on disk"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = lab.api("GET", "jupyter-recap/api/agents").get("outside", {}).get(NAME)
            if found and found["text"] == text:
                break
            time.sleep(0.05)
        time.sleep(0.3)  # the row's push reaches the page
        out.append(tab.page.evaluate(SHOW_LINE, text))
        tab.page.evaluate("() => document.querySelector('.jp-RecapBanner-outsideClose')?.click()")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    samples, runs = (3, 5) if args.quick else (10, 30)

    kept = tracked_bytes(500)
    whole, alone = diff_ms(2000, runs)
    with tempfile.TemporaryDirectory() as tmp_name:
        env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": "0"}
        with running_lab(Path(tmp_name), env) as lab:
            lab.write_notebook(NAME, ["%load_ext jupyter_recap", "%%agent\nmigrate billing", ""])
            for browser in launch():
                tab = LabPage.open(browser, lab, NAME)
                tab.kernel_exec(
                    NAME, "import agentmagic\nagent = agentmagic.install(get_ipython())"
                )
                tab.run_cells(NAME, [0])
                tab.prepare_kernel(NAME)
                tab.kernel_exec(NAME, INSTRUMENT + f"{EXT}.settings.away_seconds = 3600\n")
                tab.run_cells(NAME, [1])
                tab.wait_focus_known(NAME)
                timers = f"{EXT}.settings.away_seconds = {EXT}.settings.post_turn_seconds = 0.3"
                tab.kernel_exec(NAME, timers)
                # The banner's view is mounted once the kernel's banner model reaches the page.
                tab.page.wait_for_selector(".jp-RecapBanner-mount.jp-mod-live", state="attached")
                _, banner = banner_latencies(tab, samples)
                line = line_latencies(tab, lab, samples)
                assert not tab.errors, tab.errors

    over = percentile(line, 0.95) - percentile(banner, 0.95)
    print("| measurement | value |")
    print("| --- | ---: |")
    print(f"| kept per tracked notebook of 500 cells | {kept / 1024:.1f} KiB |")
    print(f"| a 2,000-cell notebook read: parse, fingerprint, compare (median) | {whole:.1f} ms |")
    print(f"| diff of a 2,000-cell notebook: compare alone (median) | {alone:.2f} ms |")
    for label, values in (
        ("page visible → banner painted", banner),
        ("page visible → change line painted", line),
    ):
        print(
            f"| {label}: p50 / p95 of {len(values)} | {statistics.median(values):.1f} / "
            f"{percentile(values, 0.95):.1f} ms |"
        )
    print(f"| the line's p95 over the banner's | {over:+.1f} ms |")
    figure(
        "memory",
        f"{kept / 1024:.1f}",
        unit="KiB",
        target="< 16 KiB",
        met=kept < 16 * 1024,
        label="kept per tracked notebook of 500 cells (fingerprint and record, tracemalloc)",
    )
    figure(
        "diff",
        f"{whole:.1f}",
        unit="ms",
        label="a 2,000-cell notebook read for its change "
        f"line: parse, fingerprint, compare (median of {runs}; compare alone {alone:.2f} ms)",
    )
    figure(
        "return",
        f"{statistics.median(line):.1f} / {percentile(line, 0.95):.1f}",
        unit="ms",
        target="p95 < 100 ms over the banner's",
        met=over < 100,
        label=f"page visible → change line painted, real JupyterLab in chromium, p50 / p95 of "
        f"{len(line)} (banner p95 {percentile(banner, 0.95):.1f} ms in the same page)",
    )


if __name__ == "__main__":
    main()
