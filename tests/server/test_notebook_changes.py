"""A notebook changed while the person was away: the line that says what changed, and who did it.

A real `jupyter lab` on 127.0.0.1 and real kernels; the page's part (its focus reports, with its
kernel connection's id, and its ``seen`` after its own saves) is sent the way the labextension
sends it. The line is read from the notebook's row, as the page reads it.
"""

from __future__ import annotations

import itertools
import json
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute, feed_ready, stream_text
from labserver import LabServer, running_lab

from jupyter_recap.stores.seentext import FOLDER, file_name

pytestmark = pytest.mark.timeout(180)

FOLDERS = itertools.count(1)
PAGE = "page-connection-1"
"""The page's kernel connection id (JupyterLab's ``clientId``), as its focus reports name it."""
SETUP = feed_ready()


def until(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp: Path = tmp_path_factory.mktemp("changes")
    with running_lab(tmp, {"JUPYTER_RECAP_MODEL": "offline"}) as server:
        yield server


def cell(cell_id: str, source: str, count: int | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "source": source,
        "metadata": {},
        "execution_count": count,
        "outputs": [],
    }


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


START = notebook(
    cell("load", "rows = [1, 2, 3]", 1),
    cell("clean", "rows = [r for r in rows if r]", 2),
    cell("total", "total = sum(rows)", 3),
    cell("show", "print(total)", 4),
)


class Notebook:
    """A notebook of the lab with a kernel, and the person's page reporting for it."""

    def __init__(self, lab: LabServer, name: str = "work.ipynb") -> None:
        self.lab = lab
        folder = lab.root / f"changes-{next(FOLDERS)}"
        folder.mkdir()
        self.path = f"{folder.name}/{name}"
        self.file = lab.root / self.path
        self.file.write_text(json.dumps(START, indent=1))
        session = {"path": self.path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        self.kernel_id = lab.api("POST", "api/sessions", session)["kernel"]["id"]

    def look(self, focused: bool) -> None:
        report = {
            "kernel_id": self.kernel_id,
            "path": self.path,
            "focused": focused,
            "client_id": "page-1",
            "kernel_client_id": PAGE,
        }
        self.lab.api("POST", "jupyter-recap/api/focus", report)

    def leave(self) -> None:
        """The person looks elsewhere; the page's save on the way makes it what they saw."""
        self.look(False)
        self.lab.api("POST", "jupyter-recap/api/seen", {"path": self.path, "client_id": "page-1"})

    def outside(self) -> dict[str, Any] | None:
        """The notebook's line as the page reads it with the agents list (a kernel without
        jupyter_recap loaded has no row; its notebook's line is there all the same)."""
        answer = self.lab.api("GET", "jupyter-recap/api/agents")
        outside: dict[str, Any] | None = answer.get("outside", {}).get(self.path)
        return outside

    def line(self, contains: str = "While you were away") -> dict[str, Any]:
        found: dict[str, Any] = until(lambda: (o := self.outside()) and contains in o["text"] and o)
        return found

    def close(self) -> None:
        self.lab.api("DELETE", f"api/kernels/{self.kernel_id}")


def linked(line: dict[str, Any]) -> dict[str, str]:
    """The linked words of a line → the cell id each link opens."""
    return {line["text"][link["start"] : link["end"]]: link["cell_id"] for link in line["links"]}


def test_a_notebook_rewritten_on_disk_while_away_says_what_changed(lab: LabServer) -> None:
    work = Notebook(lab)
    try:
        work.look(True)
        work.leave()
        # An agent in a terminal rewrites the file: one cell edited, one deleted, two added.
        changed = notebook(
            cell("load", "rows = load('2024.csv')", 1),
            cell("total", "total = sum(rows)", 3),
            cell("show", "print(total)", 4),
            cell("plot", "plot(rows)"),
            cell("save", "save(rows)"),
        )
        work.file.write_text(json.dumps(changed, indent=1))
        line = work.line()
        assert line["text"] == ("While you were away: 2 cells added, 1 edited, 1 deleted — on disk")
        assert linked(line) == {"2 cells added": "plot", "1 edited": "load"}
        # Back: the line stays for the page to show; away again, it is what they saw.
        work.look(True)
        work.leave()
        until(lambda: work.outside() is None)
    finally:
        work.close()


def test_the_line_enters_the_kernel_s_record_when_the_person_returns(lab: LabServer) -> None:
    work = Notebook(lab)
    kc = lab.connect(work.kernel_id)
    try:
        kc.session.session = PAGE  # this client is the person's page
        assert stream_text(execute(kc, SETUP)).strip() == "connected"
        work.look(True)
        work.leave()
        changed = notebook(*START["cells"][:3])
        work.file.write_text(json.dumps(changed, indent=1))
        assert work.line()["text"] == "While you were away: 1 cell deleted — on disk"
        work.look(True)
        request = until(
            lambda: (
                "Event: While you were away: 1 cell deleted — on disk"
                in (text := stream_text(execute(kc, "%recap --dry-run --model openai:gpt-test")))
                and text
            )
        )
        assert "on disk" in request
    finally:
        kc.stop_channels()
        work.close()


def test_a_save_through_the_server_by_another_client(lab: LabServer) -> None:
    work = Notebook(lab)
    try:
        work.look(True)
        work.leave()
        model = lab.api("GET", f"api/contents/{work.path}")
        content = model["content"]
        content["cells"][2]["source"] = "total = sum(rows) * 2"
        lab.api("PUT", f"api/contents/{work.path}", {"type": "notebook", "content": content})
        line = work.line()
        assert (
            line["text"] == "While you were away: 1 cell edited — by another client of the server"
        )
        assert linked(line) == {"1 cell edited": "total"}
    finally:
        work.close()


def test_cells_run_by_another_client_of_the_kernel_count_as_ran(lab: LabServer) -> None:
    work = Notebook(lab)
    page = lab.connect(work.kernel_id)
    other = lab.connect(work.kernel_id)
    try:
        page.session.session = PAGE
        work.look(True)
        execute(page, "x = 1")  # the person's own cell, while they look
        work.leave()
        execute(page, "y = 2")  # queued by the person before they left: theirs
        for code in ("a = 1", "b = a + 1", "raise KeyError('region')"):
            execute(other, code)  # an MCP server or a script on the kernel
        # The third cell's error arrives on IOPub after its run began: wait for the whole line
        # (the line is right at every moment; it is only not yet complete).
        line = work.line("3 cells ran (1 failed)")
        assert line["text"] == (
            "While you were away: 3 cells ran (1 failed) — by another client of the kernel"
        )
        assert line["links"] == []
    finally:
        page.stop_channels()
        other.stop_channels()
        work.close()


def test_no_line_when_nothing_changed_or_the_person_saved_their_own_work(
    lab: LabServer,
) -> None:
    mine, theirs = Notebook(lab, "mine.ipynb"), Notebook(lab, "theirs.ipynb")
    try:
        for work in (mine, theirs):
            work.look(True)
            work.leave()
        # The person's page saves their own edit (autosave after they left): seen.
        edited = notebook(*START["cells"], cell("mine", "print('mine')"))
        mine.file.write_text(json.dumps(edited, indent=1))
        lab.api("POST", "jupyter-recap/api/seen", {"path": mine.path, "client_id": "page-1"})
        # Meanwhile an agent changes the other notebook: once its line is there, the poll
        # that would have seen a change of the first has run too.
        theirs.file.write_text(json.dumps(notebook(*START["cells"][1:]), indent=1))
        assert theirs.line()["text"] == "While you were away: 1 cell deleted — on disk"
        time.sleep(2.5)  # one more poll of the files
        assert mine.outside() is None
        mine.look(True)
        assert mine.outside() is None
    finally:
        mine.close()
        theirs.close()


def test_the_persons_own_run_reaching_the_file_after_they_left_is_no_news(
    lab: LabServer,
) -> None:
    """With real-time collaboration the room saves the page's work after the person left: a
    run their page sent is theirs wherever its execution count turns up in the file."""
    work = Notebook(lab)
    page = lab.connect(work.kernel_id)
    try:
        page.session.session = PAGE
        work.look(True)
        work.leave()
        # The person's cell, queued before they left, ends while they are away.
        [count] = [
            m["content"]["execution_count"]
            for m in execute(page, "y = 2")
            if m["msg_type"] == "execute_input"
        ]
        # One save brings its result and another client's edit (the room saves whatever its
        # clients changed since its last save).
        content = lab.api("GET", f"api/contents/{work.path}")["content"]
        content["cells"][1]["source"] = "rows = [r for r in rows if r > 0]"
        content["cells"][3]["execution_count"] = count
        lab.api("PUT", f"api/contents/{work.path}", {"type": "notebook", "content": content})
        edited = "While you were away: 1 cell edited — by another client of the server"
        # (The server may read the file before it hears the run start: then it reads it again.)
        until(lambda: (line := work.outside()) and line["text"] == edited)
    finally:
        page.stop_channels()
        work.close()


def review(work: Notebook) -> dict[str, Any]:
    """``GET changes`` for the notebook, as the page asks it."""
    query = urllib.parse.urlencode({"path": work.path})
    answer: dict[str, Any] = work.lab.api("GET", f"jupyter-recap/api/changes?{query}")
    return answer


def reviewed(work: Notebook, *cell_ids: str) -> dict[str, Any]:
    body = {"path": work.path, "cell_ids": list(cell_ids), "client_id": "page-1"}
    answer: dict[str, Any] = work.lab.api("POST", "jupyter-recap/api/changes/reviewed", body)
    return answer


def refused(lab: LabServer, method: str, path: str, body: Any = None) -> tuple[int, str]:
    """The status and body of a request the server is expected to refuse."""
    try:
        lab.api(method, path, body)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    return 200, ""


def marks(answer: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(c["cell_id"], c["change"], c["reviewed"]) for c in answer["cells"]]


def kept_texts(work: Notebook) -> list[Path]:
    """The file keeping what the person last saw of the notebook's cells, when there is one."""
    kept = work.lab.root.parent / "recap-home" / FOLDER / file_name(work.path)
    return [kept] if kept.exists() else []


def test_each_changed_cell_waits_for_review_with_what_the_person_saw(lab: LabServer) -> None:
    """A day of returns: every changed cell is marked in notebook order with what the person
    last saw; a reviewed mark goes, the others last over the page's saves and leaving, a cell
    changed again is marked again, and the kept text goes once all is reviewed."""
    work = Notebook(lab)
    try:
        work.look(True)
        work.leave()
        until(lambda: kept_texts(work))
        (kept,) = kept_texts(work)
        assert kept.stat().st_mode & 0o777 == 0o600
        assert kept.parent.stat().st_mode & 0o777 == 0o700
        # On disk: "load" edited, "clean" deleted, "plot" added, "total" ran and failed.
        failed = cell("total", "total = sum(rows)", 5)
        failed["outputs"] = [
            {"output_type": "error", "ename": "KeyError", "evalue": "'region'", "traceback": []}
        ]
        changed = notebook(
            cell("load", "rows = load('2024.csv')", 1),
            cell("plot", "plot(rows)"),
            failed,
            cell("show", "print(total)", 4),
        )
        work.file.write_text(json.dumps(changed, indent=1))
        work.line()
        work.look(True)
        answer = until(lambda: (r := review(work))["total"] == 3 and r)
        assert marks(answer) == [
            ("load", "edited", False),
            ("plot", "added", False),
            ("total", "failed", False),
        ]
        by_id = {c["cell_id"]: c for c in answer["cells"]}
        assert by_id["load"]["before"] == "rows = [1, 2, 3]"
        assert by_id["load"]["label"] == "edited — on disk"
        assert by_id["plot"]["before"] is None
        assert by_id["total"]["label"] == "ran, failed — on disk"
        assert by_id["total"]["error"] == "KeyError: 'region'"
        assert answer["deleted"] == [
            {"source": "rows = [r for r in rows if r]", "label": "deleted — on disk"}
        ]
        assert (answer["reviewed"], answer["diffs"], answer["note"]) == (0, True, None)
        # Two seen; the page saves; one left to review, the deleted cell still listed.
        assert reviewed(work, "load", "total")["reviewed"] == 2
        lab.api("POST", "jupyter-recap/api/seen", {"path": work.path, "client_id": "page-1"})
        answer = until(lambda: (r := review(work))["total"] == 1 and r)
        assert marks(answer) == [("plot", "added", False)]
        assert len(answer["deleted"]) == 1
        # Away again; another client edits the reviewed "load": marked again, against what the
        # person saw then; "plot" still waits; the deleted cell was in front of them: gone.
        work.leave()
        model = lab.api("GET", f"api/contents/{work.path}")
        content = model["content"]
        content["cells"][0]["source"] = "rows = load('2025.csv')"
        lab.api("PUT", f"api/contents/{work.path}", {"type": "notebook", "content": content})
        work.line("1 cell edited")
        work.look(True)
        answer = until(lambda: (r := review(work))["total"] == 2 and r)
        assert marks(answer) == [("load", "edited", False), ("plot", "added", False)]
        by_id = {c["cell_id"]: c for c in answer["cells"]}
        assert by_id["load"]["before"] == "rows = load('2024.csv')"
        assert by_id["load"]["label"] == "edited — another client of the server"
        assert answer["deleted"] == []
        assert kept_texts(work)
        done = reviewed(work, "load", "plot")
        assert (done["reviewed"], done["total"]) == (2, 2)
        until(lambda: not kept_texts(work))
    finally:
        work.close()


def test_a_review_refuses_what_is_not_a_notebook_of_the_server(lab: LabServer) -> None:
    for path in ("../outside.ipynb", "notes.txt", ""):
        query = urllib.parse.urlencode({"path": path})
        status, body = refused(lab, "GET", f"jupyter-recap/api/changes?{query}")
        assert status == 400 and "path" in body, (path, status, body)
    status, body = refused(
        lab,
        "POST",
        "jupyter-recap/api/changes/reviewed",
        {"path": "a.ipynb", "cell_ids": ["x", 3], "client_id": "p"},
    )
    assert status == 400 and "cell_ids.1" in body, body
    # A notebook nobody looked at: nothing to review, in the same shape.
    answer = lab.api("GET", "jupyter-recap/api/changes?path=never.ipynb")
    assert answer == {
        "path": "never.ipynb",
        "cells": [],
        "deleted": [],
        "reviewed": 0,
        "total": 0,
        "diffs": True,
        "note": None,
    }
