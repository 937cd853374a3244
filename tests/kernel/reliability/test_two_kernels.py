"""Two live kernels on one notebook never share a session record.

What used to happen: both kernels resumed the notebook's latest session, appended to one
``.jsonl`` interleaved, and the header was last-writer-wins, so one kernel's task list was lost.
Now each live kernel owns its session (a lock the system drops with the process); a second
kernel on the same notebook starts its own and can still bring the other's story in with
``%recap resume``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelutil import execute, running_kernel, stream_text

pytestmark = pytest.mark.timeout(180)

SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())\nimport jupyter_recap as jr"


def _env(store: Path, notebook: str) -> dict[str, str]:
    return {
        "JUPYTER_RECAP_HOME": str(store),
        "JPY_SESSION_NAME": notebook,
        "JUPYTER_RECAP_MODEL": "offline",
        "JUPYTER_RECAP_AUTO": "0",
    }


def _session_id(kc: object) -> str:
    """Save the kernel's session now; its full id."""
    out = stream_text(
        execute(
            kc,
            "%recap save\nfrom jupyter_recap.ipython.extension import extension_for\n"
            "print(extension_for(get_ipython()).writer.id)",
        )
    )
    saved, session_id = out.splitlines()
    assert "saved" in saved, out
    return session_id


def _lines(store: Path, prefix: str) -> list[dict[str, object]]:
    (path,) = store.glob(f"{prefix}*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_kernels_on_one_notebook_write_their_own_sessions(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "billing.ipynb")
    # An earlier kernel left a session: the first kernel of today resumes it.
    with running_kernel(_env(store, notebook)) as old:
        execute(old, SETUP + "\n%load_ext jupyter_recap")
        execute(old, "%%agent\nyesterday: migrate the billing tables")
        yesterday = _session_id(old)

    with running_kernel(_env(store, notebook)) as a, running_kernel(_env(store, notebook)) as b:
        execute(a, SETUP + "\n%load_ext jupyter_recap")
        execute(b, SETUP + "\n%load_ext jupyter_recap")
        for n in range(3):  # interleaved activity, as two tabs would make
            execute(a, f"%%agent\nA step {n}")
            execute(b, f"%%agent\nB step {n}")
        execute(a, "jr.todo_write(['A plan'])")
        execute(b, "jr.todo_write(['B plan'])")
        a_id, b_id = _session_id(a), _session_id(b)
        assert a_id == yesterday  # the first kernel continued the stored session
        assert b_id != a_id  # the second started its own instead of sharing it

        a_lines = [x.get("text") for x in _lines(store, a_id) if x["kind"] == "user"]
        b_lines = [x.get("text") for x in _lines(store, b_id) if x["kind"] == "user"]
        assert a_lines == [
            "yesterday: migrate the billing tables",
            "A step 0",
            "A step 1",
            "A step 2",
        ]
        assert b_lines == ["B step 0", "B step 1", "B step 2"]
        headers = {p.stem: json.loads(p.read_text()) for p in store.glob("*.json")}
        assert [t["text"] for t in headers[a_id]["tasks"]] == ["A plan"]
        assert [t["text"] for t in headers[b_id]["tasks"]] == ["B plan"]

        # B brings A's story in explicitly: it continues as a new session of B's own.
        out = stream_text(execute(b, f"%recap resume {a_id}"))  # the full id: unambiguous
        assert "open in another kernel" in out
        texts = stream_text(execute(b, "print([e.text for e in jr.current() if e.kind == 'user'])"))
        assert "A step 2" in texts and "B step" not in texts
        execute(b, "%%agent\nB continues A's work")
        forked = _session_id(b)
        assert forked not in (a_id, b_id)
        execute(a, "%%agent\nA goes on")
        assert _session_id(a) == a_id  # A still writes its own record
        assert [x.get("text") for x in _lines(store, a_id) if x["kind"] == "user"][
            -1
        ] == "A goes on"
        fork_texts = [x.get("text") for x in _lines(store, forked) if x["kind"] == "user"]
        assert fork_texts[-2:] == ["A step 2", "B continues A's work"]
        fork_header = json.loads(next(store.glob(f"{forked}*.json")).read_text())
        assert fork_header["parent"] == a_id

    # Both kernels are gone and their locks with them: the next kernel resumes the newest.
    records = [json.loads(p.read_text()) for p in store.glob("*.json")]
    newest = max(records, key=lambda h: h["updated"])["id"]
    with running_kernel(_env(store, notebook)) as c:
        execute(c, SETUP + "\n%load_ext jupyter_recap")
        assert _session_id(c) == newest
