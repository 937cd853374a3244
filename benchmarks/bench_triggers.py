"""Measure the automatic-recap machinery in one run and print a Markdown table.

    .venv/bin/python benchmarks/bench_triggers.py            # about a minute
    .venv/bin/python benchmarks/bench_triggers.py --quick    # fewer cycles, shorter idle window

1. Model calls over 100 away/return cycles with no new activity (real extension, real timer
   thread, a local fake provider over HTTP).
2. Time from a timer's deadline to the banner's state update, with an instant local provider.
3. CPU used by an idle kernel with the extension loaded, against one without it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ["JUPYTER_RECAP_LOG"] = "0"
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JUPYTER_RECAP_MODEL", "JUPYTER_RECAP_AUTO"):
    os.environ.pop(_name, None)

from figurelib import figure  # noqa: E402


def loaded_shell(fake_url: str) -> tuple[Any, Any]:
    """A terminal-less InteractiveShell with the extension, one agent turn, a fake provider."""
    from agentmagic import install
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from jupyter_recap.ipython import extension

    os.environ["OPENAI_BASE_URL"] = fake_url + "/v1"
    os.environ["OPENAI_API_KEY"] = "sk-bench-0123456789abcdef"
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.Recap.model = "openai:gpt-4o-mini"
    # Any: most of IPython's shell API (run_cell among it) is unannotated
    shell: Any = InteractiveShell.instance(config=config)
    # A kernel would render the banner; here the widget talks to a dummy comm, which still
    # serialises every state update exactly as it would for a frontend.
    extension.RecapExtension.has_widgets = property(lambda self: True)  # type: ignore[assignment]
    shell.run_line_magic("load_ext", "jupyter_recap")
    install(shell)
    with contextlib.redirect_stdout(io.StringIO()):  # the cell's Out[1] is not a figure
        shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    ext = extension.extension_for(shell)
    assert ext is not None
    return shell, ext


def dedupe_cycles(ext: Any, fake: Any, cycles: int) -> tuple[int, int]:
    """Model calls after the first cycle and in total, over ``cycles`` away/return cycles."""
    ext.settings.away_seconds = 0.02
    ext.settings.post_turn_seconds = 0.02
    first = None
    for n in range(cycles):
        ext.report_focus(False)
        deadline = time.monotonic() + 2
        # wait until this cycle's trigger has been decided (a call, or a call saved)
        while time.monotonic() < deadline:
            engine = ext.schedule
            if engine.in_flight is None and engine.away_deadline is None:
                break
            time.sleep(0.005)
        ext.report_focus(True)
        if n == 0:
            first = len(fake.requests)
    assert first is not None
    return len(fake.requests) - first, len(fake.requests)


def trigger_latency(ext: Any, fake: Any, rounds: int) -> list[float]:
    """Seconds from the away deadline to the banner's state update, per round."""
    banner = ext.banner
    shown_at: list[float] = []
    banner.observe(lambda change: shown_at.append(time.monotonic()), names=["state"])
    samples = []
    ext.settings.away_seconds = 0.05
    ext.runner.feed(ext.schedule.user_input)  # start from a cleared banner
    for n in range(rounds):
        ext.transcript.assistant(f"progress note {n}")  # new activity: a real call each round
        fake.text = f"<recap>You are fixing the FK, step {n}. Next: step {n + 1}.</recap>"
        shown_at.clear()
        ext.report_focus(False)
        deadline = ext.schedule.away_deadline
        give_up = time.monotonic() + 5
        while not (shown_at and banner.state == "shown") and time.monotonic() < give_up:
            time.sleep(0.001)
        if shown_at and banner.state == "shown":
            samples.append(shown_at[-1] - deadline)
        ext.report_focus(True)
        ext.runner.feed(ext.schedule.user_input)  # the person is back and types: clear
    return samples


def kernel_cpu(seconds: float, load: bool) -> float:
    """Percent of one core an idle kernel uses over ``seconds`` (after settling)."""
    from jupyter_client.manager import start_new_kernel
    from kernelutil import execute

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        if load:
            execute(kc, "%load_ext jupyter_recap\n%config Recap.idle_seconds = 1")
            execute(
                kc, "import jupyter_recap as jr\njr.current().user('x')\njr.current().outcome('ok')"
            )
        time.sleep(3)  # let start-up work and the one idle recap finish
        # jupyter_client declares LocalProvisioner.process as None; it is the Popen once started
        pid = cast(Any, km.provisioner).process.pid
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        before, started = cpu(), time.monotonic()
        time.sleep(seconds)
        return 100 * (cpu() - before) / (time.monotonic() - started)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    from fakellm import FakeLLM

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cycles, shorter idle window")
    args = parser.parse_args()
    cycles, rounds, idle = (20, 10, 5.0) if args.quick else (100, 50, 20.0)

    with FakeLLM() as fake:
        _, ext = loaded_shell(fake.url)
        after_first, total = dedupe_cycles(ext, fake, cycles)
        latencies = trigger_latency(ext, fake, rounds)
        ext.runner.stop()

    median, worst = statistics.median(latencies) * 1000, max(latencies) * 1000
    print("## Automatic recaps\n")
    print("| measure | result | target |")
    print("|---|---|---|")
    print(
        f"| model calls over {cycles} away/return cycles, no new activity | {total} in total, "
        f"{after_first} after the first cycle | 0 after the first |"
    )
    figure(
        "dedupe",
        f"{total} in total, {after_first} after the first cycle",
        unit="",
        label=f"model calls over {cycles} away/return cycles with no new activity",
        target="0 after the first",
        met=after_first == 0,
    )
    print(
        f"| deadline → banner state sent, instant local provider ({len(latencies)} rounds) "
        f"| median {median:.1f} ms, max {worst:.1f} ms | < 50 ms |"
    )
    figure(
        "trigger_latency",
        f"{median:.1f} / {worst:.1f}",
        unit="ms",
        label=f"timer deadline → banner state sent, instant local provider, median / max "
        f"({len(latencies)} of {rounds} rounds)",
        target="max < 50 ms, every round",
        met=worst < 50 and len(latencies) == rounds,
    )
    without = kernel_cpu(idle, load=False)
    with_ext = kernel_cpu(idle, load=True)
    print(
        f"| idle kernel CPU over {idle:g} s | {with_ext:.2f} % of a core with the extension, "
        f"{without:.2f} % without | < 0.5 % |"
    )
    figure(
        "idle_cpu",
        f"{with_ext:.2f} / {without:.2f}",
        unit="% of a core",
        label=f"idle kernel CPU over {idle:g} s, with / without the extension",
        target="< 0.5 %",
        met=with_ext < 0.5,
    )


if __name__ == "__main__":
    main()
