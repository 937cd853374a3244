"""Capture plugins in a real kernel: a distribution outside the package adds a source.

The sample plugin (tests/plugins/recap_toy: the toy framework ``toyagent`` and its source, with
the ``.dist-info`` folder an install would leave) and two faulty ones (tests/plugins/
recap_toy_faulty: a spec module that raises on import, a spec written for another capture API)
are put on the kernel's path, which is all an install does for entry points.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from capturekit import (
    agent_kernel,
    capture_warnings,
    peek,
    recap_request,
    run,
    status,
    turn_entries,
    turns_recorded,
)
from fakellm import FakeLLM, answer
from kernelutil import TESTS, stream_text

pytestmark = pytest.mark.timeout(240)

TOY = TESTS / "plugins" / "recap_toy"
FAULTY = TESTS / "plugins" / "recap_toy_faulty"

TOY_RUN = """
import toyagent
agent = toyagent.Agent("helper", tools={"forecast": lambda prompt: "rain in Lyon tomorrow"})
print(agent.run("forecast for Lyon please"))
"""

#: The extension's ``Recap.capture``, read in the kernel.
SETTING = (
    "__import__('jupyter_recap.ipython.extension', fromlist=['_'])"
    ".extension_for(get_ipython()).settings.capture"
)


def plugin_env(log: Path, *sites: Path, capture: str | None = None) -> dict[str, str]:
    env = {
        "PYTHONPATH": os.pathsep.join(str(site) for site in sites),
        "JUPYTER_RECAP_LOG": str(log),
    }
    if capture is not None:
        env["JUPYTER_RECAP_CAPTURE"] = capture
    return env


def capture_lines(kc: Any) -> list[str]:
    """The capture part of ``%recap status``, one source a line."""
    lines = status(kc).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("capture:"))
    block = [lines[start].removeprefix("capture:").strip()]
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line.strip())
    return block


def warning_lines(log: Path, word: str) -> list[str]:
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [line for line in text.splitlines() if " WARNING " in line and word in line]


def test_an_installed_plugin_records_its_framework_and_broken_ones_cost_it_nothing(
    fake: FakeLLM, tmp_path: Path
) -> None:
    log = tmp_path / "recap.log"
    with agent_kernel(fake, plugin_env(log, TOY, FAULTY)) as kc:
        # The first cell after %load_ext: the plugins are looked for after the load, and this
        # cell waits for that, so the run in it is recorded.
        ran = run(kc, TOY_RUN)
        assert "Toy answer: forecast for Lyon please rain in Lyon tomorrow" in stream_text(ran)
        assert not stream_text(ran, "stderr")  # no warning in the person's cell
        turn = [(e["kind"], e.get("name"), e.get("text")) for e in turn_entries(kc)]
        assert turn == [
            ("user", "ToyModel (echo)", "forecast for Lyon please"),
            ("tool_call", "forecast", "prompt='forecast for Lyon please'"),
            ("tool_result", "forecast", "rain in Lyon tomorrow"),
            ("assistant", None, "Toy answer: forecast for Lyon please rain in Lyon tomorrow"),
            ("outcome", None, None),
        ]
        lines = capture_lines(kc)
        assert "toy (plugin recap-toy 0.1.0): on, 1 turn recorded" in lines
        assert turns_recorded(kc, "toy") == 1
        # The faulty plugins: each off, with its reason, and one warning line each in the
        # debug log (none in a cell).
        assert (
            "broken (plugin recap-capture-broken 0.1.0): off (its spec could not be loaded "
            "(RuntimeError: recap_capture_broken is broken on purpose))"
        ) in lines
        future = [line for line in lines if line.startswith("future ")]
        assert future == [
            "future (plugin recap-capture-future 0.2.0): off (written for capture API version 2,"
            " and jupyter_recap 0.1.0 speaks version 1: install a release of "
            "recap-capture-future made for it)"
        ]
        assert len(warning_lines(log, "broken (plugin recap-capture-broken 0.1.0) is off")) == 1
        assert len(warning_lines(log, "future (plugin recap-capture-future 0.2.0) is off")) == 1
        # The built-in sources go on as before.
        assert any(line.startswith("openai-agents ") for line in lines), lines
        # Built-in first, then the plugins in name order.
        names = [line.split(" ", 1)[0] for line in lines]
        assert names[-3:] == ["broken", "future", "toy"]

        fake.respond(answer("You asked the toy agent about Lyon; it expects rain tomorrow."))
        request = recap_request(kc, fake)
        assert "forecast for Lyon please" in request
        assert "rain in Lyon tomorrow" in request


def test_a_plugin_not_on_the_path_is_gone(fake: FakeLLM, tmp_path: Path) -> None:
    with agent_kernel(fake, plugin_env(tmp_path / "recap.log")) as kc:
        lines = capture_lines(kc)
        assert not [line for line in lines if "plugin" in line], lines
        assert peek(kc, "__import__('importlib.util').util.find_spec('toyagent') is None")
        # %config says why in one line and keeps the setting.
        refused = stream_text(run(kc, "%config Recap.capture = ['toy']"), "stderr")
        assert "Recap.capture: unknown source 'toy'" in refused
        assert peek(kc, SETTING) == ["all"]


def test_a_plugin_turned_off_by_name_is_never_imported_until_turned_on(
    fake: FakeLLM, tmp_path: Path
) -> None:
    log = tmp_path / "recap.log"
    with agent_kernel(fake, plugin_env(log, TOY, FAULTY, capture="all,-toy,-broken")) as kc:
        run(kc, TOY_RUN)
        assert turn_entries(kc) == []
        loaded = "sorted(m for m in __import__('sys').modules if m.startswith('recap_'))"
        assert peek(kc, loaded) == ["recap_capture_future"]  # only the one left on: refused
        lines = capture_lines(kc)
        assert "toy (plugin recap-toy 0.1.0): off" in lines
        assert "broken (plugin recap-capture-broken 0.1.0): off" in lines
        assert warning_lines(log, "broken") == []  # never imported, so never failed

        run(kc, "%config Recap.capture = ['all', '-broken']")
        assert capture_warnings(run(kc, TOY_RUN)) == []
        assert turns_recorded(kc, "toy") == 1
        assert peek(kc, loaded) == [
            "recap_capture_future",
            "recap_toy_capture",
            "recap_toy_capture.source",
            "recap_toy_capture.spec",
        ]
