"""End to end in a real kernel: agent cells are recorded and %recap shows the banner widget."""

from __future__ import annotations

import re
from typing import Any

import pytest
from kernelutil import collect_until, execute, running_kernel, stream_text, widget_states

pytestmark = pytest.mark.timeout(120)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def displayed_widgets(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]["data"][WIDGET_VIEW]["model_id"]
        for m in messages
        if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]
    ]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Any:
    log = tmp_path_factory.mktemp("kernel") / "recap.log"
    with running_kernel({"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(log)}) as kc:
        setup = "import agentmagic; agent = agentmagic.install(get_ipython())"
        assert not [m for m in execute(kc, setup) if m["msg_type"] == "error"]
        load = execute(kc, "%load_ext jupyter_recap")
        yield kc, load


@pytest.fixture(autouse=True)
def fresh_story(kernel: Any) -> None:
    """Each test starts a new story in the module's kernel (one kernel, as ipykernel's own
    suite shares one): what an earlier test recorded is no part of this one's recap."""
    kc, _ = kernel
    execute(kc, "import jupyter_recap as jr; jr.current().clear()", store_history=False)


def test_loading_leaves_an_empty_output_for_the_banner(kernel: Any) -> None:
    """The banner widget is made when it first has something to show, not at load (ipywidgets
    stays unimported in a kernel that never shows a recap): the load leaves an empty output
    under the banner's display id, which the banner fills when it is made."""
    _, load = kernel
    assert displayed_widgets(load) == []
    assert not [m for m in load if m["msg_type"] == "comm_open"]
    (placeholder,) = [m for m in load if m["msg_type"] == "display_data"]
    assert placeholder["content"]["data"] == {"text/plain": ""}
    assert placeholder["content"]["transient"]["display_id"].startswith("jupyter-recap-banner-")


def test_recap_cell_carries_the_banner_with_the_recap(kernel: Any) -> None:
    kc, load = kernel
    (placeholder,) = [m for m in load if m["msg_type"] == "display_data"]
    live = placeholder["content"]["transient"]["display_id"]
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
    (banner_id,) = displayed_widgets(messages)  # made now, shown in this cell
    messages += collect_until(
        kc,
        lambda more: "shown" in [s.get("state") for s in widget_states(messages + more, banner_id)],
    )
    # ... and in the live output the load left for it
    filled = [
        m
        for m in messages
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == live
        and WIDGET_VIEW in m["content"]["data"]
    ]
    assert filled and filled[0]["content"]["data"][WIDGET_VIEW]["model_id"] == banner_id
    final: dict[str, Any] = {}
    states = widget_states(messages, banner_id)
    for state in states:
        final.update(state)
    assert any(s.get("state") == "drafting" for s in states)  # visible while in flight
    assert final["state"] == "shown"
    assert final["model"] == "offline"
    assert "invoices.ts" in final["text"] and "Next: Repoint" in final["text"]
    assert stream_text(messages) == ""  # nothing printed into the cell on success


def agent_turns(status: str) -> int:
    found = re.search(r"(\d+) agent turns", status)
    assert found, status
    return int(found.group(1))


def test_recap_cells_are_not_recorded_and_status_reports(kernel: Any) -> None:
    kc, _ = kernel
    before = agent_turns(stream_text(execute(kc, "%recap status")))
    execute(kc, "agent.script.append(lambda p: print('Next: rerun the migration.'))")
    execute(kc, "%%agent\nrepoint the invoices FK")
    execute(kc, "%recap")
    out = stream_text(execute(kc, "%recap status"))
    assert "offline" in out and agent_turns(out) == before + 1 and "focus:" in out
    kinds = stream_text(
        execute(kc, "import jupyter_recap as jr; print([e.kind for e in jr.current()][-4:])")
    )
    # The turn, then what the person was shown (recorded, kept out of the next context); the
    # %recap cells themselves are not recorded.
    assert kinds.strip() == "['user', 'assistant', 'outcome', 'recap']"


def test_failed_manual_recap_prints_one_line(kernel: Any) -> None:
    kc, _ = kernel
    messages = execute(kc, "%recap --model bedrock:titan")
    assert not [m for m in messages if m["msg_type"] == "error"]
    out = stream_text(messages).strip()
    assert out.startswith("recap: no recap (") and "\n" not in out
    assert "Traceback" not in out


def test_the_live_demo_notebook_runs(tmp_path: Any) -> None:
    """The demo's own cells (extension, stand-in agent, one agent turn) work in a kernel."""
    import json
    from pathlib import Path

    demo = Path(__file__).parents[2] / "notebooks" / "recap_loop_demo.ipynb"
    cells = [
        "".join(c["source"])
        for c in json.loads(demo.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    load, define, first_turn = cells[0], cells[1], cells[2]
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log")}
    with running_kernel(env) as kc:
        for source in (load, define, first_turn.replace("%%agent 3", "%%agent 0.1", 1)):
            assert not [m for m in execute(kc, source) if m["msg_type"] == "error"], source
        out = stream_text(execute(kc, "%recap status"))
        assert "1 agent turns" in out and "away 15 s" in out
        todos = stream_text(execute(kc, "%todos"))  # the stand-in agent keeps a plan
        assert todos.startswith("tasks ####........ 1/3\n[x] copy customers and payments")
