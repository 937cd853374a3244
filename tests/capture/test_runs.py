"""The capture core in a real IPython shell: runs become turns the way a person would expect."""

from __future__ import annotations

import importlib.metadata
import time
import warnings
from types import ModuleType
from typing import Any

import pytest
from traitlets import TraitError

import jupyter_recap as jr
from jupyter_recap.capture.sources import CaptureWarning, Source
from jupyter_recap.capture.specs import BUILTIN_SPECS
from jupyter_recap.ipython.extension import extension_for
from jupyter_recap.record.transcript import MAX_ENTRY_CHARS
from jupyter_recap.settings import SOURCE_NAMES, Recap


@pytest.fixture
def ext(shell: Any) -> Any:
    shell.run_line_magic("load_ext", "jupyter_recap")
    extension = extension_for(shell)
    assert extension is not None
    shell.user_ns["hub"] = extension.hub
    return extension


def cell(shell: Any, source: str) -> Any:
    return shell.run_cell(source, store_history=True)


def shape(entries: list[Any]) -> list[tuple[str, str | None]]:
    return [(e.kind, e.name) for e in entries]


def test_a_run_with_a_nested_agent_is_one_turn_named_by_agent(shell: Any, ext: Any) -> None:
    cell(
        shell,
        "r = hub.start('test', prompt='fix the loader', agent='coder')\n"
        "r.set_model('openai:gpt-4o-mini')\n"
        "r.tool_call('read_file', '{\"path\": \"loader.py\"}')\n"
        "r.tool_result('read_file', 'def load(): ...')\n"
        "inner = hub.start('test', prompt='find the CSV docs', agent='researcher')\n"
        "inner.tool_call('search', {'q': 'csv dialect'})\n"
        "inner.tool_result('search', 'RFC 4180')\n"
        "inner.finish(reply='RFC 4180 says quotes double')\n"
        "r.finish(reply='Fixed the quoting in the loader.')\n",
    )
    entries = jr.current().entries
    assert shape(entries) == [
        ("user", "openai:gpt-4o-mini"),
        ("tool_call", "read_file"),
        ("tool_result", "read_file"),
        ("tool_call", "researcher"),
        ("tool_call", "researcher.search"),
        ("tool_result", "researcher.search"),
        ("tool_result", "researcher"),
        ("assistant", None),
        ("outcome", None),
    ]
    assert entries[1].text == "path='loader.py'"
    assert entries[3].text == "find the CSV docs"
    assert entries[-2].text == "Fixed the quoting in the loader."
    assert entries[-1].outcome == "ok"
    assert jr.current().active_model == "openai:gpt-4o-mini"
    assert ext.hub.turns == {"test": 1}


def test_two_runs_in_one_cell_are_two_turns_and_the_cell_is_not_repeated(
    shell: Any, ext: Any
) -> None:
    cell(
        shell,
        "for task in ('load', 'plot'):\n"
        "    r = hub.start('test', prompt=task, model='openai:m')\n"
        "    r.finish(reply=task + ' done')\n",
    )
    kinds = [e.kind for e in jr.current()]
    assert kinds == ["user", "assistant", "outcome"] * 2  # no "code" entry for the cell
    assert jr.current().completed_turns == 2


@pytest.mark.parametrize(
    ("raised", "outcome", "detail"),
    [
        ("KeyboardInterrupt()", "aborted", None),
        ("ValueError('bad schema')", "errored", "ValueError: bad schema"),
    ],
)
def test_a_failed_run_takes_its_outcome_from_the_cell(
    shell: Any, ext: Any, raised: str, outcome: str, detail: str | None
) -> None:
    cell(shell, f"r = hub.start('test', prompt='migrate')\nr.finish()\nraise {raised}")
    last = jr.current().entries[-1]
    assert (last.kind, last.outcome, last.error) == ("outcome", outcome, detail)


def test_a_failure_the_cell_caught_keeps_the_sources_reason(shell: Any, ext: Any) -> None:
    cell(shell, "r = hub.start('test', prompt='migrate')\nr.finish('RateLimit: slow down')")
    last = jr.current().entries[-1]
    assert (last.outcome, last.error) == ("errored", "RateLimit: slow down")


def test_a_background_run_is_one_turn_and_a_turn_in_progress_meanwhile(
    shell: Any, ext: Any
) -> None:
    cell(
        shell,
        "import threading\n"
        "gate = threading.Event()\n"
        "def work(run):\n"
        "    gate.wait(5)\n"
        "    run.tool_call('fetch', {'url': 'data.csv'})\n"
        "    run.finish(reply='fetched 3 files')\n"
        "r = hub.start('test', prompt='fetch everything', model='openai:m')\n"
        "threading.Thread(target=work, args=(r,)).start()\n",
    )
    assert ext.schedule.turn_running  # the schedule waits for the turn
    cell(shell, "x = 1")  # the person goes on working meanwhile
    shell.user_ns["gate"].set()
    deadline = time.monotonic() + 5
    while jr.current().completed_turns == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    entries = jr.current().entries
    assert [e.kind for e in entries] == ["user", "code", "tool_call", "assistant", "outcome"]
    assert entries[-1].outcome == "ok" and not ext.schedule.turn_running


def test_huge_values_are_cut_before_they_are_formatted(shell: Any, ext: Any) -> None:
    started = time.perf_counter()
    cell(
        shell,
        "r = hub.start('test', prompt='scan')\n"
        "r.tool_call('load', {'rows': list(range(1_000_000))})\n"
        "r.tool_result('load', 'x' * 50_000_000)\n"
        "r.finish(reply='y' * 20_000_000)\n",
    )
    assert time.perf_counter() - started < 5
    entries = jr.current().entries
    # The run was recorded, cut: the bulky result and reply are there, at the cap and no more.
    assert [e.kind for e in entries] == ["user", "tool_call", "tool_result", "assistant", "outcome"]
    call, result, reply = entries[1:4]
    assert call.text.startswith("rows=[0, 1, 2") and len(call.text) <= MAX_ENTRY_CHARS
    assert set(result.text) >= {"x"} and MAX_ENTRY_CHARS // 2 < len(result.text) <= MAX_ENTRY_CHARS
    assert set(reply.text) >= {"y"} and MAX_ENTRY_CHARS // 2 < len(reply.text) <= MAX_ENTRY_CHARS


def test_capture_setting_names_sources_and_rejects_unknown_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Recap().capture == ["all"]
    monkeypatch.setenv("JUPYTER_RECAP_CAPTURE", "0")
    assert Recap().capture == []
    monkeypatch.setenv("JUPYTER_RECAP_CAPTURE", "LangChain, smolagents, nonsense")
    assert Recap().capture == ["langchain", "smolagents"]
    with pytest.raises(TraitError, match="unknown source 'crewai'"):
        Recap(capture=["crewai"])


def test_every_source_name_in_the_settings_has_a_class_and_no_other() -> None:
    """The settings list the names (to check ``Recap.capture`` without loading capture code);
    the specs map them to classes. The two lists must not drift apart."""
    assert [spec.name for spec in BUILTIN_SPECS] == list(SOURCE_NAMES)
    for spec in BUILTIN_SPECS:
        assert issubclass(spec.source_class(), Source)


@pytest.mark.parametrize(
    "entry", ["cheap", [1], [1, 2, 3], [True, 1], [-0.5, 1], [float("nan"), 1], {"in": 1}]
)
def test_a_price_that_is_not_two_numbers_is_refused_in_one_line(entry: object) -> None:
    with pytest.raises(TraitError) as refused:
        Recap(prices={"openai:x": entry})
    message = str(refused.value)
    assert message.startswith("Recap.prices['openai:x']: expected [input, output]")
    assert "\n" not in message


def test_prices_accept_pairs_of_numbers() -> None:
    settings = Recap(prices={"openai:x": (1, 2.5), " ollama:big ": [0, 0]})
    assert settings.prices == {"openai:x": [1.0, 2.5], "ollama:big": [0.0, 0.0]}
    assert Recap().prices == {}


def test_daily_budget_is_never_negative() -> None:
    assert Recap().daily_budget == 100
    assert Recap(daily_budget=0).daily_budget == 0
    with pytest.raises(TraitError, match=r"^Recap.daily_budget must not be negative \(got -1\)"):
        Recap(daily_budget=-1)


def test_auto_hosted_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_RECAP_AUTO_HOSTED", raising=False)
    assert Recap().auto_hosted is True
    monkeypatch.setenv("JUPYTER_RECAP_AUTO_HOSTED", "0")
    assert Recap().auto_hosted is False
    assert Recap(auto_hosted=True).auto_hosted is True
    with pytest.raises(TraitError):
        Recap(auto_hosted="sometimes")


def test_turning_capture_off_stops_recording_runs(shell: Any, ext: Any) -> None:
    assert "openai-agents" in ext.capture.sources
    shell.run_line_magic("config", "Recap.capture = []")
    assert all(s.state == "off" for s in ext.capture.sources.values())
    shell.run_line_magic("config", "Recap.capture = ['all']")
    assert ext.capture.sources["openai-agents"].state in ("waiting", "active")


class _Fragile(Source):
    name = "fragile"
    module = "fragile_framework"
    distribution = "fragile-framework"

    def install(self, module: ModuleType) -> None:
        self.callback = self.guarded(self._on_event)
        module.hooks.append(self.callback)  # AttributeError on a version without hooks

    def _on_event(self, value: int) -> int:
        return 10 // value


def test_a_source_that_meets_an_unknown_api_turns_off_with_one_warning(ext: Any) -> None:
    source = _Fragile(ext.hub)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(ModuleType("fragile_framework"))  # no "hooks": a version we don't know
        source.activate(ModuleType("fragile_framework"))
    assert source.state == "failed"
    assert [w.category for w in caught] == [CaptureWarning]
    assert "capture of fragile is off: does not understand this version" in str(caught[0].message)
    assert "fragile: off (does not understand this version" in source.describe()


class _Needy(_Fragile):
    name = "needy"
    module = "needy_framework"
    distribution = "needy-framework"
    needs = (("recap_absent_helper.trace", "recap-absent-helper"),)

    def install(self, module: ModuleType) -> None:
        import recap_absent_helper.trace  # type: ignore[import-not-found]  # never installed

        self.callback = recap_absent_helper.trace


def one_line(caught: warnings.WarningMessage) -> list[str]:
    """The lines the warning shows where warnings are printed (a cell's stderr)."""
    shown = warnings.formatwarning(
        caught.message, caught.category, caught.filename, caught.lineno, caught.line
    )
    return shown.splitlines()


def test_a_source_missing_a_package_names_it_and_the_command_that_fixes_it(ext: Any) -> None:
    fix = "pip install recap-absent-helper, then restart the kernel"
    off = f"needy: off (needs recap-absent-helper, which is not installed: {fix})"
    source = _Needy(ext.hub)
    # Before the framework is imported, the status line says what the import will meet.
    assert source.describe() == off
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(ModuleType("needy_framework"))
    assert source.state == "failed"
    assert [w.category for w in caught] == [CaptureWarning]
    assert one_line(caught[0]) == [
        "jupyter_recap:0: CaptureWarning: capture of needy is off: needs recap-absent-helper, "
        f"which is not installed: {fix}; its runs are recorded as ordinary cells"
    ]
    assert source.describe() == off


def test_a_module_the_framework_moved_is_not_a_package_to_install(ext: Any) -> None:
    class Moved(_Fragile):
        name = "moved"

        def install(self, module: ModuleType) -> None:
            import json.recap_no_such_module  # type: ignore[import-not-found]  # noqa: F401

    source = Moved(ext.hub)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(ModuleType("fragile_framework"))
    assert len(caught) == 1 and len(one_line(caught[0])) == 1
    assert "is off: does not understand this version (ModuleNotFoundError" in one_line(caught[0])[0]
    assert "pip install" not in str(caught[0].message)


def test_a_failing_callback_turns_the_source_off_and_returns_to_the_framework(ext: Any) -> None:
    source = _Fragile(ext.hub)
    module = ModuleType("fragile_framework")
    module.hooks = []  # type: ignore[attr-defined]
    source.activate(module)
    assert source.callback(5) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert source.callback(0) is None  # ZeroDivisionError stays with us
        assert source.callback(5) is None  # off from now on
    assert source.state == "failed" and len(caught) == 1


def test_a_source_installs_when_its_framework_is_imported_later(
    ext: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "late_framework.py").write_text("hooks = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Late(_Fragile):
        name = "late"
        module = "late_framework"

    from jupyter_recap.capture.sources import when_imported

    source = Late(ext.hub)
    cancel = when_imported("late_framework", source.activate)
    assert source.state == "waiting"
    import late_framework  # type: ignore[import-not-found]

    # mypy keeps the "waiting" narrowing from above; the import has just changed it
    assert source.state == "active" and late_framework.hooks == [source.callback]  # type: ignore[comparison-overlap]
    cancel()


def test_status_lists_the_sources(shell: Any, ext: Any, capsys: Any) -> None:
    shell.run_line_magic("recap", "status")
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("capture:"))
    version = importlib.metadata.version("openai-agents")  # the pinned one or the newest
    assert lines[start].startswith(f"capture:     openai-agents {version}")
    # one source per line, aligned under the first, before the next heading
    assert lines[start + 1].startswith(" " * 13 + "pydantic-ai")
    assert any(line.strip().startswith("langchain") for line in lines[start : start + 6])


def test_runs_inside_an_agent_magic_cell_are_not_recorded_twice(shell: Any, ext: Any) -> None:
    from agentmagic import install

    agent = install(shell)

    def behaviour(prompt: str) -> str:
        # the magic's own machinery is a framework run (jupyter-ai calls LangChain)
        shell.user_ns["hub"].start("langchain", prompt=prompt).finish(reply="inner")
        return "The logs show two failed uploads."

    agent.script.append(behaviour)
    cell(shell, "%%agent\nsummarise the logs")
    assert [e.kind for e in jr.current()] == ["user", "assistant", "outcome"]
    assert ext.hub.turns == {}


def test_a_run_after_an_agent_magic_cell_is_recorded(shell: Any, ext: Any) -> None:
    """The agent cell's mark ends with it: a run started afterwards outside any cell (a
    callback, a framework driven from another tool) is a turn, not the cell's machinery."""
    from agentmagic import install

    install(shell).script.append(lambda prompt: "Done.")
    cell(shell, "%%agent\nsummarise the logs")
    before = len(jr.current())
    ext.hub.start("langchain", prompt="check the uploads").finish(reply="Two failed.")
    assert [e.kind for e in list(jr.current())[before:]][:2] == ["user", "assistant"]
