"""The session state: every generated session's truth recovered, the issue's cases by hand,
``%recap state`` in a real shell and ``jupyter recap --state`` as a real process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import strength
from cliutil import offline_env, one_line_error, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiongen import ACCEPTANCES, CORRECTIONS, GeneratedSession, generate

from jupyter_recap.record import phrases
from jupyter_recap.record.statefold import MAX_CONSTRAINTS, MAX_FAILURES, StateFolder, fold
from jupyter_recap.record.statetext import render_state
from jupyter_recap.record.toolcalls import error_text, target_of
from jupyter_recap.record.transcript import Entry, Transcript

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "notebooks" / "demo_agent_session.ipynb"
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


# -- generated sessions ----------------------------------------------------------------------


def _check(generated: GeneratedSession) -> None:
    state = fold(generated.entries)
    truth = generated.truth
    where = f"seed {generated.seed}, rounds {truth.rounds}"
    task = state.task
    assert task is not None and truth.task_fact in task.text, where
    assert state.first_ask is not None and truth.first_task_fact in state.first_ask.text, where
    accepted = [d for d in state.decisions if truth.decision_fact in d.text]
    assert accepted, (where, state.decisions)
    assert accepted[-1].accepted_by == truth.accepted_by.strip(), where
    for phrase in truth.constraints:
        assert any(phrase in rule for rule in state.constraints), (where, state.constraints)
    open_keys = [failure.key for failure in state.open_failures]
    for key in truth.open_failures:
        assert key in open_keys, (where, open_keys)
    for key in (*truth.fixed, *truth.superseded):
        assert key not in open_keys, (where, key)
    turns = [failure for failure in state.open_failures if failure.kind == "turn"]
    if truth.turn_error is not None:
        assert any(truth.turn_error in failure.error for failure in turns), (where, turns)
    else:
        assert turns == [], where
    assert state.next_step is not None and truth.next_fact in state.next_step, where
    assert truth.dropped_next_fact not in state.next_step, where
    if truth.approval is not None:
        assert state.approval == truth.approval and state.running is None, where
    else:
        assert state.approval is None and state.running is None, where


@settings(max_examples=strength.examples(200))
@given(SEEDS)
def test_every_generated_sessions_truth_is_recovered(seed: int) -> None:
    _check(generate(seed))


@given(SEEDS, st.data())
def test_incremental_folding_equals_folding_at_once(seed: int, data: st.DataObject) -> None:
    entries = generate(seed).entries
    cut = data.draw(st.integers(min_value=0, max_value=len(entries)), label="cut")
    folder = StateFolder()
    for entry in entries[:cut]:
        folder.add(entry)
    assert folder.state == fold(entries[:cut])  # a snapshot mid-way is the prefix's state
    for entry in entries[cut:]:
        folder.add(entry)
    assert folder.state == fold(entries)
    assert render_state(folder.state, env={}) == render_state(fold(entries), env={})


@settings(max_examples=strength.examples(50))
@given(SEEDS, st.data())
def test_a_transcript_keeps_its_state_live(seed: int, data: st.DataObject) -> None:
    """The state a recap reads is the transcript's own, folded as entries were appended:
    the same as folding them all, through a restore (a resumed session) and a clear."""
    entries = generate(seed).entries
    cut = data.draw(st.integers(min_value=0, max_value=len(entries)), label="cut")
    transcript = Transcript()
    for entry in entries[:cut]:
        transcript.append(entry)
    assert transcript.state == fold(entries[:cut])
    transcript.restore(entries)
    assert transcript.state == fold(entries)
    transcript.clear()
    assert transcript.state.empty and transcript.state.entries == 0


def test_the_generator_covers_its_pools() -> None:
    """The pools the issue asks for are there and used: 6+ acceptances in several languages,
    4+ corrections, constraints in English and German, approvals and both errored-turn ends."""
    sessions = [generate(seed) for seed in range(200)]
    assert len({s.truth.accepted_by for s in sessions} & set(ACCEPTANCES)) >= 6
    corrections = {
        opening
        for s in sessions
        for opening in CORRECTIONS
        if any(e.text.startswith(opening[:-2]) for e in s.entries if e.kind == "user")
    }
    assert len(corrections) >= 4
    phrases_used = {p for s in sessions for p in s.truth.constraints}
    assert {"Produktionsdatenbank", "customers muss"} & phrases_used
    assert {"prod database", "public API"} & phrases_used
    assert any(s.truth.approval for s in sessions) and not all(s.truth.approval for s in sessions)
    assert any(s.truth.turn_error for s in sessions) and any(
        s.truth.retried_turn_error for s in sessions
    )
    depths = {s.truth.rounds["left"] for s in sessions}
    assert len(depths) >= 8  # the failure left behind sits at many depths
    for s in sessions:
        rounds = sum(e.kind == "user" for e in s.entries)
        assert s.truth.rounds["left"] <= rounds - 4  # several rounds back


def test_a_state_stays_bounded_in_a_long_session() -> None:
    folder = StateFolder()
    for n in range(3000):
        folder.add(Entry("user", f"Step {n}: never touch table_{n}."))
        folder.add(Entry("tool_call", f"path='f{n}.py'", name="write_file"))
        folder.add(Entry("tool_result", "", name="write_file", error=f"OSError: disk {n}"))
    state = folder.state
    assert len(state.constraints) == MAX_CONSTRAINTS
    assert "table_0" in state.constraints[0]  # the first rules stay, the newest join them
    assert "table_2999" in state.constraints[-1]
    assert len(state.open_failures) == MAX_FAILURES
    assert state.open_failures[-1].key == ("write_file", "f2999.py")


# -- the cases -----------------------------------------------------------------------


def test_a_proposal_accepted_in_two_words_is_the_decision_not_the_task() -> None:
    t = Transcript()
    t.user("Speed up the nightly orders export; keep the orders schema unchanged.")
    t.assistant(
        "The export spends 80% of its time writing CSV. I suggest we switch orders from CSV to "
        "Parquet with zstd compression, which also halves the storage. Shall I?"
    )
    t.outcome("ok")
    t.user("Agreed, do it.")
    for n in range(30):
        t.tool_call("edit_file", {"path": f"export/step_{n % 5}.py", "old": "csv", "new": "pq"})
        t.tool_result("edit_file", "1 replacement")
    t.assistant("All writers use Parquet now.")
    t.outcome("ok")
    t.user("Now do the same for the events table.")
    state = fold(t.entries)
    assert state.task is not None and state.task.text.startswith("Speed up the nightly")
    assert state.latest_ask is not None and state.latest_ask.text.startswith("Now do the same")
    (decision,) = state.decisions
    assert "Parquet with zstd compression" in decision.text
    assert decision.accepted_by == "Agreed, do it."
    assert state.constraints == (
        "Speed up the nightly orders export; keep the orders schema unchanged.",
    )
    assert [(a.target, a.changes) for a in state.artifacts][:1] == [("export/step_0.py", 6)]
    text = render_state(state, env={})
    assert "Parquet with zstd compression" in text and "(accepted: 'Agreed, do it.')" in text
    assert "Changed: export/step_0.py (6 changes)" in text


def test_a_failure_left_behind_stays_open_while_work_goes_on() -> None:
    t = Transcript()
    t.user("Move the invoices tables to the v2 schema and make the nightly job green.", cell_id="a")
    t.tool_call(
        "run_sql", {"query": "INSERT INTO billing_v2.invoices SELECT * FROM billing.invoices"}
    )
    t.tool_result(
        "run_sql",
        error='IntegrityError: insert or update on table "invoices" violates foreign key '
        'constraint "invoices_customer_id_fkey"',
        cell_id="a",
    )
    t.assistant("Good progress: the invoices copy is under way.")
    t.outcome("ok", cell_id="a", count=7)
    t.user("Continue with the views", cell_id="b")
    for n in range(12):
        t.tool_call("run_sql", {"query": f"CREATE VIEW billing_v2.invoices_view_{n} AS SELECT 1"})
        t.tool_result("run_sql", "CREATE VIEW")
    t.assistant("The invoices views are rebuilt on v2.")
    t.outcome("ok", cell_id="b", count=8)
    state = fold(t.entries)
    (failure,) = state.open_failures
    assert failure.key == ("run_sql", "billing_v2.invoices")
    assert failure.error.startswith("IntegrityError: insert or update")
    assert failure.count == 7  # the agent cell's In[n], known once its turn ended
    text = render_state(state, env={})
    assert "- run_sql (billing_v2.invoices) in In[7]: IntegrityError: insert or update" in text


def test_a_smolagents_failure_is_read_from_its_structure() -> None:
    """The error line is the exception, not the text after the first ": " (which is inside
    the arguments), and a reply that claims the refund closes nothing."""
    wording = (
        "Error executing tool 'issue_refund' with arguments {'order_id': 'A-1001', 'amount': "
        "398}: RuntimeError: refund service unavailable"
    )
    t = Transcript()
    t.user("Ticket 5522: refund order A-1001 (two monitors, 398 EUR).")
    t.tool_call("lookup_order", {"order_id": "A-1001"})
    t.tool_result("lookup_order", "2 x monitor, 398 EUR")
    t.tool_call("issue_refund", {"order_id": "A-1001", "amount": 398})
    t.tool_result("issue_refund", "", error=wording)
    t.assistant("I looked up order A-1001 and took care of the refund. Next: close the ticket.")
    t.outcome("ok")
    state = fold(t.entries)
    (failure,) = state.open_failures
    assert failure.key == ("issue_refund", "A-1001")
    assert failure.error == "RuntimeError: refund service unavailable"
    assert state.next_step == "close the ticket"
    assert "issue_refund (A-1001): RuntimeError: refund service unavailable" in render_state(
        state, env={}
    )


def test_a_changed_ask_supersedes_its_failure_and_its_own_outcome_counts() -> None:
    t = Transcript()
    t.user("Ticket 5522: refund order A-1001 (two monitors, 398 EUR).")
    t.tool_call("issue_refund", {"order_id": "A-1001", "amount": 398})
    t.tool_result("issue_refund", error="RuntimeError: refund service unavailable")
    t.assistant("The refund service is down.")
    t.outcome("ok")
    t.user("Wait, only one monitor came back. Refund only one monitor, 199 EUR.")
    t.tool_call("issue_refund", {"order_id": "B-7", "amount": 199})  # another target: no close
    t.tool_result("issue_refund", "refunded 199.0 EUR")
    t.assistant("Refunded 199.0 EUR.")
    t.outcome("ok")
    t.user("Send the customer the receipt.")
    t.outcome("errored", "ConnectionError: SMTP server unreachable")
    state = fold(t.entries)
    assert state.task is not None and "199 EUR" in state.task.text
    assert [f.key for f in state.superseded] == [("issue_refund", "A-1001")]
    assert [f.kind for f in state.open_failures] == ["turn"]  # only the later errored turn
    assert "refund service unavailable" not in render_state(state, env={})


def test_a_failure_fixed_by_a_retry_is_never_open() -> None:
    t = Transcript()
    t.user("Load the cohort.")
    t.tool_call("read_file", {"path": "data/cohort.parquet"})
    t.tool_result("read_file", error="FileNotFoundError: data/cohort.parquet")
    t.tool_call("read_file", {"path": "data/cohort.parquet"})
    t.tool_result("read_file", "1200 rows")
    t.code("df.describe()", error="NameError: name 'df' is not defined", count=3, cell_id="c")
    t.code("df = load()\ndf.describe()", count=4, cell_id="c")
    assert fold(t.entries).open_failures == ()


def test_an_errored_turn_retried_closes_and_one_left_stays_open() -> None:
    t = Transcript()
    t.user("Plot revenue by month.", cell_id="x")
    t.outcome("errored", "RateLimitError: 429 Too Many Requests", cell_id="x", count=2)
    t.user("Try again.", cell_id="y")
    t.outcome("ok", cell_id="y", count=3)
    assert fold(t.entries).open_failures == ()
    t.user("Now plot costs.", cell_id="z")
    t.outcome("errored", "APITimeoutError: Request timed out.", cell_id="z", count=4)
    t.user("Show the totals.", cell_id="w")
    t.outcome("ok", cell_id="w", count=5)
    (failure,) = fold(t.entries).open_failures
    assert failure.kind == "turn" and failure.count == 4
    assert "Now plot costs." in failure.label and failure.error.startswith("APITimeoutError")


def test_the_person_says_it_is_fixed() -> None:
    t = Transcript()
    t.user("Sync the CRM.")
    t.tool_call("update_crm", {"ticket_id": "T-1"})
    t.tool_result("update_crm", error="ConnectionError: CRM unreachable")
    t.tool_call("send_mail", {"to": "x"})
    t.tool_result("send_mail", error="SMTPError: relay denied")
    t.user("I fixed the update_crm credentials, moving on.")
    assert [f.key[0] for f in fold(t.entries).open_failures] == ["send_mail"]
    t.user("Ignore that one.")
    assert fold(t.entries).open_failures == ()


def test_waiting_for_approval_and_a_running_turn() -> None:
    t = Transcript()
    t.user("Clean the build folder.")
    assert fold(t.entries).running is not None  # a prompt without an outcome yet
    t.tool_call("Bash", "rm -rf build/")
    t.event("Claude is waiting for your approval: rm -rf build/")
    state = fold(t.entries)
    assert state.approval == "rm -rf build/" and state.running is None
    assert "Waiting for your approval: rm -rf build/" in render_state(state, env={})
    t.tool_result("Bash", "")
    t.outcome("ok")
    later = fold(t.entries)
    assert later.approval is None and later.running is None


def test_an_unanswered_question_waits_and_a_stated_decision_counts() -> None:
    t = Transcript()
    t.user("Let's use DuckDB for the joins. Build the monthly report.")
    t.assistant("Which months should the report cover?")
    state = fold(t.entries)
    assert [d.text for d in state.decisions] == ["Let's use DuckDB for the joins."]
    assert state.decisions[0].accepted_by is None
    assert state.question == "Which months should the report cover?"


def test_next_is_dropped_by_a_new_ask_or_once_done() -> None:
    t = Transcript()
    t.user("Refund A-1.")
    t.assistant("Refunded. Next: close the ticket.")
    assert fold(t.entries).next_step == "close the ticket"
    t.tool_call("close_ticket", {"ticket_id": "5522"})
    t.tool_result("close_ticket", "closed")
    assert fold(t.entries).next_step is None
    t.assistant("Als Nächstes: den Kunden informieren.")
    assert fold(t.entries).next_step == "den Kunden informieren"
    t.user("Show me the open tickets.")
    assert fold(t.entries).next_step is None


def test_secrets_are_redacted_when_rendered() -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    t = Transcript()
    t.user(f"Call the API with {key} and never log it.")
    t.tool_call("http_get", {"url": "https://api.example/v1"})
    t.tool_result("http_get", error=f"AuthenticationError: bad key {key}")
    text = render_state(fold(t.entries), env={})
    assert key not in text and "[redacted]" in text


@pytest.mark.parametrize(
    ("text", "accepts"),
    [
        ("Agreed, do it.", True),
        ("yes", True),
        ("Go for it!", True),
        ("Ja, mach das.", True),
        ("Oui, vas-y.", True),
        ("Sí, adelante.", True),
        ("好的", True),
        ("はい、お願いします。", True),
        ("Yes, but use snappy instead.", False),
        ("Now do the same for the events table.", False),
    ],
)
def test_acceptances(text: str, accepts: bool) -> None:
    assert phrases.is_acceptance(text) is accepts


@pytest.mark.parametrize(
    "text",
    [
        "Never write to prod.",
        "Keep the public API unchanged.",
        "Stay under 200 EUR.",
        "Max 3 retries per job.",
        "Don't touch the legacy tables.",
        "Schreib niemals in die Produktionsdatenbank.",
        "Die Tabelle customers muss unverändert bleiben.",
        "Ne touche jamais au schéma legacy.",
    ],
)
def test_constraints_in_several_languages(text: str) -> None:
    assert phrases.rules(f"Build the report. {text}") == [text]


def test_reading_targets_and_errors() -> None:
    assert target_of("order_id='A-1001', amount=398") == ("order_id", "A-1001")
    assert target_of('{"path": "src/a.py", "content": "x"}') == ("path", "src/a.py")
    assert target_of("query='UPDATE billing_v2.payments SET x = 1'") == (
        "query",
        "billing_v2.payments",
    )
    assert target_of("free text") == ("", "")
    traceback = "Traceback (most recent call last):\n  File 'x'\nKeyError: 'region'"
    assert error_text(traceback) == "KeyError: 'region'"
    assert error_text("failed") == "failed"


# -- the front doors -------------------------------------------------------------------------


def test_recap_state_in_a_real_shell(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from agentmagic import install

    import jupyter_recap as jr

    shell.run_line_magic("load_ext", "jupyter_recap")
    agent = install(shell)
    agent.script.append(lambda prompt: print("I suggest we cache the lookups in Redis. Shall I?"))
    shell.run_cell(
        "%%agent\nSpeed up the lookups. Never change the public API.", store_history=True
    )
    agent.script.append(lambda prompt: print("Done. Next: benchmark the cache."))
    shell.run_cell("%%agent\nAgreed, do it.", store_history=True)
    shell.run_cell("1/0", store_history=True)
    jr.current().tool_call("write_file", {"path": "cache.py"})
    jr.current().tool_result("write_file", "ok")
    capsys.readouterr()
    shell.run_line_magic("recap", "state")
    out = capsys.readouterr().out
    assert out.startswith("Task: Speed up the lookups. Never change the public API.\n")
    assert "- I suggest we cache the lookups in Redis. (accepted: 'Agreed, do it.')" in out
    assert "Constraints:\n- Never change the public API." in out
    assert "- In[3]: ZeroDivisionError: division by zero" in out
    assert "Changed: cache.py (1 change)" in out and out.rstrip().endswith(
        "Next: benchmark the cache"
    )


def test_recap_state_before_anything_happened(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_line_magic("load_ext", "jupyter_recap")
    capsys.readouterr()
    shell.run_line_magic("recap", "state")
    assert capsys.readouterr().out.startswith("No agent session recorded yet")


def test_cli_state_of_a_notebook(tmp_path: Path) -> None:
    result = run_cli("--state", DEMO, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Task: We're migrating our billing tables")
    assert "Open failures:\n- In[4]: CalledProcessError" in out
    assert "Next: drop the deleted_at filter in 20240610_customers.ts" in out


def test_cli_state_of_a_stored_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_recap.stores.sessions import SessionWriter

    home = tmp_path / "store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(home))
    t = Transcript()
    writer = SessionWriter(t, notebook=None)
    t.user("Refund order A-1001. Never refund more than 400 EUR.", model="openai:gpt-4o-mini")
    t.tool_call("issue_refund", {"order_id": "A-1001", "amount": 398})
    t.tool_result(
        "issue_refund",
        error="Error executing tool 'issue_refund' with arguments {'order_id': 'A-1001', "
        "'amount': 398}: RuntimeError: refund service unavailable",
    )
    t.assistant("I took care of the refund. Next: close the ticket.")
    t.outcome("ok")
    writer.close()
    time.sleep(0.01)
    env = offline_env(JUPYTER_RECAP_HOME=str(home))
    result = run_cli("--state", writer.id[:8], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Task: Refund order A-1001. Never refund more than 400 EUR.",
        "Constraints:",
        "- Never refund more than 400 EUR.",
        "Open failures:",
        "- issue_refund (A-1001): RuntimeError: refund service unavailable",
        "Next: close the ticket",
    ]
    missing = run_cli("--state", "no_agent.ipynb", cwd=tmp_path, env=env)
    assert one_line_error(missing, 2) == "jupyter recap: no such file: no_agent.ipynb"
    empty = ROOT / "tests" / "data" / "no_agent_cells.ipynb"
    assert "no agent cells in" in one_line_error(
        run_cli("--state", empty, cwd=tmp_path, env=env), 1
    )
    bad = run_cli("--state", "--sessions", cwd=tmp_path, env=env)
    assert "--state goes with" in one_line_error(bad, 2)
