"""The cells a person has to review: marks from the diffs, kept until seen, back when changed
again; and the last-seen texts the diffs show, kept under the store's rules and bounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_recap.changes.cells import Fingerprint, notebook_cells
from jupyter_recap.changes.diff import Change, diff
from jupyter_recap.changes.review import Review
from jupyter_recap.errors import UnsafeStoreError
from jupyter_recap.stores import seentext
from jupyter_recap.stores.seentext import SeenTexts


def code(cell_id: str, source: str, count: int | None = None, error: str | None = None) -> Any:
    outputs = []
    if error is not None:
        name, _, value = error.partition(": ")
        outputs = [{"output_type": "error", "ename": name, "evalue": value, "traceback": []}]
    return {
        "cell_type": "code",
        "id": cell_id,
        "source": source,
        "metadata": {},
        "execution_count": count,
        "outputs": outputs,
    }


class Page:
    """A notebook, what the person saw of it, and its review, as the tracker drives them."""

    def __init__(self, *cells: Any) -> None:
        self.cells = list(cells)
        self.review = Review()
        self.seen: list[Any] = []
        self.texts: dict[bytes, str] = {}
        self.view(leaving=True)

    def view(self, *, leaving: bool) -> None:
        """The person's view is taken (they leave, or their page saves)."""
        self.review.viewed_again(leaving=leaving)
        self.seen = notebook_cells({"cells": self.cells})
        self.texts.update({c.source_hash: c.source or "" for c in self.seen})
        self.read()

    def read(self) -> Change:
        now = notebook_cells({"cells": self.cells})
        change = diff(Fingerprint(self.seen).cells(), now)
        self.review.update(change, "Claude via churn.chat", [c.cell_id for c in now])
        return change

    def answer(self) -> Any:
        return self.review.answer("work.ipynb", self.texts)

    def open(self) -> list[str]:
        return [c["cell_id"] for c in self.answer()["cells"] if not c["reviewed"]]


START = [code("load", "rows = [1, 2]", 1), code("total", "total = sum(rows)", 2)]


def test_each_changed_cell_is_marked_with_what_happened_and_what_the_person_saw() -> None:
    page = Page(*START, code("show", "print(total)", 3))
    page.cells = [
        code("load", "rows = load('a.csv')", 1),
        code("plot", "plot(rows)", 4, error="NameError: name 'plot' is not defined"),
        code("total", "total = sum(rows)", 5),
    ]
    page.read()
    answer = page.answer()
    assert [(c["cell_id"], c["change"], c["label"]) for c in answer["cells"]] == [
        ("load", "edited", "edited — Claude via churn.chat"),
        ("plot", "failed", "added, ran, failed — Claude via churn.chat"),
        ("total", "ran", "ran — Claude via churn.chat"),
    ]
    assert [c["before"] for c in answer["cells"]] == ["rows = [1, 2]", None, "total = sum(rows)"]
    assert answer["cells"][1]["error"] == "NameError: name 'plot' is not defined"
    assert answer["deleted"] == [
        {"source": "print(total)", "label": "deleted — Claude via churn.chat"}
    ]
    assert (answer["reviewed"], answer["total"], answer["diffs"]) == (0, 3, True)


def test_a_reviewed_mark_goes_and_comes_back_when_its_cell_changes_again() -> None:
    page = Page(*START)
    page.cells[0] = code("load", "rows = [1, 2, 3]", 1)
    page.read()
    page.review.mark_reviewed(["load", "no-such-cell"])
    assert page.open() == [] and page.answer()["reviewed"] == 1
    page.read()  # the same notebook read again: still reviewed
    assert page.open() == []
    page.cells[0] = code("load", "rows = [1, 2, 3, 4]", 1)
    page.read()
    assert page.open() == ["load"]
    # Against what the person saw first, not what they reviewed in between.
    assert page.answer()["cells"][0]["before"] == "rows = [1, 2]"


def test_unreviewed_marks_last_over_saves_and_leaving_and_deleted_cells_until_leaving() -> None:
    page = Page(*START, code("show", "print(total)", 3))
    page.cells = [code("load", "rows = load()", 1), code("total", "total = sum(rows)", 2)]
    page.read()
    page.review.mark_reviewed(["total"])  # nothing to review there: no mark
    page.view(leaving=False)  # the page saves: the diff starts again from here
    answer = page.answer()
    assert [c["cell_id"] for c in answer["cells"]] == ["load"]
    assert answer["cells"][0]["before"] == "rows = [1, 2]"
    assert [d["source"] for d in answer["deleted"]] == ["print(total)"]
    page.view(leaving=True)
    answer = page.answer()
    assert page.open() == ["load"] and answer["deleted"] == []
    page.review.mark_reviewed(["load"])
    assert page.review.settled_down()
    page.view(leaving=True)
    assert page.answer()["cells"] == [] and page.review.needed_texts() == set()


def test_a_cell_added_then_edited_is_still_new_to_the_person() -> None:
    page = Page(*START)
    page.cells.append(code("new", "x = 1"))
    page.read()
    page.view(leaving=False)
    page.cells[-1] = code("new", "x = 2", 3, error="ValueError: bad")
    page.read()
    (cell,) = page.answer()["cells"]
    assert (cell["change"], cell["before"]) == ("failed", None)
    assert cell["label"].startswith("added, ran, failed")


def test_labels_and_errors_are_plain_text() -> None:
    page = Page(*START)
    page.cells[1] = code("total", "total = 1", 3, error="Error: \x1b[31m<img src=x onerror=y>\x07")
    page.read()
    (cell,) = page.answer()["cells"]
    assert "\x1b" not in cell["error"] and "\x07" not in cell["error"]
    assert "<img src=x onerror=y>" in cell["error"]  # text, which the page shows as text


# -- generated days: the marks follow a simple rule -------------------------------------------

_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "run", "fail", "add", "review", "save", "leave"]),
        st.integers(0, 7),
    ),
    max_size=40,
)


@settings(deadline=None)
@given(steps=_STEPS)
def test_a_cell_is_marked_exactly_when_someone_changed_it_after_the_person_last_saw_it(
    steps: list[tuple[str, int]],
) -> None:
    # The rule, kept beside the review: a cell is open when an agent changed it since the
    # person last reviewed it (saving or leaving changes nothing of that).
    page = Page(*[code(f"c{i}", f"x{i} = {i}", i + 1) for i in range(4)])
    open_cells: set[str] = set()
    count = 10
    for step, (action, which) in enumerate(steps):
        ids = [cell["id"] for cell in page.cells]
        cell_id = ids[which % len(ids)]
        index = ids.index(cell_id)
        if action == "edit":
            page.cells[index] = {**page.cells[index], "source": f"edited {step}"}
            open_cells.add(cell_id)
        elif action in ("run", "fail"):
            count += 1
            error = "KeyError: 'k'" if action == "fail" else None
            source = page.cells[index]["source"]
            page.cells[index] = code(cell_id, source, count, error=error)
            open_cells.add(cell_id)
        elif action == "add":
            new = f"n{step}"
            page.cells.insert(which % (len(ids) + 1), code(new, f"new {step}"))
            open_cells.add(new)
        elif action == "review":
            page.read()
            page.review.mark_reviewed([cell_id])
            open_cells.discard(cell_id)
        else:
            page.view(leaving=action == "leave")
        page.read()
        assert set(page.open()) == open_cells, (step, action, cell_id)
        order = [cell["id"] for cell in page.cells]
        assert page.open() == [c for c in order if c in open_cells]  # notebook order


# -- the kept texts ---------------------------------------------------------------------------


def test_texts_are_kept_privately_read_back_and_dropped(tmp_path: Path) -> None:
    store = SeenTexts(tmp_path / "recap")
    assert store.texts("a.ipynb") is None
    assert store.keep("a.ipynb", {b"\x01" * 8: "rows = [1]", b"\x02" * 8: "é ✓ \ud800"})
    assert store.texts("a.ipynb") == {b"\x01" * 8: "rows = [1]", b"\x02" * 8: "é ✓ \ud800"}
    (file,) = (tmp_path / "recap" / seentext.FOLDER).iterdir()
    assert file.stat().st_mode & 0o777 == 0o600
    assert file.parent.stat().st_mode & 0o777 == 0o700
    assert store.texts("b.ipynb") is None
    store.drop("a.ipynb")
    assert store.texts("a.ipynb") is None


def test_a_notebook_over_its_bound_keeps_nothing_and_the_oldest_go_past_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SeenTexts(tmp_path / "recap")
    store.keep("big.ipynb", {b"k" * 8: "small"})
    assert not store.keep("big.ipynb", {b"k" * 8: "x" * (seentext.MAX_NOTEBOOK_BYTES + 1)})
    assert store.texts("big.ipynb") is None  # not the old text either: it is no longer right
    monkeypatch.setattr(seentext, "MAX_TOTAL_BYTES", 3_000)
    for index in range(5):
        assert store.keep(f"n{index}.ipynb", {b"k" * 8: "y" * 900})
        os.utime(
            tmp_path / "recap" / seentext.FOLDER / seentext.file_name(f"n{index}.ipynb"),
            ns=(index * 10**9, index * 10**9),
        )
    kept = [index for index in range(5) if store.texts(f"n{index}.ipynb") is not None]
    assert kept[-1] == 4 and len(kept) < 5 and kept == list(range(5 - len(kept), 5))


def test_a_file_the_store_s_rules_refuse_reads_as_nothing_kept(tmp_path: Path) -> None:
    store = SeenTexts(tmp_path / "recap")
    store.keep("a.ipynb", {b"k" * 8: "mine"})
    file = tmp_path / "recap" / seentext.FOLDER / seentext.file_name("a.ipynb")
    planted = tmp_path / "planted.json"
    planted.write_text('{"path": "a.ipynb", "texts": {"6b6b6b6b6b6b6b6b": "theirs"}}')
    file.unlink()
    file.symlink_to(planted)
    assert store.texts("a.ipynb") is None
    file.unlink()
    file.write_text("not json")
    assert store.texts("a.ipynb") is None
    (tmp_path / "recap").chmod(0o777)
    with pytest.raises(UnsafeStoreError):
        store.keep("a.ipynb", {b"k" * 8: "mine"})


# -- who wrote a cell in a collaboration room -------------------------------------------------


def test_the_writer_of_a_room_transaction_is_the_client_whose_state_grew() -> None:
    from pycrdt import Doc, Text

    from jupyter_recap.server.outside.rooms import _grown

    agent: Any = Doc()
    room: Any = Doc()
    agent["t"], room["t"] = Text(), Text()
    grown: list[set[int]] = []
    room.observe(lambda event: grown.append(_grown(event.before_state, event.after_state)))
    start = agent.get_state()
    agent["t"] += "plot(rows)"
    room.apply_update(agent.get_update(start))
    room["t"] += "!"
    assert grown == [{agent.client_id}, {room.client_id}]


@pytest.mark.parametrize(
    ("state", "name"),
    [
        (
            {"user": {"agent": "Datalayer-NbModelClient/0.14", "owner": "ada"}},
            "Datalayer-NbModelClient/0.14",
        ),
        ({"user": {"username": "ada", "display_name": "Ada L.", "name": "Ada"}}, "Ada L."),
        ({"user": {"username": "ada", "name": " "}}, "ada"),
        ({"user": {"display_name": "Ada\x1b[2J\u202e"}}, "Ada"),
        ({"user": "ada"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_a_room_client_is_named_by_what_its_awareness_says(state: Any, name: str | None) -> None:
    from jupyter_recap.server.outside.rooms import _name

    said = _name(state)
    assert said == name or (name is not None and said is not None and said.startswith(name))
    assert said is None or said.isprintable()


# -- the tracker keeps and drops the texts -----------------------------------------------------


def test_a_notebook_past_the_text_bound_gets_marks_without_diffs_and_says_so(
    tmp_path: Path,
) -> None:
    import asyncio
    import json

    from outsidekit import FakeSink

    from jupyter_recap.changes.touches import Touches
    from jupyter_recap.server.outside.changes import NotebookChanges
    from jupyter_recap.server.outside.review import TOO_LARGE

    def write(*cells: Any) -> None:
        notebook = {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (tmp_path / "big.ipynb").write_text(json.dumps(notebook))

    huge = code("data", "x" * (seentext.MAX_NOTEBOOK_BYTES + 1))
    small = code("small", "rows = [1]", 1)

    async def day() -> list[Any]:
        changes = NotebookChanges(FakeSink(tmp_path), Touches())

        async def settled() -> None:
            for _ in range(500):
                await asyncio.sleep(0.01)
                if not changes.notebooks["big.ipynb"].reading:
                    return

        answers = []
        for big in (True, False):
            write(huge if big else code("data", "x = 1"), small)
            changes.looked_at("big.ipynb", True)
            await settled()
            changes.looked_at("big.ipynb", False)  # leaving: what they saw is kept, or not
            await settled()
            write(huge if big else code("data", "x = 1"), code("small", "rows = [2]", 1))
            changes._read_soon(changes.notebooks["big.ipynb"])
            await settled()
            changes.looked_at("big.ipynb", True)
            await settled()
            answers.append(await changes.reviews.review("big.ipynb"))
        return answers

    loop = asyncio.new_event_loop()
    try:
        too_big, kept = loop.run_until_complete(day())
    finally:
        loop.close()
    assert [c["cell_id"] for c in too_big["cells"]] == ["small"]
    assert (too_big["diffs"], too_big["note"], too_big["cells"][0]["before"]) == (
        False,
        TOO_LARGE,
        None,
    )
    assert (kept["diffs"], kept["note"], kept["cells"][0]["before"]) == (True, None, "rows = [1]")
