"""The offline engine on realistic transcripts: task first, how it ended, then the next step."""

from __future__ import annotations

import jupyter_recap as jr
from jupyter_recap.pipeline.offline import offline_recap


def test_next_step_from_the_last_reply() -> None:
    t = jr.Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?")
    t.tool_call("read_file", {"path": "invoices.ts"})
    t.tool_result("read_file", "...")
    t.assistant(
        "The FK on line 142 still references customers_v1.\n"
        "Next: point invoices.customer_id at customers_v2 and rerun the migration."
    )
    t.outcome("ok")
    text = offline_recap(t)
    assert text == (
        "Task: Why does invoices.ts fail its FK constraint after the v2 migration? "
        "Next: point invoices.customer_id at customers_v2 and rerun the migration."
    )


def test_errored_turn_is_named_and_a_step_suggested() -> None:
    t = jr.Transcript()
    t.user("train the churn model on the March data")
    t.outcome("errored", "RateLimitError: 429 Too Many Requests")
    text = offline_recap(t)
    assert text is not None
    assert "errored: RateLimitError: 429 Too Many Requests." in text
    assert text.endswith("Next: look at that error, then rerun the agent cell.")


def test_aborted_turn() -> None:
    t = jr.Transcript()
    t.user("scrape the pricing pages")
    t.assistant("Fetched 12 of 40 pages")
    t.outcome("aborted")
    assert "interrupted before it finished" in (offline_recap(t) or "")


def test_failing_cell_after_the_agent_becomes_the_next_step() -> None:
    t = jr.Transcript()
    t.user("write the merge for rates")
    t.assistant("df = df.merge(rates, on='region')")
    t.outcome("ok")
    t.code("df = df.merge(rates, on='region')", error="KeyError: 'region'", count=7)
    text = offline_recap(t) or ""
    assert "In[7] failed with KeyError: 'region'." in text
    assert "Next: fix In[7] (df = df.merge(rates, on='region')) and run it again." in text


def test_summary_and_latest_ask() -> None:
    t = jr.Transcript()
    t.user("set up the project")
    t.summary("Goal: migrate billing tables to the v2 schema; 4 of 7 done")
    t.user("now the invoices table")
    text = offline_recap(t) or ""
    assert text.startswith("Task: migrate billing tables to the v2 schema; 4 of 7 done.")


def test_latest_ask_when_it_differs_from_the_first() -> None:
    t = jr.Transcript()
    t.user("build the ETL for the sales data")
    t.user("add a test for the dedupe step")
    assert offline_recap(t) == (
        "Task: build the ETL for the sales data. Latest ask: add a test for the dedupe step."
    )


def test_a_stated_next_step_replaces_the_latest_ask() -> None:
    t = jr.Transcript()
    t.user("Build the ETL for the sales data. It must run nightly and load into the warehouse.")
    t.user("add a test for the dedupe step")
    t.assistant("Added test_dedupe. Next: run it against the March extract.")
    assert offline_recap(t) == (
        "Task: Build the ETL for the sales data. Next: run it against the March extract."
    )


def test_open_task_is_the_fallback_next_step() -> None:
    t = jr.Transcript()
    t.user("refactor the loaders")
    text = offline_recap(t, open_task="split loaders.py into one module per source")
    assert text is not None and text.endswith("Next: split loaders.py into one module per source.")


def test_nothing_to_say() -> None:
    assert offline_recap(jr.Transcript()) is None


def test_at_most_three_sentences_and_bounded() -> None:
    t = jr.Transcript()
    t.user("a " * 500)
    t.user("b " * 500)
    t.assistant("Next: " + "c " * 500)
    t.outcome("errored", "E: " + "d " * 500)
    text = offline_recap(t) or ""
    assert len(text) <= 400


def test_secrets_never_appear() -> None:
    t = jr.Transcript()
    t.user("call the API with sk-proj-abcdefghijklmnopqrstuvwxyz123456")
    assert "abcdefghijkl" not in (offline_recap(t) or "")
