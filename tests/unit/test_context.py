"""The two-tier context: what reaches the model, its caps, redaction and the fingerprint."""

from __future__ import annotations

import jupyter_recap as jr
from jupyter_recap.pipeline.context import (
    EARLIER_PROMPT_CHARS,
    EARLIER_PROMPTS,
    EARLIER_TURNS_CHARS,
    build_context,
    fingerprint,
)


def session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("Migrate the billing tables to the v2 schema. " + "Background detail. " * 60)
    t.assistant("Started with customers.ts.")
    for n in range(6):
        t.user(f"step {n}: migrate table {n}")
        t.assistant(f"table {n} migrated")
    t.user("why does invoices.ts fail its FK constraint?")
    t.tool_call("read_file", {"path": "invoices.ts"})
    t.tool_result("read_file", "export const invoices = table(...)")
    t.assistant("The FK on line 142 points at the old customers table. Next: repoint it.")
    t.code("df.merge(rates)\nprint(df)", error="KeyError: 'region'", count=12)
    return t


def test_tiers_and_order() -> None:
    text = build_context(session())
    framing, recent = text.split("Recent activity (oldest first)")
    assert framing.startswith("Task framing")
    assert "Original task: Migrate the billing tables" in framing
    lines = recent.strip().splitlines()
    # The latest prompt says what to do: the recent detail is its turn, and the earlier
    # prompts are framing, not replayed steps.
    assert "Earlier prompts:\n- step 0: migrate table 0" in framing
    assert "- step 5: migrate table 5" in framing and "table 5 migrated" not in recent
    latest = lines.index("User: why does invoices.ts fail its FK constraint?")
    assert latest == 0
    assert lines[latest + 1] == "Tool call: read_file(path='invoices.ts')"
    assert lines[latest + 2].startswith("Tool result (read_file): export const invoices")
    assert lines[-1] == "In[12]: df.merge(rates) (+1 lines) → error: KeyError: 'region'"


def test_framing_lists_the_earlier_prompts_the_recent_detail_cannot_hold() -> None:
    t = session()
    for n in range(40):
        t.tool_call("read_file", {"path": f"table_{n}.ts"})
        t.tool_result("read_file", "y" * 250)
    framing, recent = build_context(t, max_chars=6000).split("Recent activity (oldest first)")
    # every prompt before the latest, and no old replies
    assert all(f"- step {n}: migrate table {n}\n" in framing for n in range(6))
    assert "table 5 migrated" not in recent


def test_framing_caps() -> None:
    framing = build_context(session()).split("\n\n")[0]
    original = next(line for line in framing.splitlines() if line.startswith("Original task"))
    assert len(original) <= len("Original task: ") + 600
    assert original.endswith("…")


def test_single_prompt_is_not_repeated_in_framing() -> None:
    t = jr.Transcript()
    t.user("fix the FK")
    t.assistant("on it")
    text = build_context(t)
    assert text.count("fix the FK") == 1
    assert "Task framing" not in text


def test_total_cap_keeps_prompt_and_newest_steps() -> None:
    t = jr.Transcript()
    t.user("run the long agent loop")
    for n in range(2000):
        t.tool_call("step", {"n": n})
        t.tool_result("step", f"result {n} " + "x" * 200)
    text = build_context(t, max_chars=4000)
    assert len(text) <= 4000
    assert "User: run the long agent loop" in text
    assert "… (earlier steps omitted)" in text
    assert "result 1999" in text and "result 10 " not in text


def test_never_starts_on_a_dangling_tool_result() -> None:
    t = jr.Transcript()
    t.user("go")
    for n in range(300):
        t.tool_call("fetch", {"n": n})
        t.tool_result("fetch", "r" * (150 + n % 7))
    recent = build_context(t, max_chars=3000).split("omitted)\n", 1)[1]
    assert recent.splitlines()[0].startswith("Tool call: ")


def test_secrets_are_redacted() -> None:
    t = jr.Transcript()
    t.user("use key sk-proj-abcdefghijklmnopqrstuvwxyz123456 and call the API")
    t.tool_call("http", {"headers": "Authorization: Bearer abc.def.ghijklmnopqrstu"})
    t.assistant("export ANTHROPIC_API_KEY=sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA done")
    t.code("token = 'ghp_0123456789abcdefghijABCDEFGHIJ'")
    text = build_context(t, env={"MY_GATEWAY_TOKEN": "hunter2-but-longer"})
    assert "sk-proj-abc" not in text
    assert "abc.def.ghijklmnopqrstu" not in text
    assert "sk-ant-api03" not in text
    assert "ghp_0123" not in text
    assert text.count("[redacted]") >= 4


def test_environment_secret_values_are_redacted() -> None:
    t = jr.Transcript()
    t.user("the gateway password is hunter2-but-longer, use it")
    text = build_context(t, env={"MY_GATEWAY_TOKEN": "hunter2-but-longer"})
    assert "hunter2" not in text


def test_hidden_reasoning_never_reaches_the_model() -> None:
    t = jr.Transcript()
    t.user("fix it")
    t.assistant("<think>the user is probably tired</think>Fixed line 3.")
    text = build_context(t)
    assert "tired" not in text and "Fixed line 3." in text


def test_outcomes_are_spelled_out() -> None:
    t = jr.Transcript()
    t.user("migrate")
    t.outcome("errored", "ValueError: bad schema")
    assert "Turn errored: ValueError: bad schema" in build_context(t)
    t.user("again")
    t.outcome("aborted")
    assert "Turn aborted" in build_context(t)


def test_fingerprint_ignores_metadata_and_recaps_but_not_activity() -> None:
    t = session()
    before = fingerprint(build_context(t))
    t.meta("autosave at 12:00")
    t.recap("You were fixing the FK.", model="offline")
    assert fingerprint(build_context(t)) == before
    t.assistant("Repointed the FK.")
    assert fingerprint(build_context(t)) != before


def test_fingerprint_is_stable_across_transcripts_with_equal_content() -> None:
    assert fingerprint(build_context(session())) == fingerprint(build_context(session()))


def test_empty_transcript_gives_empty_context() -> None:
    assert build_context(jr.Transcript()) == ""


def test_extras_share_a_small_budget() -> None:
    t = session()
    extras = ["Tasks: 2/5 done; in progress: repoint the FK"] + ["Note: " + "m" * 300] * 5
    framing = build_context(t, extras=extras).split("\n\n")[0]
    assert "Tasks: 2/5 done" in framing
    assert sum(len(line) for line in framing.splitlines() if line.startswith("Note")) <= 500


def test_restore_rebuilds_the_indexes_without_telling_listeners() -> None:
    stored = session()
    heard: list[str] = []
    t = jr.Transcript()
    t.subscribe(lambda _, entry: heard.append(entry.kind))
    t.restore(stored.entries)
    assert heard == []
    assert build_context(t) == build_context(stored)
    assert (t.prompt_count, t.completed_turns) == (stored.prompt_count, stored.completed_turns)


def test_listeners_hear_only_their_kinds_until_they_unsubscribe() -> None:
    t = jr.Transcript()
    turns: list[str] = []
    everything: list[str] = []
    stop_turns = t.subscribe(lambda _, e: turns.append(e.kind), kinds=("user", "outcome"))
    t.subscribe(lambda _, e: everything.append(e.kind))
    with t.turn("fix the loader"):
        t.tool_call("read", "loader.py")
        t.assistant("done")
    t.code("x = 1")
    stop_turns()
    t.user("and the tests")
    assert turns == ["user", "outcome"]
    assert everything == ["user", "tool_call", "assistant", "outcome", "code", "user"]


def test_a_short_follow_up_comes_with_the_failure_it_means() -> None:
    t = jr.Transcript()
    t.user("load sales.parquet and plot revenue by region")
    t.tool_call("run_python", {"code": "pd.read_parquet('sales.parquet')"})
    t.tool_result("run_python", "ArrowInvalid: could not open sales.parquet", error=True)
    t.assistant("Reading the file failed: the parquet footer is corrupt.")
    t.outcome("ok")
    t.code("df = pd.read_parquet('sales.parquet')", error="ArrowInvalid: footer", count=4)
    t.user("It failed, see above.")
    lines = build_context(t).split("Recent activity (oldest first)\n")[1].splitlines()
    # The turn before the follow-up is there, whole, oldest first, ahead of the follow-up.
    assert lines[0] == "User: load sales.parquet and plot revenue by region"
    assert "Tool error (run_python): ArrowInvalid: could not open sales.parquet" in lines
    assert lines[-2] == "In[4]: df = pd.read_parquet('sales.parquet') → error: ArrowInvalid: footer"
    assert lines[-1] == "User: It failed, see above."


def test_a_follow_up_that_points_back_reaches_only_the_turn_it_means() -> None:
    t = jr.Transcript()
    for n in range(30):
        t.user(f"turn {n}: clean column c{n}")
        t.assistant(f"cleaned c{n} " + "x" * 150)
        t.outcome("ok")
    t.user("and now?")
    text = build_context(t, max_chars=12000)
    recent = text.split("Recent activity (oldest first)\n")[1].splitlines()
    # "and now?" means the turn before it; that turn says what to do, so no further.
    assert recent == [
        "User: turn 29: clean column c29",
        "Assistant: cleaned c29 " + "x" * 150,
        "User: and now?",
    ]
    assert "cleaned c28 " not in text


def test_a_run_of_follow_ups_that_point_back_reaches_two_turns_at_most() -> None:
    t = jr.Transcript()
    t.user("clean the orders table and write it to orders_clean.parquet")
    for prompt in ("continue", "continue", "and now?"):
        t.assistant("x" * 100)
        t.outcome("ok")
        t.user(prompt)
    recent = build_context(t).split("Recent activity (oldest first)\n")[1].splitlines()
    assert [line for line in recent if line.startswith("User: ")] == [
        "User: continue",
        "User: continue",
        "User: and now?",
    ]
    assert recent[0] == "… (earlier steps omitted)" or recent[0] == "User: continue"


def test_earlier_turns_have_a_small_room_of_their_own() -> None:
    t = jr.Transcript()
    t.user("scan every module for open() without an encoding")
    for n in range(100):
        t.tool_call("read_file", {"path": f"mod{n}.py"})
        t.tool_result("read_file", "def f(path):\n    with open(path) as f: ..." + "y" * 100)
    t.assistant("Found 12 calls without an encoding.")
    t.outcome("ok")
    t.user("continue")
    t.assistant("Fixing them now.")
    text = build_context(t, max_chars=12000)
    recent = text.split("Recent activity (oldest first)\n")[1]
    # The turn before holds 100 tool results; the follow-up needs how it ended, not all of it.
    earlier = recent.split("User: continue")[0]
    assert len(earlier) <= EARLIER_TURNS_CHARS + 200
    assert "Found 12 calls without an encoding." in earlier and "mod99.py" in earlier
    assert "mod10.py" not in text


def test_an_unresolved_failure_outlives_later_successes() -> None:
    t = jr.Transcript()
    t.user("join the invoices to the customers")
    t.code("inv = inv.merge(cust, on='cid')", error="KeyError: 'cid'", count=3, cell_id="c3")
    t.code("print(len(inv))", count=4, cell_id="c4")  # unrelated and fine: hides nothing
    t.code("plot(inv)", error="NameError: name 'plot' is not defined", count=5, cell_id="c5")
    t.code("inv.plot()", count=6, cell_id="c5")  # the same cell again, fixed
    t.user("now build the monthly report")
    for n in range(200):
        t.tool_call("query", {"month": n})
        t.tool_result("query", f"rows for month {n} " + "y" * 150)
    text = build_context(t, max_chars=4000)
    assert len(text) <= 4000
    framing, recent = text.split("Recent activity (oldest first)\n")
    # The state keeps it, however far back: the framing says it with its error.
    assert "Open failures:\n- In[3]: KeyError: 'cid'" in framing
    assert recent.splitlines()[0] == "User: now build the monthly report"
    assert "NameError" not in text  # fixed by a later run of the same cell
    assert "rows for month 199" in text


def test_an_unresolved_tool_error_is_framed_with_its_error() -> None:
    t = jr.Transcript()
    t.user("deploy the dashboard")
    t.tool_call("deploy", {"path": "dash/app.py"})
    t.tool_result("deploy", "", error="PermissionError: 403 Forbidden: token lacks scope")
    for n in range(120):
        t.tool_call("render", {"page": n})
        t.tool_result("render", "ok " + "z" * 120)
    text = build_context(t, max_chars=3000)
    framing, recent = text.split("Recent activity (oldest first)\n")
    assert (
        "Open failures:\n- deploy (dash/app.py): PermissionError: 403 Forbidden: token lacks scope"
        in framing
    )
    assert recent.splitlines()[:2] == ["User: deploy the dashboard", "… (earlier steps omitted)"]


def test_dropping_shown_prompts_never_makes_the_framing_outgrow_its_room() -> None:
    # Found by the context property: once the recent detail shows the earlier prompts, the
    # framing without them had room for a longer original task than the framing the recent
    # detail was sized for, and the backstop cut the newest line.
    t = jr.Transcript()
    for size in (600, 150, 0, 0, 750):
        t.user("0" * size)
    text = build_context(t, max_chars=1596)
    assert len(text) <= 1596
    assert text.splitlines()[-1] == "User: " + "0" * 750  # the latest prompt, whole


def test_a_constraint_stated_early_stays_in_the_framing() -> None:
    # The person's own prompts carry the constraints and decisions a later turn relies on; a
    # framing of the four newest earlier prompts lost one said twelve prompts back.
    t = jr.Transcript()
    t.user("Find the duplicate customer accounts and build a merge plan.")
    t.assistant("I'd add a normalised email column to prod.customers first.")
    t.user("No. Never write to prod; put every table in sandbox_crm. Stay on Python 3.9.")
    for n in range(12):
        t.user(f"step {n}: refine the matching rule {n}")
        t.tool_call("run_sql", {"sql": f"SELECT {n}"})
        t.tool_result("run_sql", "y" * 200)
    t.user("Now write the job that applies the plan.")
    framing = build_context(t).split("Recent activity (oldest first)")[0]
    assert "- No. Never write to prod; put every table in sandbox_crm. Stay on Python 3.9." in (
        framing
    )
    assert "- step 0: refine the matching rule 0" in framing


def test_earlier_prompts_are_bounded_and_the_oldest_leave_first() -> None:
    latest = "Now write the summary table for the report."
    t = jr.Transcript()
    t.user("the original task")
    for n in range(EARLIER_PROMPTS + 10):
        t.user(f"prompt {n:02d} " + "w" * 60)
    t.user(latest)
    framing = build_context(t).split("Recent activity (oldest first)")[0]
    listed = [line for line in framing.splitlines() if line.startswith("- prompt ")]
    # At most EARLIER_PROMPTS, the newest ones, in order.
    assert listed == [f"- prompt {n:02d} " + "w" * 60 for n in range(10, EARLIER_PROMPTS + 10)]
    # Long ones: the framing keeps to half the cap, and the oldest go first.
    t = jr.Transcript()
    t.user("the original task")
    for n in range(EARLIER_PROMPTS):
        t.user(f"prompt {n:02d} " + "w " * EARLIER_PROMPT_CHARS)
    t.user(latest)
    text = build_context(t, max_chars=6000)
    framing = text.split("Recent activity (oldest first)")[0]
    assert len(framing) <= 3000
    assert f"- prompt {EARLIER_PROMPTS - 1:02d} " in framing and "- prompt 00 " not in framing
    assert text.endswith("User: " + latest)


def test_each_kind_of_entry_reads_as_its_line_and_the_summary_frames_them() -> None:
    t = jr.Transcript()
    t.summary("Goal: migrate billing to v2. Done: customers, invoices.")
    t.user("now the payments table")
    t.code("import pandas as pd", count=1)
    t.event("kernel restarted")
    t.tool_call("read_file", {"path": "payments.ts"})
    t.tool_result("read_file", "", error="FileNotFoundError: payments.ts")
    t.assistant("payments.ts is missing.")
    framing, recent = build_context(t).split("\n\nRecent activity (oldest first)\n")
    assert framing == (
        "Task framing\nLatest summary: Goal: migrate billing to v2. Done: customers, invoices.\n"
        "Open failures:\n- read_file (payments.ts): FileNotFoundError: payments.ts"
    )
    assert recent.splitlines() == [
        "User: now the payments table",
        "In[1]: import pandas as pd → ok",
        "Event: kernel restarted",
        "Tool call: read_file(path='payments.ts')",
        "Tool error (read_file): FileNotFoundError: payments.ts",
        "Assistant: payments.ts is missing.",
    ]


def test_a_tool_error_is_keyed_by_its_own_call_not_the_one_before() -> None:
    t = jr.Transcript()
    t.user("deploy the dashboard")
    t.tool_call("deploy", {"path": "dash/app.py"})
    t.tool_call("notify", {"channel": "ops"})  # another tool, called in between
    t.tool_result("deploy", "", error="PermissionError: token lacks scope")
    for n in range(120):
        t.tool_call("render", {"page": n})
        t.tool_result("render", "ok " + "z" * 120)
    framing = build_context(t, max_chars=3000).split("Recent activity (oldest first)\n")[0]
    assert "- deploy (dash/app.py): PermissionError: token lacks scope" in framing
    assert "notify" not in framing
