"""End to end in a real kernel: agent cells are recorded and %recap shows the banner widget."""

from __future__ import annotations

import pytest
from kernelutil import execute, running_kernel, stream_text, widget_states

pytestmark = pytest.mark.timeout(120)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    log = tmp_path_factory.mktemp("kernel") / "recap.log"
    with running_kernel({"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(log)}) as kc:
        setup = (
            "import agentmagic; agent = agentmagic.install(get_ipython())\n%load_ext jupyter_recap"
        )
        reply = execute(kc, setup)
        assert not [m for m in reply if m["msg_type"] == "error"], reply
        yield kc


def test_recap_cell_carries_the_banner_with_the_recap(kc) -> None:  # type: ignore[no-untyped-def]
    execute(
        kc,
        "agent.script.append(lambda p: print('The FK on line 142 points at customers_v1. '"
        "'Next: repoint invoices.customer_id to customers_v2.'))",
    )
    agent = execute(
        kc, "%%agent\nWhy does invoices.ts fail its FK constraint after the v2 migration?"
    )
    assert "Next: repoint" in stream_text(agent)  # the user still sees the agent's output

    messages = execute(kc, "%recap")
    displays = [m for m in messages if m["msg_type"] == "display_data"]
    assert len(displays) == 1 and WIDGET_VIEW in displays[0]["content"]["data"]
    model_id = displays[0]["content"]["data"][WIDGET_VIEW]["model_id"]
    states = widget_states(messages, model_id)
    assert states[0].get("_esm") or states[0].get("_anywidget_id")  # an anywidget banner
    final = {}
    for state in states:
        final.update(state)
    assert final["state"] == "shown"
    assert final["model"] == "offline"
    assert "invoices.ts" in final["text"] and "Next: repoint" in final["text"]
    assert any(s.get("state") == "drafting" for s in states)  # visible while in flight
    assert stream_text(messages) == ""  # nothing printed into the cell on success


def test_recap_cells_are_not_recorded_and_status_reports(kc) -> None:  # type: ignore[no-untyped-def]
    out = stream_text(execute(kc, "%recap status"))
    assert "offline" in out and "1 agent turns" in out
    kinds = stream_text(
        execute(kc, "import jupyter_recap as jr; print([e.kind for e in jr.current()])")
    )
    assert "'user', 'assistant', 'outcome'" in kinds
    assert "'recap'" in kinds  # what the person was shown is recorded, out of the next context


def test_failed_manual_recap_prints_one_line(kc) -> None:  # type: ignore[no-untyped-def]
    messages = execute(kc, "%recap --model bedrock:titan")
    assert not [m for m in messages if m["msg_type"] == "error"]
    out = stream_text(messages).strip()
    assert out.startswith("recap: no recap (") and "\n" not in out
    assert "Traceback" not in out
