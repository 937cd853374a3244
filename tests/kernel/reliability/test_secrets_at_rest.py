"""Secrets never reach the disk, and so never reach a process that lacks them.

What used to happen: an agent that printed ``os.environ`` stored the per-server secret and every
key in its session record, and ``jupyter recap ID`` (a process without those variables) sent
them verbatim to the model. Now the kernel redacts what it records before writing it — with
its own environment's secret values — and every outgoing request is redacted again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cliutil import offline_env, run_cli
from fakellm import FakeLLM
from kernelutil import execute, running_kernel, stream_text

pytestmark = pytest.mark.timeout(120)

KERNEL_SECRETS = {
    "OPENAI_API_KEY": "sk-proj-" + "Q7" * 20,
    "JUPYTER_RECAP_SECRET": "per-server-secret-Zk3v9QmR2tX8wLp5",
    "WAREHOUSE_DB_PASSWORD": "correct-horse-battery",  # no recognisable shape: the env says
}
PASTED = "postgresql://admin:Tr0ub4dor-and-3@db.internal:5432/billing"


def test_an_agent_printing_its_environment_stores_no_secret(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "nb.ipynb")
    env = {
        **KERNEL_SECRETS,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # never called: the model is offline
        "JUPYTER_RECAP_HOME": str(store),
        "JPY_SESSION_NAME": notebook,
        "JUPYTER_RECAP_MODEL": "offline",
        "JUPYTER_RECAP_AUTO": "0",
    }
    with running_kernel(env) as kc:
        execute(kc, "import agentmagic, os\nagent = agentmagic.install(get_ipython())")
        execute(kc, "%load_ext jupyter_recap")
        execute(
            kc,
            f"agent.script.append(lambda p: print(dict(os.environ), 'then connect to {PASTED}'))",
        )
        execute(kc, f"%%agent\ndebug the warehouse connection ({PASTED})")
        execute(kc, "import jupyter_recap as jr\njr.todo_write(['rotate " + PASTED + "'])")
        saved = stream_text(execute(kc, "%recap save"))
        assert "saved" in saved
        session_id = saved.split()[2]
        # the live kernel still sees what happened (redaction is for what leaves it)
        live = "print(any('Tr0ub4dor' in e.text for e in jr.current()))"
        assert stream_text(execute(kc, live)) == "True\n"

    on_disk = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    assert b"debug the warehouse connection" in on_disk  # the session is there ...
    for value in [*KERNEL_SECRETS.values(), "Tr0ub4dor-and-3"]:
        assert value.encode() not in on_disk  # ... without a secret in it
    header = json.loads(next(store.glob("*.json")).read_text())
    assert "Tr0ub4dor" not in header["title"] and "[redacted]" in header["title"]

    # A shell without the kernel's variables recaps it through a model: nothing secret goes.
    with FakeLLM() as fake:
        cli_env = offline_env(
            OPENAI_API_KEY="sk-cli-" + "x" * 24,
            OPENAI_BASE_URL=fake.url + "/v1",
            JUPYTER_RECAP_HOME=str(store),
        )
        result = run_cli(session_id, "--model", "openai:gpt-4o-mini", cwd=tmp_path, env=cli_env)
        assert result.returncode == 0, result.stderr
        assert fake.requests
        sent = json.dumps([r.body for r in fake.requests])
    assert "debug the warehouse connection" in sent
    for value in [*KERNEL_SECRETS.values(), "Tr0ub4dor-and-3"]:
        assert value not in sent
