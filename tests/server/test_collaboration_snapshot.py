"""The snapshot of a notebook open in a collaboration room is what the room saves.

When the person leaves a notebook that real-time collaboration holds open, the server takes what
they saw from the room's live document (jupyter_ydoc's ``YNotebook``), reading of each output
only its type (:func:`jupyter_recap.server.outside.changes.live_cells`); the room later saves that
document to the file. A cell nobody touched must fingerprint the same both ways, or the next
save would read as news. Over generated notebooks: code, markdown and raw cells, outputs of
every kind, counts as Yjs sends them (floats), notebooks of nbformat 4.4 (no cell ids) and 4.5.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from jupyter_recap.changes.cells import Fingerprint, notebook_cells
from jupyter_recap.server.outside.changes import live_cells

OUTPUTS = st.sampled_from(
    [
        {"output_type": "stream", "name": "stdout", "text": "1\n2\n"},
        {"output_type": "error", "ename": "KeyError", "evalue": "'region'", "traceback": []},
        {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": {}},
        {
            "output_type": "execute_result",
            "data": {"text/plain": "3"},
            "metadata": {},
            "execution_count": 3,
        },
    ]
).map(copy.deepcopy)  # each output its own object, as in a notebook read from JSON


@st.composite
def cells(draw: st.DrawFn, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["code", "markdown", "raw"]))
    source = draw(st.sampled_from(["", "x = 1", "rows = load()\nplot(rows)\n", "# Notes"]))
    cell: dict[str, Any] = {
        "cell_type": kind,
        "id": f"cell-{index}",
        "metadata": {},
        "source": draw(st.sampled_from([source, source.splitlines(keepends=True)])),
    }
    if kind == "code":
        cell["execution_count"] = draw(st.none() | st.integers(1, 500))
        cell["outputs"] = draw(st.lists(OUTPUTS, max_size=3))
    return cell


@st.composite
def notebooks(draw: st.DrawFn) -> dict[str, Any]:
    minor = draw(st.sampled_from([4, 5]))
    raw = [draw(cells(n)) for n in range(draw(st.integers(0, 6)))]
    if minor == 4:
        for cell in raw:
            del cell["id"]
    return {"cells": raw, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


@settings(max_examples=examples(100), deadline=None)
@given(notebooks(), st.data())
def test_a_rooms_live_document_fingerprints_as_the_file_the_room_saves(
    notebook: dict[str, Any], data: st.DataObject
) -> None:
    from jupyter_ydoc import YNotebook

    document = YNotebook()
    document.set(notebook)
    for ycell in document.ycells:
        count = ycell.get("execution_count")
        if isinstance(count, int) and data.draw(st.booleans()):
            ycell["execution_count"] = float(count)  # as a count a browser set arrives
    saved = document.get()  # what the room writes to the file
    assert Fingerprint(live_cells(document)) == Fingerprint(notebook_cells(saved))
    assert len(live_cells(document)) == len(saved["cells"])
