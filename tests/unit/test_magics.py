"""%recap in a real IPython shell (terminal IPython: the banner prints as plain text)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from agentmagic import install
from fakellm import FakeLLM, status
from IPython.core.displaypub import DisplayPublisher

import jupyter_recap as jr


@pytest.fixture
def loaded(shell: Any) -> Any:
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.agent = install(shell)
    shell.agent.script.append(
        lambda prompt: print("Line 142 references customers_v1. Next: repoint the FK.")
    )
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    return shell


def recap_output(shell: Any, capsys: pytest.CaptureFixture[str], line: str = "") -> str:
    capsys.readouterr()
    shell.run_line_magic("recap", line)
    return capsys.readouterr().out


def test_manual_recap_offline(loaded: Any, capsys: pytest.CaptureFixture[str]) -> None:
    out = recap_output(loaded, capsys)
    assert out.startswith("✦ recap · offline\n")
    assert "Fix the FK constraint in invoices.ts" in out and "Next: Repoint the FK." in out


def test_manual_recap_bypasses_automatic_off(
    loaded: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert recap_output(loaded, capsys, "off") == "recap: automatic recaps off\n"
    assert "✦ recap" in recap_output(loaded, capsys)


def test_on_off_and_config(
    loaded: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recap_output(loaded, capsys, "off")
    assert "automatic:   off" in recap_output(loaded, capsys, "status")
    recap_output(loaded, capsys, "on")
    loaded.run_line_magic("config", "Recap.away_seconds = 12.5")
    assert "away 12.5 s" in recap_output(loaded, capsys, "status")


def test_config_file_settings_apply(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.config.Recap.model = "offline"
    shell.config.Recap.idle_seconds = 30
    shell.run_line_magic("load_ext", "jupyter_recap")
    out = recap_output(shell, capsys, "status")
    assert "model setting offline" in out and "idle fallback 30 s" in out


def test_status_reports_engine_and_counters(
    loaded: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    recap_output(loaded, capsys)
    out = recap_output(loaded, capsys, "status")
    assert "model:       no agent model seen yet: offline engine" in out
    assert "focus:       not reported yet" in out and "drafts:      1 started" in out
    assert "1 entries" not in out and "1 agent turns" in out
    assert "calls:       0 made, 0 saved by dedupe, 0 failed" in out
    assert "last recap:" in out and "via offline" in out
    assert "debug log:" in out


def test_model_option_through_a_provider(
    loaded: Any,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    out = recap_output(loaded, capsys, "--model openai:gpt-4o-mini")
    header, text = out.splitlines()
    assert header == "✦ recap · openai:gpt-4o-mini"
    assert text == "You are fixing the flaky CSV loader. Next: rerun the tests."
    assert "calls:       1 made" in recap_output(loaded, capsys, "status")
    assert "tokens 321 in / 24 out" in recap_output(loaded, capsys, "status")


def test_failed_recap_prints_one_line(
    loaded: Any,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-0123456789")
    fake_llm.respond(status(401))
    capsys.readouterr()
    loaded.run_line_magic("recap", "--model=openai:gpt-4o-mini")
    captured = capsys.readouterr()
    assert captured.out.startswith("recap: no recap (openai:gpt-4o-mini: ")
    assert captured.out.count("\n") == 1 and "401" in captured.out
    assert "Traceback" not in captured.out + captured.err
    assert "sk-secret-value" not in captured.out


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("bogus", "recap: unknown arguments 'bogus'; usage: %recap"),
        ("--model", "recap: unknown arguments '--model'; usage: %recap"),
        ("--model ''", "recap: --model needs a model id"),
        ("'unclosed", "recap: No closing quotation"),
        ("--model bedrock:titan", "recap: no recap (model provider 'bedrock'"),
    ],
)
def test_bad_input_gets_one_clear_line(
    loaded: Any, capsys: pytest.CaptureFixture[str], line: str, expected: str
) -> None:
    out = recap_output(loaded, capsys, line)
    assert out.startswith(expected) and out.count("\n") == 1


def test_nothing_to_recap_yet(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("load_ext", "jupyter_recap")
    assert recap_output(shell, capsys) == (
        "recap: no recap (nothing to recap yet: no agent activity was recorded)\n"
    )


def test_shown_recaps_are_recorded_but_never_sent_again(
    loaded: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    recap_output(loaded, capsys)
    recap_entries = [e for e in jr.current() if e.kind == "recap"]
    assert len(recap_entries) == 1
    assert "✦" not in jr.build_context(jr.current()) and recap_entries[
        0
    ].text not in jr.build_context(jr.current())


def test_manual_recap_is_refused_while_an_api_agent_turn_runs(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    shell.run_line_magic("load_ext", "jupyter_recap")
    started, release = threading.Event(), threading.Event()

    def agent() -> None:
        with jr.current().turn("crawl the pricing pages", model="openai:gpt-4o-mini") as t:
            t.tool_call("fetch", {"url": "https://example.invalid/pricing"})
            started.set()
            release.wait(10)
            t.assistant("Fetched 12 pages. Next: parse the tables.")

    worker = threading.Thread(target=agent)
    worker.start()
    assert started.wait(5)
    try:
        out = recap_output(shell, capsys)
        assert out == (
            "recap: no recap (an agent turn is still running; ask again when it has finished)\n"
        )
    finally:
        release.set()
        worker.join(5)
    assert [e.kind for e in jr.current()][-2:] == ["assistant", "outcome"]
    assert "Next: Parse the tables." in recap_output(shell, capsys)


def test_api_turn_records_errors_and_interrupts() -> None:
    t = jr.Transcript()
    with pytest.raises(ValueError), t.turn("load the data"):
        raise ValueError("no such table: sales")
    with pytest.raises(KeyboardInterrupt), t.turn("retry"):
        raise KeyboardInterrupt
    outcomes = [(e.outcome, e.error) for e in t if e.kind == "outcome"]
    assert outcomes == [("errored", "ValueError: no such table: sales"), ("aborted", None)]


def test_recap_off_and_on_reach_the_engine(loaded: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_recap.ipython.extension import extension_for

    ext = extension_for(loaded)
    assert ext is not None
    recap_output(loaded, capsys, "off")
    ext.report_focus(False)
    assert ext.schedule.away_deadline is None  # no automatic timer while off
    recap_output(loaded, capsys, "on")
    assert ext.schedule.away_deadline is not None  # away already: the timer starts now


def test_unloading_clears_the_banner_and_stops_the_timer(
    shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    shell.run_line_magic("load_ext", "jupyter_recap")
    install(shell).script.append(lambda prompt: print("Next: ship it."))
    shell.run_cell("%%agent\nrelease the loader", store_history=True)
    ext = extension.extension_for(shell)
    assert ext is not None
    shell.run_line_magic("recap", "")
    banner = ext.banner
    assert banner.state == "shown"
    timer = ext.worker.thread  # the timers' thread (and the reports' and the writes')
    shell.run_line_magic("unload_ext", "jupyter_recap")
    assert banner.state == "hidden"
    assert timer is not None and not timer.is_alive()


def test_a_recap_done_while_its_output_is_being_sent_still_reaches_that_output(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``%recap`` cell's banner output exists before its draft starts.

    On a busy machine the offline engine can finish between a new output's text being taken and
    the output being sent; the update it sends then must not go out before the output it is
    meant to replace, or the saved notebook keeps an empty banner in that cell.
    """
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    sent: list[tuple[bool, str, str]] = []  # (update?, display id, text/plain) in sending order

    class Publisher(DisplayPublisher):
        def publish(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            update = bool(kwargs.get("update"))
            display_id = (kwargs.get("transient") or {}).get("display_id")
            if display_id is None:
                return
            if not update:  # a slow send: a draft already running finishes first
                for thread in threading.enumerate():
                    if thread.name == "jupyter-recap-draft":
                        thread.join(10)
            sent.append((update, display_id, data.get("text/plain", "")))

    monkeypatch.setattr(shell, "display_pub", Publisher(shell=shell))  # type: ignore[no-untyped-call]
    shell.run_line_magic("load_ext", "jupyter_recap")
    install(shell).script.append(lambda prompt: print("Next: repoint the FK."))
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    shell.run_line_magic("recap", "")

    outputs: list[list[str]] = []  # [display id, text] of each output, as a notebook keeps them
    for update, display_id, text in sent:
        if update:
            outputs = [[i, text if i == display_id else t] for i, t in outputs]
        else:
            outputs.append([display_id, text])
    ext = extension.extension_for(shell)
    assert ext is not None and ext.last_recap is not None
    expected = f"✦ recap · offline\n{ext.last_recap.text}"
    live = ext.banner.display_id
    assert outputs == [[live, expected], [f"{live}-recap-1", expected]]  # %load_ext's, %recap's


def test_a_recap_cell_keeps_its_own_recap_when_later_ones_come(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved notebook's ``%recap`` cell holds the recap it asked for; only the live banner
    (the output of ``%load_ext``) follows the latest one. A ``%recap`` that failed keeps no
    recap at all, rather than an older one above its own error line."""
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    outputs: dict[str, str] = {}  # display id -> text/plain, as a notebook keeps them

    class Publisher(DisplayPublisher):
        def publish(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            display_id = (kwargs.get("transient") or {}).get("display_id")
            if display_id is not None and (not kwargs.get("update") or display_id in outputs):
                outputs[display_id] = data.get("text/plain", "")

    monkeypatch.setattr(shell, "display_pub", Publisher(shell=shell))  # type: ignore[no-untyped-call]
    shell.run_line_magic("load_ext", "jupyter_recap")
    ext = extension.extension_for(shell)
    assert ext is not None
    agent = install(shell)
    agent.script.append(lambda prompt: print("Next: repoint the FK."))
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    shell.run_line_magic("recap", "")
    first = ext.last_recap.text if ext.last_recap else ""
    agent.script.append(lambda prompt: print("Next: rerun the migration."))
    shell.run_cell("%%agent\nnow migrate the payments table", store_history=True)
    shell.run_line_magic("recap", "")
    second = ext.last_recap.text if ext.last_recap else ""
    assert first and second and first != second
    live = ext.banner.display_id
    assert outputs == {
        live: f"✦ recap · offline\n{second}",
        f"{live}-recap-1": f"✦ recap · offline\n{first}",
        f"{live}-recap-2": f"✦ recap · offline\n{second}",
    }
    shell.run_cell("%%agent\nand the refunds table", store_history=True)
    monkeypatch.setattr(ext.settings, "model", "openai:gpt-4o-mini")  # no key: this one fails
    shell.run_line_magic("recap", "")
    assert outputs[f"{live}-recap-3"] == ""
    assert outputs[f"{live}-recap-1"] == f"✦ recap · offline\n{first}"


def test_sessions_of_a_kernel_without_a_notebook_are_not_passed_off_as_its_own(
    shell: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    from jupyter_recap.record.transcript import Transcript
    from jupyter_recap.stores.sessions import SessionWriter

    other = Transcript()
    other.user("reconcile the March invoices")
    writer = SessionWriter(other, notebook="projects/billing.ipynb", delay=3600)
    assert writer.flush()
    writer.close()
    shell.run_line_magic("load_ext", "jupyter_recap")
    out = recap_output(shell, capsys, "sessions")
    assert "does not know its notebook" in out and "%recap sessions --all" in out
    assert "reconcile the March invoices" not in out
    assert "reconcile the March invoices" in recap_output(shell, capsys, "sessions --all")


def test_sessions_show_the_title_the_latest_recap_gives(
    shell: Any,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "billing.ipynb")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.agent = install(shell)
    shell.agent.script.append(lambda prompt: print("Done. Next: rerun the tests."))
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    before = recap_output(shell, capsys, "sessions").splitlines()
    assert len(before) == 1 and before[0].endswith("1 turn  fix the FK constraint in invoices.ts")

    recap_output(shell, capsys, "--model openai:gpt-4o-mini")  # "You are fixing the flaky …"
    title, asked, told = recap_output(shell, capsys, "sessions").splitlines()
    assert title.endswith("1 turn  Fixing the flaky CSV loader")
    assert asked.split() == ["asked:", "fix", "the", "FK", "constraint", "in", "invoices.ts"]
    said = "You are fixing the flaky CSV loader. Next: rerun the tests."
    assert told.split() == ["✦", *said.split()]


KEY = "Xb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zA7cB"


def test_dry_run_prints_the_request_and_sends_nothing(
    loaded: Any,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + KEY[::-1])
    loaded.run_cell(f"print('token sk-proj-{KEY}')", store_history=True)
    out = recap_output(loaded, capsys, "--dry-run --model openai:gpt-4o-mini")
    lines = out.splitlines()
    assert lines[0].startswith("dry run: nothing was sent; openai:gpt-4o-mini would get ")
    assert "tokens" in lines[0]
    assert "--- system prompt (" in out and "--- user message (" in out
    assert "User: fix the FK constraint in invoices.ts" in out  # the context, as the model sees it
    assert "<recap>" in out  # the instructions of the user message, whole
    assert KEY[:12] not in out and KEY[::-1][:12] not in out  # after redaction
    assert fake_llm.requests == []  # nothing left the kernel
    assert "calls:       0 made" in recap_output(loaded, capsys, "status")


def test_dry_run_with_the_offline_engine_says_nothing_would_be_sent(
    loaded: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = recap_output(loaded, capsys, "--dry-run")
    assert out.startswith("dry run: nothing would be sent (no agent model seen yet: offline")
    assert recap_output(loaded, capsys, "--dry-run --model nowhere:x").startswith(
        "recap: model provider 'nowhere' of 'nowhere:x' is not supported"
    )
    assert recap_output(loaded, capsys, "status --dry-run").startswith(
        "recap: --dry-run goes with %recap [--model M] only"
    )
