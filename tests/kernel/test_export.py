"""A notebook run in a real kernel, saved and reopened: the banner's outputs keep the recap.

Front ends without the widget (nbconvert, GitHub's viewer, a notebook opened without its
kernel) show each output's ``text/plain``, computed when the kernel sent it. nbclient runs the
notebook here the way ``jupyter execute`` and CI do, and updates outputs by display id the way
JupyterLab does while the cells are live.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernelutil import ROOT, TESTS
from nbclient import NotebookClient
from nbconvert import MarkdownExporter
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = pytest.mark.timeout(180)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SETUP = (
    "import agentmagic\n"
    "agent = agentmagic.install(get_ipython())\n"
    "agent.script.append(lambda p: print('The FK on line 142 points at customers_v1. '\n"
    "                                     'Next: repoint invoices.customer_id to customers_v2.'))"
)
LOAD = "%load_ext jupyter_recap"
TURN = "%%agent\nWhy does invoices.ts fail its FK constraint after the v2 migration?"
RECAP = "%recap"
# What the kernel itself holds as the latest recap, printed for comparison.
LATEST = (
    "from jupyter_recap.ipython.extension import extension_for\n"
    "print(extension_for(get_ipython()).last_recap.text)"
)
HEADER = "✦ recap · offline"


def run_and_reopen(tmp_path: Path, cells: list[str]) -> Any:
    """Run ``cells`` in a fresh kernel with the offline engine, save, and read the file back."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("JPY_SESSION_NAME", None)  # no stored session of this notebook is resumed
    env.update(
        JUPYTER_RECAP_MODEL="offline",
        JUPYTER_RECAP_AUTO="0",  # only %recap writes a recap: the test decides when
        JUPYTER_RECAP_HOME=tempfile.mkdtemp(prefix="recap-home-", dir=tmp_path),
        JUPYTER_RECAP_LOG=str(tmp_path / "recap.log"),
        PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]),
    )
    code = [new_code_cell(source) for source in cells]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=code)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook, timeout=90, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute(env=env)
    saved = tmp_path / "saved.ipynb"
    nbformat.write(notebook, saved)  # type: ignore[no-untyped-call]
    return nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]


def cell(notebook: Any, source: str) -> Any:
    (found,) = [c for c in notebook.cells if c.source == source]
    return found


def markdown(notebook: Any) -> str:
    """``notebook`` exported to Markdown, which renders each output's ``text/plain`` (the
    widget view has no Markdown form)."""
    exporter = MarkdownExporter()  # type: ignore[no-untyped-call]
    body, _ = exporter.from_notebook_node(notebook)
    return str(body)


def banner_texts(code_cell: Any) -> list[str]:
    """The ``text/plain`` of each banner output of ``code_cell``."""
    return [
        output["data"]["text/plain"]
        for output in code_cell.outputs
        if output.get("output_type") == "display_data" and WIDGET_VIEW in output.get("data", {})
    ]


def test_saved_notebook_keeps_the_latest_recap(tmp_path: Path) -> None:
    notebook = run_and_reopen(tmp_path, [SETUP, LOAD, TURN, RECAP, LATEST])

    (recap,) = banner_texts(cell(notebook, RECAP))
    (latest,) = [o["text"].rstrip("\n") for o in cell(notebook, LATEST).outputs]
    assert recap == f"{HEADER}\n{latest}"  # no task list here: no progress line
    assert "invoices.ts" in latest and "customers_v2" in latest
    # The banner %load_ext displayed (empty then) was updated through its display id.
    assert banner_texts(cell(notebook, LOAD)) == [recap]
    # Updates replace outputs, never add one to the cell that was running.
    assert len(cell(notebook, RECAP).outputs) == 1
    assert [o["output_type"] for o in cell(notebook, TURN).outputs] == ["stream"]
    assert cell(notebook, SETUP).outputs == []

    exported = markdown(notebook)
    assert exported.count(HEADER) == 2
    assert latest in exported
    assert "drafting" not in exported


def test_without_a_recap_the_banner_saves_no_text(tmp_path: Path) -> None:
    failed = "%recap --model bedrock:titan"  # drafting starts, then fails: still no recap
    notebook = run_and_reopen(tmp_path, [SETUP, LOAD, TURN, failed])

    assert banner_texts(cell(notebook, LOAD)) == [""]
    assert banner_texts(cell(notebook, failed)) == [""]
    said = "".join(o.get("text", "") for o in cell(notebook, failed).outputs)
    assert said.startswith("recap: no recap (")  # the failure is said once, as a line
    exported = markdown(notebook)
    assert "✦ recap" not in exported and "drafting" not in exported


def test_task_progress_while_shown_reaches_the_saved_text(tmp_path: Path) -> None:
    plan = (
        "%recap\nimport jupyter_recap as jr\n"
        "_ = jr.todo_write([{'text': 'repoint the FK', 'status': 'completed'},\n"
        "                   {'text': 'rerun the migration', 'status': 'in_progress'}])"
    )
    notebook = run_and_reopen(tmp_path, [SETUP, LOAD, TURN, plan])

    # The live banner (the output of %load_ext) follows the task list while its recap shows.
    (live,) = banner_texts(cell(notebook, LOAD))
    assert live.startswith(HEADER + "\n") and "customers_v2" in live
    last = live.splitlines()[-1]
    assert last.startswith("tasks #") and last.endswith(" 1/2")
    # The %recap cell keeps the recap as it asked for it, before the list was written.
    (own,) = banner_texts(cell(notebook, plan))
    assert own == live.rsplit("\n", 1)[0]
