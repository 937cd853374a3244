"""A model that answers without a recap (no <recap> tags, nothing at all, only reasoning): the
call was made and counted, so the person gets the offline recap in its place, with one note
beside the engine saying what became of the model's answer; never nothing at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentmagic import install
from fakellm import FakeLLM, answer, empty_choices, huge, raw

import jupyter_recap as jr
from jupyter_recap.pipeline.offline import offline_recap
from jupyter_recap.pipeline.service import RecapStats, draft_recap
from jupyter_recap.settings import Recap
from jupyter_recap.stores.usage import UsageLedger

UNTAGGED = "I think they are migrating tables and the FK still points at customers_v1."
MODEL = "openai:gpt-4o-mini"


def session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?", model=MODEL)
    t.tool_call("read_file", {"path": "invoices.ts"})
    t.tool_result("read_file", "export const invoices = ...")
    t.assistant("Line 142 references customers_v1. Next: repoint it to customers_v2.")
    t.outcome("ok")
    return t


UNUSABLE = f"{MODEL}'s answer was unusable: "


@pytest.mark.parametrize(
    ("behaviour", "note"),
    [
        (answer(UNTAGGED), f"{MODEL}'s answer had no recap"),
        (
            answer("<think>The person wants a recap of the FK.</think>"),
            f"{MODEL}'s answer had no recap",
        ),
        (answer("<recap></recap>"), f"{MODEL}'s answer had no recap"),
        # An answer with no text at all, or not in the wire's format, or far too large: the
        # provider cannot read it, but it came, as the call was made.
        (answer(""), UNUSABLE + "openai answer has no text (finish_reason stop)"),
        (empty_choices(), UNUSABLE + "openai answer has no choices"),
        (raw(b"not json"), UNUSABLE),
        (huge(), UNUSABLE),
    ],
)
@pytest.mark.parametrize("trigger", ["away", "post_turn", "idle", "resume", "manual"])
def test_an_unusable_answer_gives_the_offline_recap_and_says_so(
    fake_llm: FakeLLM, tmp_path: Path, behaviour: Any, note: str, trigger: str
) -> None:
    fake_llm.respond(behaviour)
    ledger = UsageLedger(tmp_path / "store")
    stats = RecapStats()
    t = session()
    result = draft_recap(
        t,
        settings=Recap(model=MODEL),
        trigger=trigger,
        env={"OPENAI_BASE_URL": fake_llm.url + "/v1", "OPENAI_API_KEY": "sk-test-0123456789"},
        stats=stats,
        usage=ledger,
    )
    assert result.recap is not None
    assert result.recap.model == "offline"
    assert result.recap.text == offline_recap(t)
    assert result.recap.note.startswith(note) and "\n" not in result.recap.note
    assert "migrating tables" not in result.recap.text and "<" not in result.recap.text
    # The call happened, and is counted where the person sees what recaps spend.
    assert len(fake_llm.requests) == 1
    assert stats.calls == 1
    assert ledger.today().calls == 1


@pytest.fixture
def loaded(shell: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.agent = install(shell)
    shell.agent.script.append(
        lambda prompt: print("Line 142 references customers_v1. Next: repoint the FK.")
    )
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    return shell


def test_percent_recap_prints_the_offline_recap_with_the_note(
    loaded: Any, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.respond(answer(UNTAGGED))
    capsys.readouterr()
    loaded.run_line_magic("recap", f"--model {MODEL}")
    out = capsys.readouterr().out
    header, text = out.splitlines()
    assert header == f"✦ recap · offline · {MODEL}'s answer had no recap"
    assert text == offline_recap(jr.current())
    assert "Next: Repoint the FK." in text and "migrating tables" not in out
    assert len(fake_llm.requests) == 1
    loaded.run_line_magic("recap", "status")
    status = capsys.readouterr().out
    assert "calls:       1 made" in status
