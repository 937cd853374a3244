"""The model's context and the offline recap, both written from the session state: properties
over generated sessions (any phrasing, facts at any depth) and the cases people met."""

from __future__ import annotations

import re

import pytest
import strength
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiongen import DOMAIN_LEFT, error_class, generate, recap_wrongs

import jupyter_recap as jr
from jupyter_recap.pipeline.context import build_context
from jupyter_recap.pipeline.offline import offline_recap
from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.textutil import sentences

SEEDS = st.integers(min_value=0, max_value=10**6)


def _said(text: str, phrase: str) -> bool:
    return " ".join(phrase.casefold().split()) in " ".join(text.casefold().split())


@settings(max_examples=strength.examples(200))
@given(SEEDS)
def test_the_offline_recap_of_any_generated_session_is_right(seed: int) -> None:
    """The task as it stands, every open failure whatever its round, the waiting approval
    (else the next step), and never a failure that was fixed or superseded."""
    generated = generate(seed)
    text = offline_recap(generated.transcript()) or ""
    assert recap_wrongs(text, generated) == [], f"seed {seed}: {text}"
    assert len(text) <= MAX_RECAP_CHARS and len(sentences(text)) <= 3


@settings(max_examples=strength.examples(200))
@given(SEEDS)
def test_the_context_of_any_generated_session_holds_every_fact(seed: int) -> None:
    """The accepted proposal (not only the "yes"), the rules, the failure left behind rounds
    ago, the corrected task, the next step, the approval: all within the cap."""
    generated = generate(seed)
    context = build_context(generated.transcript(), max_chars=12000)
    truth = generated.truth
    missing = [fact[0] for fact in generated.facts if not _said(context, fact[0])]
    assert missing == [], f"seed {seed} {truth.rounds}"
    assert _said(context, truth.accepted_by)  # what accepted it, beside the decision
    assert len(context) <= 12000


@settings(max_examples=strength.examples(60))
@given(SEEDS, st.data())
def test_at_any_moment_a_fixed_failure_is_never_said_open(seed: int, data: st.DataObject) -> None:
    """Cut anywhere: once a retry fixed a failure, the recap never says it; a failure left
    behind is said from the moment it happened."""
    generated = generate(seed)
    entries = generated.entries
    cut = data.draw(st.integers(min_value=1, max_value=len(entries)), label="cut")
    text = offline_recap(Transcript(list(entries[:cut]))) or ""
    tool = generated.truth.fixed[0][0]
    fixed_error = next(e.error for e in entries if e.name == tool and e.error)
    fixed_at = max(i for i, e in enumerate(entries) if e.name == tool and e.kind == "tool_result")
    if cut > fixed_at:
        assert not re.search(rf"(?<!\w){error_class(fixed_error or '')}(?!\w)", text), text
    left = DOMAIN_LEFT[generated.truth.open_failures[0]]
    if any((entry.error or "").endswith(left) for entry in entries[:cut]):
        assert _said(text, error_class(left)), text


def _refund_session(error: str) -> Transcript:
    t = jr.Transcript()
    t.user("Refund order A-1001 (two monitors, 398 EUR) and close the ticket.")
    t.tool_call("lookup_order", {"order_id": "A-1001"})
    t.tool_result("lookup_order", "2 x monitor, 398 EUR")
    t.tool_call("issue_refund", {"order_id": "A-1001", "amount": 398})
    t.tool_result("issue_refund", "", error=error)
    t.assistant("I looked up order A-1001 and took care of the refund. Next: close the ticket.")
    t.outcome("ok")
    return t


@pytest.mark.parametrize(
    "error",
    [
        "RuntimeError: refund service unavailable",
        # smolagents words it so, quoting the arguments (and the order id) first.
        "Error executing tool 'issue_refund' with arguments {'order_id': 'A-1001', "
        "'amount': 398}: RuntimeError: refund service unavailable",
    ],
)
def test_a_reply_that_claims_success_does_not_hide_the_failure(error: str) -> None:
    text = offline_recap(_refund_session(error)) or ""
    assert "issue_refund" in text and "RuntimeError: refund service unavailable" in text, text
    assert "took care of the refund" not in text


def test_a_changed_ask_drops_the_superseded_failure_and_keeps_its_own_success() -> None:
    t = _refund_session("RuntimeError: refund service unavailable")
    t.user("Wait, only one monitor came back. Refund only one monitor, 199 EUR.")
    t.tool_call("issue_refund", {"order_id": "A-1001", "amount": 199})
    t.tool_result("issue_refund", "refunded 199.0 EUR")
    t.assistant("Refunded 199.0 EUR for one monitor.")
    t.outcome("ok")
    t.user("Now send the customer the receipt.")
    t.tool_call("send_mail", {"to": "customer@example.org"})
    t.tool_result("send_mail", "", error="SMTPError: 451 try later")
    t.outcome("errored", "SMTPError: 451 try later")
    context = build_context(t)
    framing = context.split("Recent activity")[0]
    assert "refund service unavailable" not in framing  # superseded: not an open failure
    assert "SMTPError" in framing
    text = offline_recap(t) or ""
    assert "199 EUR" in text and "SMTPError" in text and "refund service" not in text, text


def test_the_sentence_the_person_asked_for_is_kept() -> None:
    t = jr.Transcript()
    t.user("Copy the billing tables to billing_v2 and tell me what fails.")
    t.assistant("Copied 3 tables. invoices fails its FK check. Next: backfill customers_v2.")
    t.outcome("ok")
    text = offline_recap(t) or ""
    assert "invoices fails its FK check" in text and "Next: Backfill customers_v2" in text, text


def test_the_task_is_the_goal_stated_not_the_question_about_it() -> None:
    t = jr.Transcript()
    t.user(
        "We're migrating our billing tables (customers, invoices, payments) from the legacy "
        "`billing` schema to the new `billing_v2` schema. In which order should the "
        "migrations run, and what should each one check before it copies rows?"
    )
    t.assistant("customers first, then invoices, then payments.")
    t.outcome("ok")
    text = offline_recap(t) or ""
    assert text.startswith("Task: We're migrating our billing tables"), text


def test_a_failure_left_behind_stays_in_the_recap_over_many_rounds() -> None:
    """A day, not a moment: rounds of other work, returns, follow-ups; the failure stays said
    until the same thing succeeds, then it is gone."""
    t = jr.Transcript()
    t.user("Move the invoices tables to billing_v2 and make the nightly job green.")
    t.tool_call("run_sql", {"query": "INSERT INTO billing_v2.invoices SELECT * FROM billing.inv"})
    t.tool_result("run_sql", "", error="IntegrityError: violates foreign key constraint")
    t.assistant("Good progress, moving on.")
    t.outcome("ok")
    for n in range(12):
        t.user(f"Continue with view number {n}.")
        t.tool_call("write_file", {"path": f"views/v{n}.sql"})
        t.tool_result("write_file", "written")
        t.assistant(f"View {n} is rebuilt on v2.")
        t.outcome("ok")
        text = offline_recap(t) or ""
        assert "IntegrityError" in text and "run_sql (billing_v2.invoices)" in text, text
    t.user("Now fix the invoices copy.")
    t.tool_call("run_sql", {"query": "INSERT INTO billing_v2.invoices SELECT * FROM billing.inv"})
    t.tool_result("run_sql", "copied 1204 rows")
    t.assistant("Copied the invoices.")
    t.outcome("ok")
    assert "IntegrityError" not in (offline_recap(t) or "")
