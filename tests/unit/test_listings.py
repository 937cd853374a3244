"""The session listing formatter: ages, unique id prefixes, columns, notebook names."""

from __future__ import annotations

import pytest

from jupyter_recap.stores.listings import (
    EMPTY,
    SessionSummary,
    format_age,
    format_sessions,
    unique_prefixes,
)

NOW = 1_750_000_000.0
A = "0190a1b2-0000-7000-8000-000000000001"
B = "0190a1b2-0000-7000-8000-000000000002"
C = "0190c3d4-1111-7000-8000-000000000003"
D = "0190a1b2-9999-7000-8000-000000000004"


def summary(
    session_id: str,
    *,
    ago: float = 120,
    title: str = "fix the foreign key",
    turns: int = 2,
    notebook: str | None = "/home/me/projects/sales.ipynb",
    last_recap: str | None = None,
    progress: str | None = None,
    first_prompt: str = "",
) -> SessionSummary:
    return SessionSummary(
        session_id, NOW - ago, title, turns, notebook, last_recap, progress, first_prompt
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<1 min"),  # a clock that moved back
        (0, "<1 min"),
        (59.9, "<1 min"),
        (60, "1 min"),
        (180, "3 min"),
        (3599, "59 min"),
        (3600, "1 h"),
        (2 * 3600 + 1800, "2 h"),
        (86399, "23 h"),
        (86400, "1 d"),
        (5 * 86400 + 7000, "5 d"),
        (400 * 86400, "400 d"),
    ],
)
def test_ages(seconds: float, shown: str) -> None:
    assert format_age(seconds) == shown


def test_prefixes_are_8_characters_when_those_are_unique() -> None:
    assert unique_prefixes([A, C]) == {A: A[:8], C: C[:8]}
    assert unique_prefixes([A]) == {A: "0190a1b2"}
    assert unique_prefixes([]) == {}


def test_prefixes_grow_until_unique_and_never_end_on_a_dash() -> None:
    prefixes = unique_prefixes([A, B, C, D])
    assert prefixes[C] == "0190c3d4"
    assert prefixes[D] == "0190a1b2-9"  # not "0190a1b2-": the dash is skipped over
    assert prefixes[A] == A  # A and B differ in their last character only
    assert prefixes[B] == B
    for session_id, prefix in prefixes.items():
        others = [i for i in prefixes if i != session_id]
        assert session_id.startswith(prefix)
        assert not any(o.startswith(prefix) for o in others)


def test_prefixes_unique_among_known_ids_too() -> None:
    assert unique_prefixes([D]) == {D: "0190a1b2"}
    assert unique_prefixes([D], others=[A, B, C]) == {D: "0190a1b2-9"}


def test_one_line_per_session_in_the_given_order() -> None:
    summaries = [
        summary(C, ago=30, title="clean invoices", turns=1),
        summary(D, ago=3 * 3600, title="plot churn\nby cohort", turns=12),
        summary(A, ago=6 * 86400, title="", turns=3),
    ]
    lines = format_sessions(summaries, NOW).splitlines()
    assert lines == [
        "0190c3d4    <1 min  1 turn    clean invoices",  # padded to the widest prefix
        "0190a1b2-9     3 h  12 turns  plot churn by cohort",  # D shares 8 characters with A
        "0190a1b2-0     6 d  3 turns   (untitled)",
    ]
    assert "sales.ipynb" not in "\n".join(lines)  # one notebook: no need to name it


def test_notebook_names_when_the_listing_spans_notebooks() -> None:
    summaries = [
        summary(C, title="clean invoices", notebook="/home/me/a/invoices.ipynb"),
        summary(A, title="plot churn", notebook="/home/me/b/churn.ipynb"),
        summary(D, title="orphan", notebook=None),
    ]
    lines = format_sessions(summaries, NOW).splitlines()
    assert lines[0].endswith("clean invoices  [invoices.ipynb]")
    assert lines[1].endswith("plot churn      [churn.ipynb]")
    assert lines[2].endswith("orphan          [no notebook]")
    assert "/home/me" not in "\n".join(lines)


def test_show_notebook_can_be_forced_either_way() -> None:
    one = [summary(C)]
    assert format_sessions(one, NOW, show_notebook=True).endswith("  [sales.ipynb]")
    two = [summary(C, notebook="/x/a.ipynb"), summary(A, notebook="/x/b.ipynb")]
    assert "ipynb" not in format_sessions(two, NOW, show_notebook=False)


def test_known_ids_lengthen_the_prefixes() -> None:
    text = format_sessions([summary(D)], NOW, known_ids=[A, B, C, D])
    assert text.startswith("0190a1b2-9  ")


def test_no_sessions_is_one_clear_line() -> None:
    assert format_sessions([], NOW) == EMPTY
    assert "\n" not in EMPTY and "no sessions" in EMPTY.lower()
    assert format_sessions([], NOW, empty="No sessions for x.ipynb.") == "No sessions for x.ipynb."


def test_no_trailing_whitespace_or_control_characters() -> None:
    text = format_sessions([summary(C, title="a\tb\r\nc  "), summary(A, title="x")], NOW)
    for line in text.splitlines():
        assert line == line.rstrip()
    assert "a b c" in text and "\t" not in text and "\r" not in text


def test_the_last_recap_is_shown_under_its_session() -> None:
    from jupyter_recap.stores.listings import format_sessions as fmt

    told = "Task: migrate billing. Next: repoint the invoices FK."
    text = fmt([summary("0190aaaa-0000-7000-8000-000000000001", last_recap=told)], NOW)
    first, second = text.splitlines()
    assert "✦ " + told in second and told not in first


def test_the_last_recap_and_the_task_progress_follow_their_session() -> None:
    listing = format_sessions(
        [
            summary(
                "0193ab2c-1111-7000-8000-000000000001",
                last_recap="Task: fix the foreign key. Next: rerun the migration.",
                progress="tasks ########.... 2/3",
            ),
            summary("0193ab2c-2222-7000-8000-000000000002", title="plot churn"),
        ],
        NOW,
    )
    assert listing.splitlines() == [
        "0193ab2c-1  2 min  2 turns  fix the foreign key",
        "            ✦ Task: fix the foreign key. Next: rerun the migration.",
        "            tasks ########.... 2/3",
        "0193ab2c-2  2 min  2 turns  plot churn",
    ]


def test_the_first_prompt_is_shown_under_a_title_that_moved_on() -> None:
    asked = "I have orders.csv with columns id, customer_id, total; the FK fails"
    listing = format_sessions(
        [
            summary(
                "0193ab2c-1111-7000-8000-000000000001",
                title="Fixing the foreign key on orders",
                first_prompt=asked,
                last_recap="You were fixing the foreign key on orders. Next: rerun the migration.",
                progress="tasks ########.... 2/3",
            ),
            # a title that is still the first prompt (or says the same) is not repeated
            summary(
                "0193ab2c-2222-7000-8000-000000000002",
                title="plot churn",
                first_prompt="plot churn",
            ),
            summary(
                "0193ab2c-3333-7000-8000-000000000003",
                title="Plot churn by cohort",
                first_prompt="plot churn by cohort.",
            ),
        ],
        NOW,
    )
    assert listing.splitlines() == [
        "0193ab2c-1  2 min  2 turns  Fixing the foreign key on orders",
        "            asked: I have orders.csv with columns id, customer_id, total; the FK fails",
        "            ✦ You were fixing the foreign key on orders. Next: rerun the migration.",
        "            tasks ########.... 2/3",
        "0193ab2c-2  2 min  2 turns  plot churn",
        "0193ab2c-3  2 min  2 turns  Plot churn by cohort",
    ]


def test_the_first_prompt_is_made_inert_and_kept_on_one_line() -> None:
    listing = format_sessions(
        [summary(C, title="Cleaning invoices", first_prompt="clean\n\x1b[2Jthe\tinvoices")], NOW
    )
    title, asked = listing.splitlines()
    assert title.endswith("Cleaning invoices")
    assert asked.split("asked: ")[1].endswith("the invoices") and "\x1b" not in asked
