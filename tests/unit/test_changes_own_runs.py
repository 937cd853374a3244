"""The person's own runs are no news in a while-away line (jupyter_recap.changes.diff).

With real-time collaboration the person's runs reach the notebook file through the collaboration
room's saves, after they left; the server knows their execution counts (their page sent those
runs) and passes them to :func:`diff`, which must then count every other change as before.
Over generated notebooks: cells added, edited, deleted and run, with ids or without.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from jupyter_recap.changes.cells import notebook_cells
from jupyter_recap.changes.diff import Change, diff

SOURCES = st.sampled_from(["x = 1", "rows = load()", "plot(rows)", "", "# notes"])


@st.composite
def notebooks(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A notebook's cells when the person left, and the cells of the file now."""
    with_ids = draw(st.booleans())
    count = draw(st.integers(0, 6))
    before: list[dict[str, Any]] = [
        {
            "cell_type": "code",
            "id": f"c{n}" if with_ids else None,
            "source": draw(SOURCES),
            "execution_count": draw(st.none() | st.integers(1, 20)),
            "outputs": [],
        }
        for n in range(count)
    ]
    now: list[dict[str, Any]] = []
    for cell in before:
        if draw(st.booleans()):
            continue  # deleted
        cell = dict(cell)
        if draw(st.booleans()):
            cell["source"] = draw(SOURCES) + " # edited"
        if draw(st.booleans()):
            cell["execution_count"] = draw(st.integers(21, 40))  # ran again
            failed = draw(st.booleans())
            cell["outputs"] = [{"output_type": "error"}] if failed else []
        now.append(cell)
    for n in range(draw(st.integers(0, 3))):
        now.append(
            {
                "cell_type": "code",
                "id": f"new{n}" if with_ids else None,
                "source": f"added_{n}()",
                "execution_count": draw(st.none() | st.integers(41, 60)),
                "outputs": [],
            }
        )
    return before, now


def cells(raw: list[dict[str, Any]]) -> Any:
    return notebook_cells({"cells": [{k: v for k, v in c.items() if v is not None} for c in raw]})


def counts(change: Change) -> tuple[int, int, int, int, int]:
    return len(change.added), len(change.edited), change.deleted, change.ran, change.failed


@settings(max_examples=examples(200))
@given(notebooks(), st.data())
def test_the_persons_runs_are_left_out_and_nothing_else(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]], data: st.DataObject
) -> None:
    before, now = case
    theirs = diff(cells(before), cells(now))
    run_counts = sorted({c["execution_count"] for c in now if c["execution_count"] is not None})
    own = (
        set(data.draw(st.lists(st.sampled_from(run_counts), unique=True))) if run_counts else set()
    )
    mine = diff(cells(before), cells(now), own)
    # Exactly as if the person's runs had not happened: those cells with no count, no error.
    unrun = [
        {**c, "execution_count": None, "outputs": []} if c["execution_count"] in own else c
        for c in now
    ]
    assert mine == diff(cells(before), cells(unrun))
    # What was added, edited or deleted is news whoever ran what.
    assert (mine.added, mine.edited, mine.deleted) == (theirs.added, theirs.edited, theirs.deleted)
    if own >= set(run_counts):
        assert (mine.ran, mine.failed) == (0, 0)
    if not own:
        assert mine == theirs


def test_a_run_of_the_persons_and_one_of_another_client() -> None:
    before = [
        {"cell_type": "code", "id": "a", "source": "x = 1", "execution_count": 1, "outputs": []},
        {"cell_type": "code", "id": "b", "source": "y = 2", "execution_count": 2, "outputs": []},
    ]
    now = [
        {"cell_type": "code", "id": "a", "source": "x = 1", "execution_count": 3, "outputs": []},
        {
            "cell_type": "code",
            "id": "b",
            "source": "y = 2",
            "execution_count": 4,
            "outputs": [{"output_type": "error"}],
        },
    ]
    assert counts(diff(cells(before), cells(now))) == (0, 0, 0, 2, 1)
    assert counts(diff(cells(before), cells(now), {3})) == (0, 0, 0, 1, 1)
    assert counts(diff(cells(before), cells(now), {4})) == (0, 0, 0, 1, 0)
