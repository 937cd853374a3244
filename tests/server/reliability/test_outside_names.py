"""An MCP client that names itself with escapes and controls is named in plain words.

An attack connected MCP clients to Jupyter AI's MCP server (jupyter_server_mcp, in the Jupyter
server) whose ``clientInfo`` name and title held terminal escapes, a bell, NUL and a
right-to-left override, and had them edit a notebook: the notebook's change line ("— by …")
named them with all of it, since the attribution only collapsed their whitespace. A persona
named by Jupyter AI's identity header, which the persona manager does not know, fared the same
with the C1 controls a header can carry.

Real clients over HTTP, a real server with our extension; the touches the change line is made
from must name each client with no unsafe character and no escape's payload, and still by the
words of its name.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest

from jupyter_recap.textutil import UNSAFE_CHARS

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(
        "ignore:Extension endpoints without:jupyter_server.utils.JupyterServerAuthWarning"
    ),
]

NOTEBOOK = "churn.ipynb"
PAYLOAD = "pwned"
HOSTILE_NAMES = [
    # (name, title, the words the change line keeps)
    (f"\x1b]0;{PAYLOAD}\x07Claude\x1b[31m Code\x1b[0m\x07", None, "Claude Code"),
    ("codex", f"Co\u202edex\u202c\x00\x1b]52;c;{PAYLOAD}\x1b\\ CLI\x7f\x9b", "Codex CLI"),
    (f"cursor\x1b]8;;http://{PAYLOAD}/\x1b\\\x00\x08\x1b[8m", None, "cursor"),
]


@pytest.fixture  # type: ignore[no-redef]
def jp_server_config() -> Any:
    """Our extension and Jupyter AI's MCP server, on a port the system picks, serving only this
    module's tool."""
    from traitlets.config import Config

    return Config(
        {
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_recap": True,
                    "jupyter_server_terminals": False,
                    "jupyter_server_mcp": True,
                },
                "allow_unauthenticated_access": False,
            },
            "RecapServer": {"reconcile_interval": 0.5},
            "MCPExtensionApp": {
                "mcp_port": 0,
                "use_tool_discovery": False,
                "mcp_tools": [f"{__name__}:add_cell"],
            },
            "MCPServer": {"host": "127.0.0.1"},
        }
    )


def add_cell(file_path: str, source: str) -> dict[str, Any]:
    """Append a code cell to a notebook (the tool this module gives jupyter_server_mcp)."""
    from jupyter_server.serverapp import ServerApp

    path = Path(ServerApp.instance().root_dir) / file_path
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = {"cell_type": "code", "id": f"c{len(notebook['cells'])}", "metadata": {}}
    notebook["cells"].append({**cell, "source": source, "outputs": [], "execution_count": None})
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return {"success": True}


def unsafe(text: str) -> bool:
    return PAYLOAD in text or any(c in UNSAFE_CHARS for c in text)


@asynctest
async def test_hostile_mcp_client_names_reach_the_change_line_printable(
    jp_serverapp: Any, jp_root_dir: Path, recap: Any, http_server: Any
) -> None:
    import mcp.types
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (jp_root_dir / NOTEBOOK).write_text(json.dumps(notebook), encoding="utf-8")
    await jp_serverapp.extension_manager.start_all_extensions()
    deadline = time.monotonic() + 10
    while recap.sources["server-mcp"].attached is None:
        assert time.monotonic() < deadline, "jupyter_server_mcp never started"
        await asyncio.sleep(0.05)
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_server_mcp"]
    url = f"http://127.0.0.1:{app.mcp_server_instance.port}/mcp"

    for name, title, _ in HOSTILE_NAMES:
        info = mcp.types.Implementation(name=name, title=title, version="1")
        async with Client(StreamableHttpTransport(url), client_info=info) as client:
            await client.call_tool("add_cell", {"file_path": NOTEBOOK, "source": "x = 1"})
    # A persona id the persona manager does not know, with C1 controls in it: the bytes a
    # header may carry beyond ASCII, which the server reads as Latin-1.
    persona_id = "jupyter-ai-personas::pkg::Cl\x9baude\x85\x90".encode("latin-1")
    persona: Any = {"X-JupyterAI-Persona-Id": persona_id}
    async with Client(StreamableHttpTransport(url, headers=persona)) as client:
        await client.call_tool("add_cell", {"file_path": NOTEBOOK, "source": "y = 2"})

    names = [touch.who for touch in recap.touches.since(NOTEBOOK, 0)]
    assert len(names) == len(HOSTILE_NAMES) + 1, names
    assert [name for name in names if unsafe(name)] == []
    for (_, _, words), name in zip(HOSTILE_NAMES, names, strict=False):
        assert name == words, names
    assert names[-1] == "Claude", names
