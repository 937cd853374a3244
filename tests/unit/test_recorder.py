"""The recorder in a real IPython shell: what agent and ordinary cells leave in the transcript."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from agentmagic import install
from IPython.display import Markdown, display

import jupyter_recap as jr


@pytest.fixture
def loaded(shell: Any) -> Any:
    # Like a kernel, compute every MIME type (terminal IPython only computes text/plain).
    shell.display_formatter.active_types = list(shell.display_formatter.format_types)
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.agent = install(shell)
    return shell


def run(shell: Any, source: str) -> Any:
    return shell.run_cell(source, store_history=True)


def kinds() -> list[str]:
    return [e.kind for e in jr.current()]


def test_printed_reply_is_recorded_and_still_printed(loaded: Any, capsys: Any) -> None:
    loaded.agent.script.append(lambda prompt: print("Migrated 4 of 7 tables. Next: the FK."))
    run(loaded, "%%agent\nmigrate the billing tables to v2")
    entries = jr.current().entries
    assert [e.kind for e in entries] == ["user", "assistant", "outcome"]
    assert entries[0].text == "migrate the billing tables to v2"
    assert "Migrated 4 of 7 tables" in entries[1].text
    assert entries[2].outcome == "ok"
    assert "Migrated 4 of 7 tables. Next: the FK." in capsys.readouterr().out


def test_displayed_markdown_reply(loaded: Any, capsys: Any) -> None:
    loaded.agent.script.append(
        # IPython's display classes have no annotations.
        lambda prompt: display(Markdown("**Plan**: fix `invoices.ts`"))  # type: ignore[no-untyped-call]
    )
    run(loaded, "%%agent\nplan the fix")
    assert jr.current()[1].text == "**Plan**: fix `invoices.ts`"
    assert "Markdown" in capsys.readouterr().out  # the user's display still happened


def test_the_recap_banner_shown_during_a_turn_is_not_its_output(loaded: Any) -> None:
    from jupyter_recap.widget.banner import RecapBanner

    banner = RecapBanner()
    banner.show("Task: an earlier recap.", "offline")

    # A recap shown while the agent works is not something the agent said (a widget view
    # records no text: its text/plain is the widget's, not the agent's).
    loaded.agent.script.append(lambda prompt: display(banner))
    run(loaded, "%%agent\nfix the loader")
    assert "earlier recap" not in str(jr.current().to_list())
    banner.close()


def test_returned_value_is_the_reply(loaded: Any) -> None:
    run(loaded, "%%ai openai-chat:gpt-4o-mini\nWhy does invoices.ts fail its FK constraint?")
    entries = jr.current().entries
    assert entries[1].kind == "assistant"
    assert entries[1].text == "Answer to: Why does invoices.ts fail its FK constraint?"
    assert jr.current().active_model == "openai-chat:gpt-4o-mini"


def test_v3_model_spelling_becomes_active_model(loaded: Any) -> None:
    run(loaded, "%%ai anthropic/claude-haiku-4-5 -f markdown\nsummarise the schema")
    assert jr.current().active_model == "anthropic/claude-haiku-4-5"


def test_errored_turn(loaded: Any) -> None:
    def fail(prompt: str) -> None:
        print("calling the model…")
        raise ConnectionError("model endpoint refused the connection")

    loaded.agent.script.append(fail)
    run(loaded, "%%agent\nrun the migration")
    outcome = jr.current().entries[-1]
    assert outcome.kind == "outcome"
    assert outcome.outcome == "errored"
    assert outcome.error == "ConnectionError: model endpoint refused the connection"


def test_aborted_turn(loaded: Any) -> None:
    def interrupt(prompt: str) -> None:
        raise KeyboardInterrupt

    loaded.agent.script.append(interrupt)
    run(loaded, "%%agent\nlong job")
    assert jr.current().entries[-1].outcome == "aborted"


def test_code_fence_answer_goes_to_next_cell(loaded: Any) -> None:
    loaded.agent.answers.append("df = df.merge(rates, on='region')")
    run(loaded, "%%ai openai-chat:gpt-4o -f code\nmerge the rates")
    assert jr.current()[1].text == "df = df.merge(rates, on='region')"
    assert loaded.rl_next_input == "df = df.merge(rates, on='region')"  # still delivered


def test_code_cells_become_activity(loaded: Any) -> None:
    run(loaded, "x = 1\ny = 2")
    run(loaded, "{}['region']")
    ok, failed = jr.current().entries
    assert (ok.kind, ok.error, ok.text) == ("code", None, "x = 1\ny = 2")
    assert failed.error == "KeyError: 'region'"
    assert ok.count is not None
    assert failed.count == ok.count + 1


def test_code_cells_can_be_left_out(loaded: Any) -> None:
    loaded.run_line_magic("config", "Recap.record_code_cells = False")
    run(loaded, "x = 1")
    assert kinds() == []


def test_recap_cells_and_silent_cells_are_not_recorded(loaded: Any) -> None:
    run(loaded, "%recap status")
    loaded.run_cell("z = 3", silent=True)
    run(loaded, "%config Recap.away_seconds = 5")
    assert kinds() == []


def test_fifty_megabytes_of_output_stay_bounded(loaded: Any, capfd: Any) -> None:
    loaded.agent.script.append(lambda prompt: print("HEAD" + "x" * 50_000_000 + "TAIL"))
    run(loaded, "%%agent\nflood")
    reply = jr.current()[1].text
    assert len(reply) < 8000
    assert reply.startswith("HEAD") and reply.rstrip().endswith("TAIL")
    assert "characters omitted" in reply


def test_user_output_order_and_content_unchanged(loaded: Any, capsys: Any) -> None:
    def chatty(prompt: str) -> str:
        print("one")
        # IPython's display classes have no annotations.
        display(Markdown("two"))  # type: ignore[no-untyped-call]
        print("three")
        return "four"

    loaded.agent.script.append(chatty)
    run(loaded, "%%agent\ntalk")
    out = capsys.readouterr().out
    assert out.index("one") < out.index("three") < out.index("four")


def test_load_twice_is_harmless_and_unload_removes_everything(shell: Any) -> None:
    callbacks_before = {k: list(v) for k, v in shell.events.callbacks.items()}
    configurables_before = list(shell.configurables)
    custom_exc_before = shell.custom_exceptions
    jr.load_ipython_extension(shell)
    jr.load_ipython_extension(shell)
    assert len(shell.events.callbacks["pre_run_cell"]) == len(callbacks_before["pre_run_cell"]) + 1
    assert "recap" in shell.magics_manager.magics["line"]
    assert shell.custom_exceptions == custom_exc_before  # jupyter-ai owns set_custom_exc
    jr.unload_ipython_extension(shell)
    assert {k: list(v) for k, v in shell.events.callbacks.items()} == callbacks_before
    assert "recap" not in shell.magics_manager.magics["line"]
    assert shell.configurables == configurables_before
    run(shell, "x = 1")
    assert kinds() == []


def test_recorder_failure_never_breaks_a_cell(loaded: Any, monkeypatch: Any) -> None:
    from jupyter_recap.record.transcript import Transcript

    def broken(self: Any, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Transcript, "code", broken)
    result = run(loaded, "value = 41 + 1")
    assert result.success and loaded.user_ns["value"] == 42


# -- the reply is the answer (issue 21) ------------------------------------------------------------

DEMO = Path(__file__).parents[2] / "notebooks" / "recap_loop_demo.ipynb"


def replies() -> list[str]:
    return [e.text for e in jr.current() if e.kind == "assistant"]


def test_the_demo_agents_reply_is_its_answer_not_its_progress_print(
    loaded: Any, capsys: Any
) -> None:
    # The demo's own stand-in agent: prints "(stand-in agent working for N s…)", works, then
    # prints its answer. The recap quoted the progress line as the last reply.
    cells = [c for c in json.loads(DEMO.read_text(encoding="utf-8"))["cells"]]
    define = next("".join(c["source"]) for c in cells if "def agent(" in "".join(c["source"]))
    assert run(loaded, define).success
    run(loaded, "%%agent 0.01\nWhy are there orphaned invoices, and what should I run next?")
    (reply,) = replies()
    assert reply == loaded.user_ns["SCRIPT"]["orphans"]
    assert "(stand-in agent working for 0.01 s…)" in capsys.readouterr().out  # still printed
    loaded.run_line_magic("config", "Recap.model = 'offline'")
    loaded.run_line_magic("recap", "")
    recap = capsys.readouterr().out
    assert "37 orphans" in recap and "stand-in agent working" not in recap


def test_a_returned_answer_wins_over_a_progress_print(loaded: Any) -> None:
    def works(prompt: str) -> Any:
        print("(working for 20 s…)")
        return Markdown("Copied customers and payments. **Next:** fix invoices.ts.")  # type: ignore[no-untyped-call]

    loaded.agent.script.append(works)
    run(loaded, "%%agent\nmigrate")
    assert replies() == ["Copied customers and payments. **Next:** fix invoices.ts."]


def test_a_returned_string_is_the_reply_without_its_quotes(loaded: Any) -> None:
    def works(prompt: str) -> str:
        print("calling the model...")
        return "Line 1 of the answer.\nLine 2."

    loaded.agent.script.append(works)
    run(loaded, "%%agent\nanswer")
    assert replies() == ["Line 1 of the answer.\nLine 2."]


def test_printed_steps_keep_the_whole_answer_after_the_progress_lines(loaded: Any) -> None:
    def prints(prompt: str) -> None:
        print("Thinking...")
        print("\x1b[2m(calling lookup_order…)\x1b[0m")
        print("Order A-1001 has 3 items.\n(1 was returned.)\nNext: refund it.")

    loaded.agent.script.append(prints)
    run(loaded, "%%agent\nlook it up")
    assert replies() == ["Order A-1001 has 3 items.\n(1 was returned.)\nNext: refund it."]


def test_a_display_updated_in_place_counts_once_with_its_latest_text(loaded: Any) -> None:
    from IPython.display import update_display

    def streams(prompt: str) -> None:
        # IPython's display functions have no annotations.
        display(Markdown("Partial"), display_id="answer")  # type: ignore[no-untyped-call]
        update_display(Markdown("Partial answer, then the whole answer."), display_id="answer")  # type: ignore[no-untyped-call]

    loaded.agent.script.append(streams)
    run(loaded, "%%agent\nstream it")
    assert replies() == ["Partial answer, then the whole answer."]


def test_stderr_only_is_an_errored_turn_with_its_last_line(loaded: Any) -> None:
    def refuses(prompt: str) -> None:
        print("No Model ID entered, please enter it as `%%ai <model_id>`", file=sys.stderr)

    loaded.agent.script.append(refuses)
    run(loaded, "%%agent\nhello")
    assert replies() == []
    outcome = jr.current().entries[-1]
    assert (outcome.outcome, outcome.error) == (
        "errored",
        "No Model ID entered, please enter it as `%%ai <model_id>`",
    )


def test_warnings_and_progress_bars_on_stderr_are_no_failure(loaded: Any) -> None:
    def quiet(prompt: str) -> None:
        sys.stderr.write("agent.py:3: DeprecationWarning: old API\n  client = Old()\n")
        sys.stderr.write(" 50%|█████     | 1/2\r100%|██████████| 2/2\n")

    loaded.agent.script.append(quiet)
    run(loaded, "%%agent\nsave the report")
    outcome = jr.current().entries[-1]
    assert (outcome.outcome, outcome.error) == ("ok", None)


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        # jupyter-ai 3: every failed LiteLLM call, printed (after LiteLLM's banner) and returned.
        (
            "Error calling language model: litellm.AuthenticationError: AuthenticationError: "
            "OpenAIException - The api_key client option must be set",
            "Error calling language model: litellm.AuthenticationError: "
            "OpenAIException - The api_key client option must be set",
        ),
        # jupyter-ai 3 / 2: "%ai fix" / "%ai error" with nothing to fix sends nothing.
        (
            "There have been no errors since the kernel started.",
            "jupyter-ai sent nothing to the model: "
            "There have been no errors since the kernel started.",
        ),
        # jupyter-ai 2: a model id no provider claims.
        (
            "Cannot determine model provider from model ID 'gtp4'.\n\nTo see a list …",
            "Cannot determine model provider from model ID 'gtp4'.",
        ),
    ],
)
def test_failures_returned_instead_of_raised_are_errored_turns(
    loaded: Any, capsys: Any, returned: str, error: str
) -> None:
    def fails(prompt: str) -> str:
        print(
            "\n\x1b[1;31mGive Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new"
            "\x1b[0m\nLiteLLM.Info: If you need to debug this error, use "
            "`litellm.turn_on_debug()'.\n"
        )
        print(returned, file=sys.stderr)
        return returned

    loaded.agent.script.append(fails)
    run(loaded, "%%agent\nsay hi")
    assert replies() == []
    outcome = jr.current().entries[-1]
    assert (outcome.outcome, outcome.error) == ("errored", error)
    loaded.run_line_magic("config", "Recap.model = 'offline'")
    capsys.readouterr()
    loaded.run_line_magic("recap", "")
    assert "Give Feedback" not in capsys.readouterr().out
