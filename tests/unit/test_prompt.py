"""Extraction and tidying of the model's answer, and the prompt itself."""

from __future__ import annotations

from jupyter_recap.pipeline.prompt import (
    INSTRUCTIONS,
    SYSTEM_PROMPT,
    extract_recap,
    tidy,
    user_message,
)


def test_both_tags() -> None:
    raw = "Sure!\n<recap>You are fixing the FK in invoices.ts. Next: repoint it.</recap>\nBye"
    assert extract_recap(raw) == "You are fixing the FK in invoices.ts. Next: repoint it."


def test_opening_tag_only_keeps_the_rest() -> None:
    assert extract_recap("<recap>You are migrating tables; next the") == (
        "You are migrating tables; next the"
    )


def test_no_tag_means_no_recap() -> None:
    assert extract_recap("The user seems to be migrating tables, so I should say...") is None
    assert extract_recap("") is None
    assert extract_recap("<recap>   </recap>") is None


def test_think_preamble_is_dropped() -> None:
    raw = "<think>They asked about <recap> tags earlier…</think><recap>Fix the FK.</recap>"
    assert extract_recap(raw) == "Fix the FK."


def test_unclosed_think_hides_everything_after_it() -> None:
    assert extract_recap("<think>maybe <recap>leak</recap>") is None


def test_markdown_and_whitespace_are_flattened() -> None:
    raw = "<recap>\n**Task**: fix `invoices.ts`.\n\n- Next: rerun   the tests.\n</recap>"
    assert extract_recap(raw) == "Task: fix invoices.ts. Next: rerun the tests."


def test_over_long_answer_is_cut_at_a_word_boundary() -> None:
    text = extract_recap("<recap>" + "word " * 200 + "</recap>")
    assert text is not None
    assert len(text) <= 400 and text.endswith("…")
    assert not text[:-1].endswith(" ")
    assert text[:-1].split(" ")[-1] == "word"


def test_tags_are_case_insensitive() -> None:
    assert extract_recap("<RECAP>Ok.</Recap>") == "Ok."


def test_tidy_keeps_short_text() -> None:
    assert tidy("  one   two ") == "one two"


def test_prompt_carries_the_rules_and_the_transcript() -> None:
    message = user_message("User: fix it")
    assert message.startswith("<transcript>\nUser: fix it\n</transcript>")
    for rule in ("One to three", "next step", "errored", "language", "<recap>"):
        assert rule in message
    assert INSTRUCTIONS in message and SYSTEM_PROMPT
