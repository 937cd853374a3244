"""What changed in a notebook while the person was away: fingerprints, the diff, the line."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jupyter_recap.changes.cells import CELL_BYTES, Fingerprint, notebook_cells
from jupyter_recap.changes.diff import Change, change_line, diff, who_words
from jupyter_recap.changes.touches import MAX_PER_NOTEBOOK, Touches


def code(cell_id: str | None, source: str, count: int | None = None, error: bool = False) -> Any:
    cell: dict[str, Any] = {
        "cell_type": "code",
        "source": source,
        "metadata": {},
        "execution_count": count,
        "outputs": [{"output_type": "error", "ename": "KeyError", "evalue": "'region'"}]
        if error
        else [],
    }
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def notebook(*cells: Any) -> dict[str, Any]:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def changed(before: dict[str, Any], after: dict[str, Any]) -> Change:
    seen = Fingerprint(notebook_cells(before))
    return diff(seen.cells(), notebook_cells(after))


BEFORE = notebook(
    code("load", "df = load()", 1),
    code("clean", "df = df.dropna()", 2),
    code("plot", "df.plot()", 3),
    {"cell_type": "markdown", "id": "notes", "source": ["# Notes"], "metadata": {}},
)


def test_nothing_changed_is_no_change_and_says_nothing() -> None:
    assert not changed(BEFORE, copy.deepcopy(BEFORE))


def test_added_edited_deleted_and_ran_are_counted_by_cell_id() -> None:
    after = notebook(
        code("load", "df = load('2024.csv')", 5),  # edited and ran
        code("plot", "df.plot()", 6, error=True),  # ran, failed
        code("new-1", "df.describe()", None),  # added
        code("new-2", "df.head()", 7),  # added and ran
        {"cell_type": "markdown", "id": "notes", "source": ["# Notes"], "metadata": {}},
    )  # "clean" deleted
    change = changed(BEFORE, after)
    assert change == Change(
        added=["new-1", "new-2"], edited=["load"], deleted=1, ran=3, failed=1, failed_cell="plot"
    )
    text, links = change_line(change, "by Claude via churn.chat")
    assert text == (
        "While you were away: 2 cells added, 1 edited, 1 deleted, 3 ran (1 failed)"
        " — by Claude via churn.chat"
    )
    added, edited, failed = links
    assert text[added["start"] : added["end"]] == "2 cells added" and added["cell_id"] == "new-1"
    assert text[edited["start"] : edited["end"]] == "1 edited" and edited["cell_id"] == "load"
    # The failed run links where the person goes first: the cell that failed.
    assert text[failed["start"] : failed["end"]] == "1 failed" and failed["cell_id"] == "plot"


def test_the_first_failed_cell_in_notebook_order_is_linked_and_unknown_links_nowhere() -> None:
    after = notebook(
        code("load", "df = load()", 4, error=True),
        code("clean", "df = df.dropna()", 5, error=True),
        code("plot", "df.plot()", 3),
        {"cell_type": "markdown", "id": "notes", "source": ["# Notes"], "metadata": {}},
    )
    change = changed(BEFORE, after)
    assert (change.ran, change.failed, change.failed_cell) == (2, 2, "load")
    text, links = change_line(change, None)
    assert text == "While you were away: 2 cells ran (2 failed)"
    [failed] = links
    assert text[failed["start"] : failed["end"]] == "2 failed" and failed["cell_id"] == "load"
    # Failures only another kernel client reported (no cell known): said, not linked.
    text, links = change_line(Change(ran=2, failed=1), None)
    assert text == "While you were away: 2 cells ran (1 failed)" and links == []


def test_a_moved_cell_is_not_a_change_and_a_retyped_one_is_edited() -> None:
    cells = BEFORE["cells"]
    moved = notebook(cells[2], cells[0], cells[1], cells[3])
    assert not changed(BEFORE, moved)
    retyped = copy.deepcopy(BEFORE)
    retyped["cells"][3]["cell_type"] = "raw"
    assert changed(BEFORE, retyped) == Change(edited=["notes"])


def test_cells_without_ids_are_matched_by_source_each_once() -> None:
    old = notebook(code(None, "x = 1"), code(None, "x = 1"), code(None, "y = 2"))
    new = notebook(code(None, "x = 1"), code(None, "y = 3"), code(None, "y = 2"))
    change = changed(old, new)
    assert (len(change.added), change.deleted, change.edited) == (1, 1, [])
    # The same notebook saved with ids (nbformat 4.5) is the same notebook.
    assert not changed(old, notebook(code("i", "x = 1"), code("j", "x = 1"), code("k", "y = 2")))


def test_parts_that_are_zero_are_left_out_and_the_first_names_cells() -> None:
    assert (
        change_line(Change(deleted=1), "on disk")[0]
        == "While you were away: 1 cell deleted — on disk"
    )
    assert change_line(Change(ran=3), None)[0] == "While you were away: 3 cells ran"
    text, links = change_line(Change(edited=["a"], ran=1, failed=1), None)
    assert text == "While you were away: 1 cell edited, 1 ran (1 failed)"
    assert links == [{"start": 21, "end": 34, "cell_id": "a"}]


def test_links_count_utf16_code_units() -> None:
    text, links = change_line(Change(added=["a"], edited=["b"]), None)
    assert text.startswith("While you were away: ")
    assert links[1]["start"] == len("While you were away: 1 cell added, ")


def test_who_is_named_most_recent_first_then_and_others() -> None:
    assert who_words([]) is None
    assert who_words(["Claude Code"]) == "by Claude Code"
    assert who_words(["A", "B"]) == "by A and B"
    assert who_words(["A", "B", "C", "D"]) == "by A, B, C and others"


def test_a_fingerprint_keeps_hashes_only_in_24_bytes_a_cell() -> None:
    secret = "password = 'hunter2-very-secret'"
    big = notebook(*(code(f"c{i}", f"{secret} {i}", i) for i in range(500)))
    seen = Fingerprint(notebook_cells(big))
    assert seen.nbytes == 500 * CELL_BYTES == 12_000
    assert b"hunter2" not in seen._data and b"c1" not in seen._data


def test_touches_are_bounded_deduplicated_and_named_once_each() -> None:
    touches = Touches()
    for at in range(MAX_PER_NOTEBOOK + 10):
        touches.note("analysis/churn.ipynb", "Claude Code", float(at))
    touches.note("./analysis/churn.ipynb", "Claude Code", float(at))  # the same work, again
    touches.note("analysis//churn.ipynb", "jupyter-mcp-server", 100.0, ran=2, failed=1)
    assert len(touches.since("analysis/churn.ipynb", -1)) == MAX_PER_NOTEBOOK
    assert touches.who_since("analysis/churn.ipynb", 5.0) == ["jupyter-mcp-server", "Claude Code"]
    assert touches.who_since("analysis/churn.ipynb", 100.0) == []


cell_ids = st.sampled_from(["a", "b", "c", "d", "e", None])
cells = st.lists(
    st.builds(code, cell_ids, st.sampled_from(["x", "y", "z"]), st.none() | st.integers(0, 9)),
    max_size=8,
)


@given(cells, cells)
def test_any_two_notebooks_diff_without_error_and_counts_add_up(
    old: list[Any], new: list[Any]
) -> None:
    before, after = notebook(*old), notebook(*new)
    change = diff(Fingerprint(notebook_cells(before)).cells(), notebook_cells(after))
    # Every cell of now is matched or added; every cell of then matched or deleted.
    assert len(after["cells"]) - len(change.added) == len(before["cells"]) - change.deleted
    assert change.failed <= change.ran <= len(after["cells"])
    assert not diff(Fingerprint(notebook_cells(after)).cells(), notebook_cells(after))
    json.dumps(change_line(change, None))
