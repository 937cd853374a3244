"""The agent task list: validation, warnings, persistence and the plain-text views."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jupyter_recap.errors import InputError
from jupyter_recap.stores.tasks import (
    Task,
    TaskList,
    context_line,
    next_step,
    progress_line,
    prompt_block,
    render,
)

PLAN: list[Any] = [
    {"text": "read the data", "status": "completed"},
    {"text": "fit the model", "status": "completed", "note": "used ridge"},
    {"text": "add the test", "status": "in_progress"},
    "update docs",
    {"text": "publish", "status": "blocked", "note": "waiting for review"},
]


def written(items: list[Any]) -> TaskList:
    task_list = TaskList()
    task_list.write(items)
    return task_list


# --------------------------------------------------------------------------- write


def test_write_accepts_tasks_dicts_and_strings() -> None:
    task_list = TaskList()
    warnings = task_list.write([Task("a", "in_progress"), {"text": "b"}, "  c  "])
    assert warnings == []
    assert task_list.tasks == (Task("a", "in_progress"), Task("b"), Task("c"))
    assert task_list.tasks[2].text == "c"
    assert len(task_list) == 3
    assert [task.text for task in task_list] == ["a", "b", "c"]


def test_write_replaces_the_whole_list() -> None:
    task_list = written(PLAN)
    task_list.write([Task("only", "in_progress")])
    assert task_list.tasks == (Task("only", "in_progress"),)
    assert task_list.write([]) == []
    assert len(task_list) == 0


def test_task_is_frozen() -> None:
    task = Task("a")
    with pytest.raises(AttributeError):
        task.text = "b"  # type: ignore[misc]


def test_warning_when_several_in_progress() -> None:
    warnings = TaskList().write([Task("a", "in_progress"), Task("b", "in_progress"), "c"])
    assert warnings == ["2 tasks are in progress; keep one at a time"]


def test_warning_when_nothing_in_progress_but_work_remains() -> None:
    warnings = TaskList().write([Task("a", "completed"), "b"])
    assert len(warnings) == 1
    assert "no task is in progress" in warnings[0]


def test_no_warning_when_all_done_or_only_blocked() -> None:
    assert TaskList().write([Task("a", "completed"), Task("b", "blocked", "why")]) == []
    assert TaskList().write([Task("a", "in_progress"), "b"]) == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"text": "ship", "status": "blocked"}, "needs a note"),
        ({"text": "ship", "status": "blocked", "note": "   "}, "needs a note"),
        ({"text": "ship", "status": "done"}, "unknown task status 'done'"),
        ({"text": "   "}, "empty"),
        ("", "empty"),
        ({"status": "pending"}, "empty"),
        ("x" * 401, "401 characters"),
        ({"text": 5}, "must be strings"),
        ({"text": "a", "note": 5}, "must be strings"),
        (42, "not int"),
    ],
)
def test_write_refuses_and_leaves_list_unchanged(bad: Any, message: str) -> None:
    task_list = written(PLAN)
    before = task_list.tasks
    with pytest.raises(InputError, match=message) as caught:
        task_list.write(["fine", bad])
    assert str(caught.value).startswith("task 2: ")
    assert "\n" not in str(caught.value)
    assert task_list.tasks == before


def test_text_of_exactly_400_chars_is_accepted() -> None:
    task_list = TaskList()
    task_list.write([Task("x" * 400, "in_progress")])
    assert len(task_list.tasks[0].text) == 400


def test_write_refuses_a_single_task_instead_of_a_list() -> None:
    task_list = written(PLAN)
    with pytest.raises(InputError, match="list of tasks"):
        task_list.write("update docs")
    assert len(task_list) == 5


# --------------------------------------------------------------------------- persistence


def test_round_trip_through_json() -> None:
    task_list = written(PLAN)
    data = json.loads(json.dumps(task_list.to_list()))
    assert data[3] == {"text": "update docs", "status": "pending", "note": ""}
    assert TaskList.from_list(data).tasks == task_list.tasks


def test_from_list_skips_malformed_items() -> None:
    data: list[Any] = [
        {"text": "good", "status": "in_progress"},
        "a bare string",
        None,
        {"text": "", "status": "pending"},
        {"text": "bad", "status": "unknown"},
        {"text": "blocked", "status": "blocked"},
        {"text": ["no"]},
        {"text": "also good", "note": None},
    ]
    assert TaskList.from_list(data).tasks == (Task("good", "in_progress"), Task("also good"))


@pytest.mark.parametrize("data", [None, "tasks", {"text": "a"}, 3])
def test_from_list_of_a_non_list_is_empty(data: object) -> None:
    assert TaskList.from_list(data).tasks == ()


# --------------------------------------------------------------------------- views


@pytest.mark.parametrize(
    ("done", "total", "bar"),
    [
        (0, 5, "............"),
        (2, 5, "####........"),
        (1, 3, "####........"),
        (6, 12, "######......"),
        (11, 12, "###########."),
        (4, 4, "############"),
    ],
)
def test_progress_bar_arithmetic(done: int, total: int, bar: str) -> None:
    tasks = [Task(f"t{i}", "completed" if i < done else "pending") for i in range(total)]
    assert progress_line(tasks) == f"tasks {bar} {done}/{total}"


def test_progress_line_blocked_and_empty() -> None:
    assert progress_line(written(PLAN).tasks) == "tasks ####........ 2/5  1 blocked"
    assert progress_line([]) == ""


def test_render_markers_and_notes() -> None:
    assert render(written(PLAN).tasks).splitlines() == [
        "tasks ####........ 2/5  1 blocked",
        "[x] read the data",
        "[x] fit the model — used ridge",
        "[~] add the test",
        "[ ] update docs",
        "[!] publish — waiting for review",
    ]
    assert render([]) == ""


def test_next_step() -> None:
    assert next_step(written(PLAN).tasks) == "add the test"
    assert next_step([Task("a", "completed"), Task("b"), Task("c")]) == "b"
    assert next_step([Task("a", "completed"), Task("b", "blocked", "why")]) is None
    assert next_step([]) is None


def test_prompt_block_names_the_focus() -> None:
    tasks = written(PLAN).tasks
    lines = prompt_block(tasks).splitlines()
    assert lines[:-1] == render(tasks).splitlines()
    assert lines[-1] == "Now: add the test"
    assert prompt_block([Task("a", "completed"), Task("b")]).endswith(
        "Next: b (mark it in_progress before starting)"
    )
    assert prompt_block([Task("a", "blocked", "why")]).endswith(
        "resolve the blocked tasks or revise the plan."
    )
    assert prompt_block([Task("a", "completed")]).endswith("All tasks are completed.")
    assert prompt_block([]) == ""


def test_context_line() -> None:
    assert context_line(written(PLAN).tasks) == (
        "Tasks 2/5 done; in progress: add the test; next: update docs; 1 blocked"
    )
    assert context_line([Task("a", "completed")]) == "Tasks 1/1 done"
    assert context_line([]) == ""


@pytest.mark.parametrize("limit", [0, 1, 2, 10, 40, 200])
def test_context_line_respects_limit(limit: int) -> None:
    tasks = [Task("word " * 79 + "x", "in_progress"), Task("y" * 400)]
    line = context_line(tasks, limit=limit)
    assert len(line) <= limit
    assert "\n" not in line
    if limit >= 10:
        assert line.startswith("Tasks 0/2")
        assert line.endswith("…")
