"""The shared field readers, and the JSON the recap reads without being asked through them.

A chat document and the hook spool are written by others (an agent, a persona, a person editing
a file by hand): any JSON value can sit in any field. A bad field is passed over, as if absent,
and the rest is read; nothing raises, so one odd tool call never hides a chat's row and one torn
spool line never stops the lines after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from jupyter_recap import fields
from jupyter_recap.chats.document import read_chat
from jupyter_recap.fields import FieldError
from jupyter_recap.hooks.events import HookEvent, event_from_json

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
"""Any JSON value (and the floats JSON cannot spell, NaN and the infinities, which Python's
``json`` module reads)."""

HOSTILE: tuple[Any, ...] = (
    [],
    {},
    ["tool"],
    {"a": 1},
    float("nan"),
    float("inf"),
    10**400,
    True,
    "",
)
"""Values every field meets at least once, whatever Hypothesis draws."""


def hostile(test: Any) -> Any:
    for value in HOSTILE:
        test = example(value=value)(test)
    return test


# -- the readers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[], {}, ["ok"], {"ok": 1}])
def test_a_list_or_an_object_is_no_choice_even_among_a_set(value: Any) -> None:
    with pytest.raises(FieldError, match=r"^state: must be one of ok or null$"):
        fields.one_of({"state": value}, "state", frozenset({"ok"}))


@hostile
@given(value=JSON)
def test_a_time_is_a_finite_number_of_seconds_near_1970_or_refused(value: Any) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if value is None:
        assert fields.timestamp({"at": value}, "at") is None
    elif number and abs(value) < fields.MOST_SECONDS:  # NaN fails this too
        assert fields.timestamp({"at": value}, "at") == float(value)
    else:
        with pytest.raises(FieldError, match=r"^at: must be a time in seconds or null$"):
            fields.timestamp({"at": value}, "at")


def test_a_bad_field_takes_the_default_and_a_broken_reader_still_raises() -> None:
    assert fields.or_default("none", fields.flag, {"on": "yes"}, "on") == "none"
    assert fields.or_default("none", fields.flag, {"on": True}, "on") is True
    with pytest.raises(ZeroDivisionError):  # a bug is not a bad field: it is not swallowed
        fields.or_default(0, lambda: 1 // 0)


# -- the hook spool ------------------------------------------------------------------------------

LINE = HookEvent(
    agent="Codex",
    session="s1",
    kind="tool",
    at=1_700_000_000.5,
    cwd="/srv/project",
    notebook="/srv/project/churn.ipynb",
    touch="edit",
    tool="apply_patch",
    text="patch: update churn.ipynb",
    output="done",
    error=None,
)
REQUIRED = {"agent", "kind", "at"}
"""Without these a spool line is no event."""


@pytest.mark.parametrize("name", HookEvent._fields)
@hostile
@given(value=JSON)
def test_any_value_in_a_spool_field_drops_that_field_or_the_line(name: str, value: Any) -> None:
    event = event_from_json({**LINE.to_json(), name: value})
    if name in REQUIRED and event is None:
        return
    assert event is not None
    others = [field for field in HookEvent._fields if field != name]
    assert [getattr(event, f) for f in others] == [getattr(LINE, f) for f in others]


# -- a chat document -----------------------------------------------------------------------------

CLAUDE = "jupyter-ai-personas::jupyter_ai_acp_client::ClaudeAcpPersona"


def document() -> dict[str, Any]:
    """A person's ask, then the persona's three tool calls (the last waiting for approval)."""

    def call(call_id: str, status: str, **more: Any) -> dict[str, Any]:
        return {
            "tool_call_id": call_id,
            "title": f"mcp__jupyter__{call_id}",
            "kind": "edit",
            "status": status,
            "raw_input": {"path": "churn.ipynb", "cell_id": "c7", "source": "df = load()"},
            "raw_output": {"error": "KeyError: 'region'"} if status == "failed" else "ok",
            "locations": [{"path": "/srv/project/churn.ipynb"}],
            **more,
        }

    return {
        "messages": [
            {
                "body": "@Claude retrain the model",
                "time": 100,
                "sender": "ana",
                "mentions": [CLAUDE],
                "metadata": {"to_persona": CLAUDE},
            },
            {
                "body": "",
                "time": 101,
                "sender": CLAUDE,
                "metadata": {
                    "tool_calls": [
                        call("edit_cell", "completed"),
                        call("run_cell", "failed"),
                        call("move_file", "pending", permission_status="pending"),
                    ]
                },
            },
        ],
        "users": {
            "ana": {"name": "Ana", "bot": False},
            CLAUDE: {"display_name": "Claude", "name": "Claude", "bot": True},
        },
        "metadata": {"id": "c1"},
    }


WHERE: dict[str, tuple[Any, ...]] = {
    # path to the object holding the field, then the field
    "chat": (),
    "chat metadata": ("metadata",),
    "person": ("users", "ana"),
    "persona": ("users", CLAUDE),
    "ask": ("messages", 0),
    "ask metadata": ("messages", 0, "metadata"),
    "reply": ("messages", 1),
    "reply metadata": ("messages", 1, "metadata"),
    "waiting call": ("messages", 1, "metadata", "tool_calls", 2),
}
FIELDS = {
    "chat": ["users", "metadata"],
    "chat metadata": ["id"],
    "person": ["bot", "name", "display_name"],
    "persona": ["bot", "name", "display_name"],
    "ask": ["body", "time", "sender", "deleted", "mentions", "metadata"],
    "ask metadata": ["to_persona"],
    "reply": ["time", "sender", "deleted", "metadata"],
    "reply metadata": ["tool_calls"],
    "waiting call": [
        *["tool_call_id", "title", "kind", "status", "raw_input", "raw_output"],
        *["permission_status", "locations"],
    ],
}
CASES = [(holder, name) for holder, names in FIELDS.items() for name in names]


@pytest.mark.parametrize(("holder", "name"), CASES, ids=[f"{h}.{n}" for h, n in CASES])
@hostile
@given(value=JSON)
def test_any_value_in_a_chat_field_reads_and_keeps_the_rest(
    holder: str, name: str, value: Any
) -> None:
    data = document()
    target: Any = data
    for key in WHERE[holder]:
        target = target[key]
    target[name] = value
    view = read_chat(data)
    view.state()
    if holder == "waiting call":  # a bad field of one call costs that field, not the call
        steps = view.turns[-1].steps
        before = read_chat(document()).turns[-1].steps
        assert len(steps) == 3 and steps[:2] == before[:2]
