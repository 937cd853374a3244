"""jupyter-ai's ``%ai`` line magic (v2 and the v3 magic commands) in a real kernel."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from capturekit import (
    agent_kernel,
    entries,
    execute,
    peek,
    recap_request,
    run,
    status,
    turns_recorded,
)
from fakellm import FakeLLM, answer, model_not_found
from kernelutil import stream_text

from jupyter_recap.capture.sources import installed_version

pytestmark = pytest.mark.timeout(240)

EXPLANATION = "The name df2 was never defined: the cell above assigns df."


def last_turn(kc: Any) -> list[dict[str, Any]]:
    """The entries of the latest agent turn, from its prompt on."""
    found = entries(kc)
    start = max(i for i, e in enumerate(found) if e["kind"] == "user")
    return found[start:]


@pytest.fixture(scope="module")
def v2() -> Any:
    with FakeLLM() as fake, agent_kernel(fake, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magics")
        run(kc, "%load_ext jupyter_recap")
        yield kc, fake


def test_ai_error_is_a_turn_with_the_error_as_prompt_and_the_reply(v2: Any) -> None:
    kc, fake = v2
    turns = turns_recorded(kc, "jupyter-ai-magics 2.31.7")  # its name and version (see below)
    run(kc, "df = [1, 2]\nprint(df2)", expect_error=True)
    fake.respond(answer(EXPLANATION))
    shown = run(kc, "%ai error openai-chat:gpt-4o-mini")
    assert any(EXPLANATION in str(m["content"]) for m in shown)  # jupyter-ai's output as before
    turn = last_turn(kc)
    assert turn[0]["kind"] == "user" and turn[0]["name"] == "openai-chat:gpt-4o-mini"
    assert turn[0]["text"].startswith("Explain the following error")
    assert "NameError" in turn[0]["text"] and "df2" in turn[0]["text"]
    assert [e["kind"] for e in turn[1:]] == ["assistant", "outcome"]
    assert EXPLANATION in turn[1]["text"] and turn[2]["outcome"] == "ok"
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == (
        "openai-chat:gpt-4o-mini"
    )
    sent = recap_request(kc, fake)
    assert "NameError" in sent and "df2 was never defined" in sent
    # The magics package by its own name and version (v2's shares jupyter-ai's version).
    assert turns_recorded(kc, "jupyter-ai-magics 2.31.7") == turns + 1


def test_a_model_prompt_on_the_line_is_a_failed_turn_not_a_lost_one(v2: Any) -> None:
    kc, _ = v2
    run(kc, "%ai openai-chat:gpt-4o-mini explain joins", expect_error=True)
    turn = last_turn(kc)
    assert turn[0]["text"] == "explain joins"
    assert turn[0]["name"] == "openai-chat:gpt-4o-mini"
    # jupyter-ai 2.x refuses a model prompt on the line ("No such command"): a failed turn
    assert turn[-1]["outcome"] == "errored" and "No such command" in turn[-1]["error"]


def test_management_subcommands_stay_ordinary_cells(v2: Any) -> None:
    kc, _ = v2
    before = len([e for e in entries(kc) if e["kind"] == "user"])
    run(kc, "%ai list openai-chat")
    after = entries(kc)
    assert len([e for e in after if e["kind"] == "user"]) == before
    assert after[-1]["kind"] == "code" and after[-1]["text"] == "%ai list openai-chat"


def test_capture_off_leaves_ai_lines_ordinary() -> None:
    with FakeLLM() as fake, agent_kernel(fake, {"JUPYTER_RECAP_CAPTURE": "0"}, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magics")
        run(kc, "%load_ext jupyter_recap")
        run(kc, "print(missing)", expect_error=True)
        run(kc, "%ai error openai-chat:gpt-4o-mini")
        assert not [e for e in entries(kc) if e["kind"] == "user"]
        assert "capture:     off" in status(kc)


def test_v3_fix_is_a_turn() -> None:
    with FakeLLM() as fake, agent_kernel(fake, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magic_commands")
        run(kc, "%load_ext jupyter_recap")
        run(kc, "rows = [1]\nrows[3]", expect_error=True)
        fake.respond(answer("rows has one item; index 3 is out of range. Use rows[0]."))
        run(kc, "%ai fix openai/gpt-4o-mini")
        turn = last_turn(kc)
        assert turn[0]["text"].startswith("Explain the following error and propose a fix")
        assert "IndexError" in turn[0]["text"]
        assert turn[0]["name"] == "openai/gpt-4o-mini"
        assert any("index 3 is out of range" in e.get("text", "") for e in turn[1:])
        assert turn[-1]["outcome"] == "ok"
        assert "jupyter-ai" in status(kc)


# -- jupyter-ai reports failures without raising (issue 21) ---------------------------------------

SESSION = (
    "__import__('jupyter_recap.ipython.extension', fromlist=['_']).extension_for(get_ipython())"
)
#: No key and no reachable endpoint: LiteLLM fails in the kernel, before any request.
NO_KEY = (
    "import os\n"
    "os.environ.pop('OPENAI_API_KEY', None)\n"
    "os.environ['OPENAI_BASE_URL'] = 'http://127.0.0.1:9/v1'"
)


def stored_title(kc: Any) -> str:
    """The stored session's title once everything recorded is written."""
    return str(peek(kc, f"({SESSION}.writer.flush(), {SESSION}.writer.record.title)[1]"))


def test_v2_unknown_model_answered_with_a_note_is_an_errored_turn(v2: Any) -> None:
    kc, _ = v2
    run(kc, "%%ai nope:model\nsay hi")
    turn = last_turn(kc)
    assert [e["kind"] for e in turn] == ["user", "outcome"]
    assert turn[-1]["outcome"] == "errored"
    assert turn[-1]["error"] == "Cannot determine model provider from model ID `nope:model`."


def test_v3_ai_cell_without_a_key_is_an_errored_turn_with_the_error_line() -> None:
    env = {"JUPYTER_RECAP_MODEL": "offline"}
    with FakeLLM() as fake, agent_kernel(fake, env, load=False) as kc:
        run(kc, NO_KEY)
        run(kc, "%load_ext jupyter_ai_magic_commands")
        run(kc, "%load_ext jupyter_recap")
        shown = run(kc, "%%ai openai/gpt-4o-mini\nSummarise the churn table")
        # jupyter-ai's own output is untouched: LiteLLM's banner, the error, the returned text
        assert "Give Feedback" in stream_text(shown)
        assert "Error calling language model" in stream_text(shown, "stderr")
        assert not fake.requests  # it failed in the kernel: no request went anywhere
        turn = last_turn(kc)
        assert [e["kind"] for e in turn] == ["user", "outcome"]  # an error is no reply
        outcome = turn[-1]
        assert outcome["outcome"] == "errored"
        # LiteLLM's meaningful line (its exception named once), not the banner above it
        assert outcome["error"].startswith("Error calling language model: litellm.")
        assert "api_key" in outcome["error"] and "\n" not in outcome["error"]
        assert "Error: InternalServerError" not in outcome["error"]
        run(kc, "%recap")
        recap = [e for e in entries(kc) if e["kind"] == "recap"][-1]["text"]
        # The line from the exception it names on (the state reads errors so).
        assert re.search(r"errored: (?:Error calling language model: )?litellm\.\w+Error", recap)
        assert "Give Feedback" not in recap and "litellm/issues" not in recap
        assert "Give Feedback" not in json.dumps(entries(kc))
        # The magics package by its own name and version, and the jupyter-ai it came with when
        # that is installed (the test extra installs jupyter-ai 3.2 for the chat tests).
        lines = [line for line in status(kc).splitlines() if "jupyter-ai" in line]
        meta = installed_version("jupyter-ai")
        named = (
            f"jupyter-ai {meta} (magic commands 0.0.4)"
            if meta is not None
            else "jupyter-ai-magic-commands 0.0.4"
        )
        assert len(lines) == 1 and f"{named}: on, 1 turn recorded" in lines[0], lines


def test_v3_refused_fix_is_a_failed_turn_and_not_the_title() -> None:
    with FakeLLM() as fake, agent_kernel(fake, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magic_commands")
        run(kc, "%load_ext jupyter_recap")
        # Nothing failed yet: jupyter-ai answers with a note and asks no model.
        run(kc, "%ai fix openai/gpt-4o-mini")
        outcome = last_turn(kc)[-1]
        assert outcome["outcome"] == "errored"
        assert "There have been no errors since the kernel started" in outcome["error"]
        assert stored_title(kc) == ""
        # No model named and none configured: jupyter-ai refuses on stderr.
        run(kc, "rows = [1]\nrows[3]", expect_error=True)
        run(kc, "%ai fix")
        turn = last_turn(kc)
        assert "IndexError" in turn[0]["text"]
        assert turn[-1]["outcome"] == "errored"
        assert "No valid %ai magics arguments given" in turn[-1]["error"]
        assert not fake.requests
        assert stored_title(kc) == ""
        # The first request that was answered names the session.
        fake.respond(answer("Churn is highest in the March cohort."))
        run(kc, "%%ai openai/gpt-4o-mini\nPlot churn by cohort")
        assert last_turn(kc)[-1]["outcome"] == "ok"
        assert stored_title(kc) == "Plot churn by cohort"


@pytest.mark.parametrize(
    ("installed", "loaded", "label"),
    [
        ({"jupyter-ai-magic-commands": "0.0.4"}, [], "jupyter-ai-magic-commands 0.0.4"),
        (
            {"jupyter-ai-magic-commands": "0.0.4", "jupyter-ai": "3.2.0"},
            ["jupyter_ai_magic_commands"],
            "jupyter-ai 3.2.0 (magic commands 0.0.4)",
        ),
        (
            {"jupyter-ai-magic-commands": "0.0.4", "jupyter-ai-magics": "2.31.7"},
            ["jupyter_ai_magic_commands"],
            "jupyter-ai-magic-commands 0.0.4",
        ),
        (
            {"jupyter-ai-magic-commands": "0.0.4", "jupyter-ai-magics": "2.31.7"},
            [],
            "jupyter-ai-magic-commands 0.0.4, jupyter-ai-magics 2.31.7",
        ),
        ({"jupyter-ai-magics": "2.31.7", "jupyter-ai": "2.31.7"}, [], "jupyter-ai 2.31.7"),
        ({"jupyter-ai-magics": "2.31.7"}, ["jupyter_ai_magics"], "jupyter-ai-magics 2.31.7"),
        ({}, [], "jupyter-ai"),
    ],
)
def test_status_names_the_magics_package_and_its_version(
    monkeypatch: pytest.MonkeyPatch, installed: dict[str, str], loaded: list[str], label: str
) -> None:
    import sys
    import types

    from jupyter_recap.capture import jupyter_ai
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.record.transcript import Transcript

    monkeypatch.setattr(jupyter_ai, "installed_version", installed.get)
    for module in (jupyter_ai.V2_MODULE, jupyter_ai.V3_MODULE):
        monkeypatch.delitem(sys.modules, module, raising=False)
    for module in loaded:
        monkeypatch.setitem(sys.modules, module, types.ModuleType(module))
    source = jupyter_ai.JupyterAISource(RunHub(Transcript))
    assert source.label() == label
    assert source.describe().startswith(f"{label}: on once ")


def test_a_failed_turns_prompt_never_stays_the_title() -> None:
    """The rule behind the stored title: a prompt names the session while its turn runs and
    stops naming it when the turn errors; a recap's title is never taken back."""
    from jupyter_recap.stores.sessionfiles import SessionRecord
    from jupyter_recap.stores.titles import PromptTitle

    record = SessionRecord(id="x", created=0.0, updated=0.0)
    titles = PromptTitle()

    def turn(prompt: str, outcome: str) -> tuple[str, str]:
        titles.fold(record, {"kind": "user", "text": prompt})
        running = record.title
        titles.fold(record, {"kind": "outcome", "outcome": outcome})
        return running, record.title

    assert turn("%ai fix: explain the latest error (none recorded)", "errored") == (
        "%ai fix: explain the latest error (none recorded)",
        "",
    )
    assert (record.title, record.first_prompt) == ("", "")
    assert turn("Plot churn by cohort", "ok") == ("Plot churn by cohort",) * 2
    assert turn("Now by region", "errored") == ("Plot churn by cohort",) * 2
    assert record.first_prompt == "Plot churn by cohort"
    interrupted = SessionRecord(id="y", created=0.0, updated=0.0)
    titles.fold(interrupted, {"kind": "user", "text": "Long job"})
    titles.fold(interrupted, {"kind": "outcome", "outcome": "aborted"})
    assert interrupted.title == "Long job"  # the request was made
    recapped = SessionRecord(id="z", created=0.0, updated=0.0)
    titles.fold(recapped, {"kind": "user", "text": "Say hi"})
    recapped.title = "Fixing the churn plot"  # a recap arrived while the turn ran
    titles.fold(recapped, {"kind": "outcome", "outcome": "errored"})
    assert (recapped.title, recapped.first_prompt) == ("Fixing the churn plot", "")


# -- a mistyped model in an %%ai line (issue 35) ------------------------------------------------

#: The first line of the banner's text: the engine, and why a model did not write it.
BANNER_HEAD = f"{SESSION}.banner.plain_text().splitlines()[0]"


@pytest.mark.parametrize(
    ("magics", "mistyped", "good"),
    [
        ("jupyter_ai_magics", "openai-chat:gpt-4o-mnii", "openai-chat:gpt-4o-mini"),
        ("jupyter_ai_magic_commands", "openai/gpt-4o-mnii", "openai/gpt-4o-mini"),
    ],
    ids=["v2", "v3"],
)
def test_a_mistyped_ai_model_is_said_by_the_recap_until_a_good_one_takes_over(
    magics: str, mistyped: str, good: str
) -> None:
    # The recap follows the notebook's %%ai model ("auto"), as it does out of the box.
    with FakeLLM() as fake, agent_kernel(fake, {"JUPYTER_RECAP_MODEL": "auto"}, load=False) as kc:
        run(kc, f"%load_ext {magics}")
        run(kc, "%load_ext jupyter_recap")
        # The provider has no such model (v3 refuses the name itself, before asking).
        fake.respond(model_not_found())
        execute(kc, f"%%ai {mistyped}\nSummarise the churn table")  # v2 raises, v3 prints
        assert last_turn(kc)[-1]["outcome"] == "errored"
        fake.reset()
        asked = len(fake.requests)
        fake.respond(model_not_found())
        run(kc, "%recap")
        assert [r.body["model"] for r in fake.requests[asked:]] == ["gpt-4o-mnii"]
        said = "✦ recap · offline · model openai:gpt-4o-mnii was not found"
        assert peek(kc, BANNER_HEAD) == said
        model_line = [line for line in status(kc).splitlines() if line.startswith("model:")]
        assert model_line == [
            "model:       no usable model: offline engine (active model openai:gpt-4o-mnii "
            "skipped: not found (openai answered HTTP 404: The model `gpt-4o-mnii` does not "
            "exist or you do not have access to it.))"
        ]
        # The next recap knows without asking again, and says so again.
        run(kc, "print('another cell')")
        run(kc, "%recap")
        assert len(fake.requests) == asked + 1
        assert peek(kc, BANNER_HEAD) == said
        # A later %%ai line with a model that exists takes over.
        fake.respond(answer("Churn is highest in the March cohort."))
        run(kc, f"%%ai {good}\nSummarise the churn table")
        assert last_turn(kc)[-1]["outcome"] == "ok"
        asked = len(fake.requests)
        run(kc, "%recap")
        assert [r.body["model"] for r in fake.requests[asked:]] == ["gpt-4o-mini"]
        assert peek(kc, BANNER_HEAD) == "✦ recap · openai:gpt-4o-mini"
        assert "active model openai:gpt-4o-mini (OPENAI_API_KEY set)" in status(kc)
