"""The two-tier context: what reaches the model, its caps, redaction and the fingerprint."""

from __future__ import annotations

import jupyter_recap as jr
from jupyter_recap.pipeline.context import build_context, fingerprint


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
    # the four prompts before the latest, not older ones, and no old replies
    assert "step 5: migrate table 5" in framing and "step 2: migrate table 2" in framing
    assert "step 1: migrate table 1" not in framing
    assert "table 5 migrated" not in text
    lines = recent.strip().splitlines()
    assert lines[0] == "User: why does invoices.ts fail its FK constraint?"
    assert lines[1] == "Tool call: read_file(path='invoices.ts')"
    assert lines[2].startswith("Tool result (read_file): export const invoices")
    assert lines[4] == "In[12]: df.merge(rates) (+1 lines) → error: KeyError: 'region'"


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
    assert "earlier steps of this turn omitted" in text
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
