"""A model's recap stays within what it was told: one that names a file, a number, an error or
a cell the session does not hold is not shown as the model's; the offline recap takes its place
with one line saying why, and the debug log keeps the rejected text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agentmagic import install
from fakellm import FakeLLM, answer
from hypothesis import given
from hypothesis import strategies as st

import jupyter_recap as jr
from jupyter_recap.pipeline.grounding import ungrounded
from jupyter_recap.pipeline.offline import offline_recap
from jupyter_recap.pipeline.service import RecapStats, draft_recap
from jupyter_recap.settings import Recap
from jupyter_recap.stores.usage import UsageLedger

MODEL = "openai:gpt-4o-mini"
GROUNDED = "You are repointing the FK of invoices.ts (line 142). Next: repoint it to customers_v2."
INVENTED = "You are fixing invoices_v3.ts. Next: repoint the FK to customers_v2."


def session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?", model=MODEL)
    t.tool_call("read_file", {"path": "src/billing/invoices.ts"})
    t.tool_result("read_file", "export const invoices = ...")
    t.code("check_fk('invoices')", error="IntegrityError: violates foreign key", count=7)
    t.assistant("Line 142 references customers_v1. Next: repoint it to customers_v2.")
    t.outcome("ok")
    return t


def draft(fake: FakeLLM, tmp_path: Path, t: jr.Transcript, trigger: str = "away") -> Any:
    return draft_recap(
        t,
        settings=Recap(model=MODEL),
        trigger=trigger,
        env={"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-test-0123456789"},
        stats=RecapStats(),
        usage=UsageLedger(tmp_path / "store"),
    )


def test_a_grounded_recap_is_shown_as_the_model_wrote_it(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.respond(answer(f"<recap>{GROUNDED}</recap>"))
    result = draft(fake_llm, tmp_path, session())
    assert result.recap is not None
    assert (result.recap.model, result.recap.text) == (MODEL, GROUNDED)


@pytest.mark.parametrize(
    ("invented", "named"),
    [
        (INVENTED, "invoices_v3.ts"),
        ("The FK on line 143 still points at customers_v1. Next: repoint it.", "143"),
        ("In[12] failed with IntegrityError. Next: repoint the FK.", "In[12]"),
        ("invoices.ts raised a ValueError. Next: repoint the FK.", "ValueError"),
        ("Look at src/billing/payments.ts next.", "src/billing/payments.ts"),
    ],
)
@pytest.mark.parametrize("trigger", ["away", "manual"])
def test_an_invented_name_gives_the_offline_recap_and_says_which(
    fake_llm: FakeLLM,
    tmp_path: Path,
    invented: str,
    named: str,
    trigger: str,
) -> None:
    fake_llm.respond(answer(f"<recap>{invented}</recap>"))
    t = session()
    result = draft(fake_llm, tmp_path, t, trigger)
    assert result.recap is not None
    assert result.recap.model == "offline"
    assert result.recap.text == offline_recap(t)
    assert result.recap.note == f"{MODEL}'s recap named {named}, which the session does not hold"
    # The rejected text is kept where a developer looks: the debug log (never the notebook).
    assert invented in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text(encoding="utf-8")
    assert len(fake_llm.requests) == 1


def test_the_checks_follow_the_context_not_one_phrasing() -> None:
    context = "order A-1,204 of 199.0 EUR; AUC 0.91; In[3] churn.csv -> KeyError: 'region'"
    # Separators, a zero fraction, a percentage of a fraction, case: the same facts.
    assert ungrounded("Refund 1204 (199 EUR). AUC 91%. Rerun In[3] on Churn.CSV.", context) == []
    assert ungrounded("The KeyError in In[3]; e.g. rerun it.", context) == []
    # Words are never checked: a paraphrase is not an invention.
    assert ungrounded("You are refunding a customer. Next: check the ledger.", context) == []


NAMES = st.from_regex(r"[a-z]{3,8}_[a-z]{2,6}\.(csv|py|ts|json|parquet)", fullmatch=True)


@given(held=NAMES, other=NAMES, number=st.integers(10, 10**6))
def test_held_names_pass_and_others_are_named(held: str, other: str, number: int) -> None:
    context = f"User: load {held} and check row {number}.\nAssistant: loaded {held}."
    assert ungrounded(f"You loaded {held}; row {number} is next.", context) == []
    if other != held and other not in context:
        assert ungrounded(f"You loaded {other}.", context) == [other]
    if str(number + 1) not in context:
        assert ungrounded(f"Row {number + 1} is next.", context) == [str(number + 1)]


def test_percent_recap_says_why_the_models_recap_was_not_shown(
    shell: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    shell.run_line_magic("load_ext", "jupyter_recap")
    agent = install(shell)
    agent.script.append(
        lambda prompt: print("Line 142 references customers_v1. Next: repoint the FK.")
    )
    shell.run_cell("%%agent\nfix the FK constraint in invoices.ts", store_history=True)
    fake_llm.respond(answer(f"<recap>{INVENTED}</recap>"))
    capsys.readouterr()
    shell.run_line_magic("recap", f"--model {MODEL}")
    header, text = capsys.readouterr().out.splitlines()
    assert header == (
        f"✦ recap · offline · {MODEL}'s recap named invoices_v3.ts, which the session does not hold"
    )
    assert text == offline_recap(jr.current()) and "invoices_v3" not in text
