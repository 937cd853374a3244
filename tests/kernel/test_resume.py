"""Session records in real kernels: a restart resumes the notebook's story, and only its own."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kernelutil import (
    banner_id,
    collect_until,
    execute,
    running_kernel,
    stream_text,
    widget_states,
)

pytestmark = pytest.mark.timeout(120)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())"


def env_for(store: Path, notebook: str) -> dict[str, str]:
    return {
        "JUPYTER_RECAP_HOME": str(store),
        "JPY_SESSION_NAME": notebook,
        "JUPYTER_RECAP_MODEL": "offline",
        "JUPYTER_RECAP_LOG": str(store.parent / "recap.log"),
    }


def shown_in(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The banner states among ``messages`` that put a recap on screen."""
    return [s for s in banner_states(messages) if s.get("state") == "shown"]


def banner_states(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The banner is made with its first recap: it fills the live output the load left.
    banner = banner_id(messages)
    if banner is None:
        return []
    return [
        m["content"]["data"]["state"]
        for m in messages
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == banner
    ]


def test_restart_resumes_with_a_recap_and_other_notebooks_stay_apart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    billing = str(tmp_path / "billing.ipynb")
    with running_kernel(env_for(store, billing)) as kc:
        execute(kc, SETUP)
        execute(kc, "%load_ext jupyter_recap")
        execute(kc, "agent.script.append(lambda p: print('Next: repoint the invoices FK.'))")
        execute(kc, "%%agent\nmigrate the billing tables to the v2 schema")
        saved = stream_text(execute(kc, "%recap save"))
        assert saved.startswith("recap: session ") and "saved" in saved
    session_id = saved.split()[2]

    # The kernel restarts: loading the extension brings the session back with a recap.
    with running_kernel(env_for(store, billing)) as kc:
        execute(kc, SETUP)
        messages = execute(kc, "%load_ext jupyter_recap")
        messages += collect_until(kc, lambda more: bool(shown_in(messages + more)))
        shown = shown_in(messages)
        assert shown, "no resume recap appeared"
        assert shown[-1]["reason"] == "resume"
        assert "Migrate the billing tables" in shown[-1]["text"]
        kinds = stream_text(
            execute(kc, "import jupyter_recap as jr; print([e.kind for e in jr.current()])")
        )
        assert "'user', 'assistant', 'outcome'" in kinds
        status = stream_text(execute(kc, "%recap status"))
        assert f"session:     {session_id}" in status
        # The session's writer stores what the person was told on its own schedule; wait for
        # it (the kernel is killed below, before any exit-time flush).
        told = "✦ Task: Migrate the billing tables"
        deadline = time.monotonic() + 30
        while told not in stream_text(execute(kc, "%recap sessions --all")):
            assert time.monotonic() < deadline, "the shown recap was never stored"
            time.sleep(0.1)

    # Another notebook sees nothing of it, but can list and attach it explicitly.
    with running_kernel(env_for(store, str(tmp_path / "forecast.ipynb"))) as kc:
        execute(kc, SETUP)
        messages = execute(kc, "%load_ext jupyter_recap")
        # Loading decides whether to resume (and starts that draft) before it returns: no
        # draft started means no resume recap is coming, without waiting to see none arrive.
        started = "print(ext_for(get_ipython()).schedule.counters.drafts_started)"
        code = f"from jupyter_recap.ipython.extension import extension_for as ext_for\n{started}"
        assert stream_text(execute(kc, code, store_history=False)).strip() == "0"
        assert not shown_in(messages)
        assert "[]" in stream_text(
            execute(kc, "import jupyter_recap as jr; print([e.kind for e in jr.current()])")
        )
        assert session_id not in stream_text(execute(kc, "%recap sessions"))
        listing = stream_text(execute(kc, "%recap sessions --all"))
        assert session_id in listing and "Migrate the billing tables" in listing
        assert "✦ Task: Migrate the billing tables" in listing  # what the person was told
        resumed = stream_text(execute(kc, f"%recap resume {session_id}"))
        assert resumed.startswith(f"recap: resumed session {session_id}")
        bad = stream_text(execute(kc, "%recap resume ../etc"))
        assert bad.startswith("recap: not a session id") and bad.count("\n") == 1


PLAN = """import jupyter_recap as jr
jr.todo_write([
    {"text": "read the loader", "status": "completed"},
    {"text": "make two-digit years parse as 19xx", "status": "in_progress"},
    "add a regression test",
])"""


ADVANCE = """import threading
def advance():
    jr.todo_write([
        {"text": "read the loader", "status": "completed"},
        {"text": "make two-digit years parse as 19xx", "status": "completed"},
        {"text": "add a regression test", "status": "in_progress"},
    ])"""


def test_task_list_is_saved_restored_and_shown_under_the_recap(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "loader.ipynb")
    with running_kernel(env_for(store, notebook)) as kc:
        execute(kc, SETUP)
        execute(kc, "%load_ext jupyter_recap")
        execute(kc, "agent.script.append(lambda p: print('I read the loader.'))")
        execute(kc, "%%agent\nfix the CSV loader's date parsing")
        execute(kc, PLAN)
        # An agent working in a background thread moves on two seconds after the recap is shown.
        execute(kc, ADVANCE)
        messages = execute(kc, "threading.Timer(2.0, advance).start()\n%recap")
        banner = banner_id(messages)  # made by this first recap
        assert banner is not None
        shown = [s for s in widget_states(messages, banner) if "text" in s]
        assert shown[-1]["state"] == "shown"
        assert shown[-1]["text"].endswith(
            "Next: Make two-digit years parse as 19xx (1 of 3 tasks done)."
        )
        assert shown[-1]["note"] == "tasks ####........ 1/3"
        # the banner's progress line follows the list without any cell being run
        moved = "tasks ########.... 2/3"
        later = widget_states(
            collect_until(
                kc, lambda ms: moved in [s.get("note") for s in widget_states(ms, banner)]
            ),
            banner,
        )
        progress = {"done": 2, "total": 3, "blocked": 0}
        assert later == [{"note": "tasks ########.... 2/3", "progress": progress}]
        assert "saved" in stream_text(execute(kc, "%recap save"))

    # A restart brings the list back with the session, and the resume recap uses it.
    with running_kernel(env_for(store, notebook)) as kc:
        execute(kc, SETUP)
        messages = execute(kc, "%load_ext jupyter_recap")
        messages += collect_until(kc, lambda more: bool(shown_in(messages + more)))
        shown = shown_in(messages)
        assert shown and shown[-1]["reason"] == "resume"
        assert shown[-1]["text"].endswith("Next: Add a regression test (2 of 3 tasks done).")
        assert shown[-1]["note"] == "tasks ########.... 2/3"
        assert stream_text(execute(kc, "%todos")) == (
            "tasks ########.... 2/3\n"
            "[x] read the loader\n"
            "[x] make two-digit years parse as 19xx\n"
            "[~] add a regression test\n"
        )


# -- a side run in a second kernel does not replace the notebook's story (issue 35.6) -----------

WORK = (
    (
        "Reconcile the refunds ledger against the payment provider's March export",
        "I loaded ledger.csv and the provider export: 412 refunds match, two differ (A-1004 "
        "and A-1017).",
    ),
    (
        "Which orders differ, and by how much?",
        "A-1004 differs by 199 EUR (the monitor) and A-1017 by 12.50 EUR (a fee refunded "
        "twice by the provider).",
    ),
    (
        "Refund the cables on order A-1004 but not the monitor",
        "Done: the ledger now refunds 50 EUR on A-1004 for the cables; the monitor stays charged.",
    ),
    (
        "Write the corrected ledger to refunds_fixed.csv",
        "Wrote refunds_fixed.csv with 414 rows; A-1017 is flagged for finance to reclaim.",
    ),
    (
        "Draft the email to finance about the two mismatches",
        "Drafted the email about A-1004 and A-1017. Next: send the email to finance.",
    ),
)

WRITER = "from jupyter_recap.ipython.extension import extension_for as ext_for\n"


def writer_id(kc: Any) -> str:
    """Save the kernel's session now; its full id."""
    out = stream_text(execute(kc, f"%recap save\n{WRITER}print(ext_for(get_ipython()).writer.id)"))
    saved, session_id = out.splitlines()
    assert "saved" in saved, out
    return session_id


def test_a_side_run_does_not_replace_the_story_a_restart_brings_back(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "refunds.ipynb")
    quiet = {**env_for(store, notebook), "JUPYTER_RECAP_AUTO": "0"}
    with running_kernel(quiet) as lab:
        execute(lab, SETUP)
        execute(lab, "%load_ext jupyter_recap")
        for prompt, answer in WORK:
            execute(lab, f"agent.script.append(lambda p: print({answer!r}))")
            execute(lab, f"%%agent\n{prompt}")
        work = writer_id(lab)
        # Ten seconds in a bare second kernel while the notebook's kernel holds its session.
        with running_kernel(quiet) as side_kernel:
            execute(side_kernel, SETUP)
            execute(side_kernel, "%load_ext jupyter_recap")
            for prompt in ("hi", "are you there", "say ok"):
                execute(side_kernel, f"%%agent\n{prompt}")
            side = writer_id(side_kernel)
    assert side != work

    # The notebook's kernel restarts: its recap tells the notebook's work, not the side run.
    with running_kernel(env_for(store, notebook)) as kc:
        execute(kc, SETUP)
        messages = execute(kc, "%load_ext jupyter_recap")
        messages += collect_until(kc, lambda more: bool(shown_in(messages + more)))
        shown = shown_in(messages)
        assert shown and shown[-1]["reason"] == "resume"
        assert "Reconcile the refunds ledger" in shown[-1]["text"], shown[-1]["text"]
        # It says which sessions it drew from, by the prefixes a listing shows.
        note = stream_text(execute(kc, f"{WRITER}print(ext_for(get_ipython()).session.story_note)"))
        first, second = note.strip().removeprefix("from sessions ").split(" and ")
        assert work.startswith(first) and side.startswith(second), note
        assert shown[-1]["note"].startswith(note.strip()), shown[-1]  # and the banner says it
        # Every recap of this kernel has the whole story; the newest session is continued
        # (written to) and records its frame, so the story holds once it has grown.
        prompts = stream_text(
            execute(
                kc, "import jupyter_recap as jr\nprint(sum(e.kind == 'user' for e in jr.current()))"
            )
        )
        assert prompts.strip() == "8"
        execute(kc, "%%agent\nsend the email to finance")
        assert writer_id(kc) == side
    header = json.loads((store / f"{side}.json").read_text())
    assert header["framed_by"] == [work] and header["turns"] == 4
    own = [json.loads(line) for line in (store / f"{side}.jsonl").read_text().splitlines()]
    assert [e["text"] for e in own if e["kind"] == "user"] == [
        "hi",
        "are you there",
        "say ok",
        "send the email to finance",
    ]
