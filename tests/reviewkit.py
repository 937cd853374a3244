"""A 200-cell notebook and its review marks as a page shows them: shared by the browser tests
of the change review (test_lab_review.py, test_lab_changes_collaboration.py)."""

from __future__ import annotations

import json
from typing import Any

from labfocus import LabPage
from labserver import LabServer

#: Each cell six lines high, so none of the changed ones is on screen when the page returns
#: (a marked cell on screen for a second counts as reviewed).
LINES = 6


def source(index: int, version: str = "") -> str:
    body = "\n".join(f"# step {index}, line {line}" for line in range(1, LINES))
    return f"x_{index} = {index}{version}\n{body}"


def code(cell_id: str, text: str, count: int | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "metadata": {},
        "source": text,
        "outputs": [],
        "execution_count": count,
    }


def start(lab: LabServer, name: str) -> None:
    """Write notebook ``name`` of 200 cells, ids ``c000`` … ``c199``."""
    cells = [code(f"c{i:03}", source(i)) for i in range(200)]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab.root / name).write_text(json.dumps(notebook, indent=1))


MARKS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const found = {};
  for (const cell of panel.content.widgets) {
    const change = cell.node.getAttribute('data-recap-change');
    if (change !== null) {
      found[cell.model.id] = change;
    }
  }
  return found;
}"""


def marks(tab: LabPage) -> dict[str, str]:
    """Cell id → the change its mark says, for every marked cell of the current notebook."""
    return dict(tab.page.evaluate(MARKS_JS))


def until_marks(tab: LabPage, expected: dict[str, str]) -> None:
    """Wait until exactly the cells of ``expected`` carry their marks (a reload from disk may
    replace the cell widgets meanwhile)."""
    try:
        tab.page.wait_for_function(
            f"(expected) => JSON.stringify(({MARKS_JS})()) === JSON.stringify(expected)",
            arg=expected,
            timeout=60_000,
        )
    except Exception as timeout:
        path = tab.page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
        answer = tab.lab.api("GET", f"jupyter-recap/api/changes?path={path}")
        raise AssertionError(
            f"marks {marks(tab)}, the server's review {json.dumps(answer)[:1500]}, "
            f"requests {[route for route, _ in tab.reports][-20:]}, errors {tab.errors}"
        ) from timeout


def active_id(tab: LabPage) -> str:
    return str(
        tab.page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCell.model.id")
    )


def command(tab: LabPage, name: str) -> None:
    tab.page.evaluate("(name) => window.jupyterapp.commands.execute(name)", name)
