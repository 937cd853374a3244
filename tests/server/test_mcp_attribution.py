"""Notebook changes made through MCP servers are attributed to them (jupyter_recap.outside.mcp
and its three adapters in jupyter_recap.server.outside).

Each source against the real thing, in a real jupyter_server with our extension:

- jupyter-mcp-server as an extension of the server, driven by a real MCP client over HTTP
  through its own tools (``use_notebook``, ``insert_cell``, ``overwrite_cell_source``,
  ``execute_cell`` on a cell that raises, ``delete_cell``): the touches of the notebook name it,
  with the cells edited, the runs and the failed one;
- jupyter-mcp-server as its own process, seen through its OpenTelemetry span file: the lines
  are written by jupyter-mcp-server's own exporter (``create_otel_handler``), fired in the order
  its tools fire their hooks, appended while the server runs;
- jupyter_server_mcp (Jupyter AI's MCP server in the Jupyter server) on a free port, serving
  tools that edit and run a notebook, called by real MCP clients: the touches name the client
  (its own name, or Jupyter AI's persona from the identity headers), else say "an MCP client".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from outsidekit import FakeSink
from server_fixtures import *  # noqa: F403
from server_fixtures import asynctest

from jupyter_recap.changes.touches import Touch

pytestmark = pytest.mark.filterwarnings(
    # The MCP extensions' own routes, not ours (tests/server checks our routes' auth).
    "ignore:Extension endpoints without:jupyter_server.utils.JupyterServerAuthWarning"
)

NOTEBOOK = "analysis/churn.ipynb"
CELLS = ["import math", "rows = 1 / 0", "print('done')"]

#: jupyter-mcp-server as an extension of this server, with the extensions its tools use: the
#: execution stack (jupyter-server-nbmodel) and file ids.
MCP_EXTENSION = {"jupyter_mcp_server": True, "jupyter_server_nbmodel": True}
MCP_EXTENSION |= {"jupyter_server_fileid": True}
MCP_EXTENSION_CONFIG: dict[str, Any] = {
    # No notebook enrolled at start, and no JupyterLab front end to ask for its commands.
    "JupyterMCPServerExtensionApp": {"document_id": "", "jupyterlab": False},
}
#: Jupyter AI's MCP server: on a port the system picks, serving only this module's tools.
SERVER_MCP = {"jupyter_server_mcp": True}
SERVER_MCP_CONFIG: dict[str, Any] = {
    "MCPExtensionApp": {
        "mcp_port": 0,
        "use_tool_discovery": False,
        "mcp_tools": [f"{__name__}:add_cell", f"{__name__}:run_cell", f"{__name__}:read_cell"],
    },
    "MCPServer": {"host": "127.0.0.1"},
}


@pytest.fixture
def mcp_extensions() -> dict[str, bool]:
    """The MCP servers' extensions on in this test's server (none unless it asks)."""
    return {}


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    return {}


@pytest.fixture
def span_file(tmp_path: Path) -> Path:
    return tmp_path / "spans" / "jupyter-mcp.jsonl"


@pytest.fixture  # type: ignore[no-redef]
def jp_server_config(
    mcp_extensions: dict[str, bool], mcp_config: dict[str, Any], span_file: Path
) -> Any:
    """Our extension, the MCP extensions the test asks for, and the span file to tail."""
    from traitlets.config import Config

    extensions = {"jupyter_recap": True, "jupyter_server_terminals": False, **mcp_extensions}
    return Config(
        {
            "ServerApp": {"jpserver_extensions": extensions, "allow_unauthenticated_access": False},
            "RecapServer": {"reconcile_interval": 0.5, "mcp_otel_file": str(span_file)},
            **mcp_config,
        }
    )


def code_cell(number: int, source: str) -> dict[str, Any]:
    cell = {"cell_type": "code", "id": f"cell-{number}", "metadata": {}, "source": source}
    return {**cell, "outputs": [], "execution_count": None}


def write_notebook(root: Path, path: str, sources: list[str]) -> None:
    notebook = {
        "cells": [code_cell(n, source) for n, source in enumerate(sources)],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(json.dumps(notebook), encoding="utf-8")


def totals(touches: list[Touch]) -> tuple[int, int, int]:
    return (
        sum(t.edited for t in touches),
        sum(t.ran for t in touches),
        sum(t.failed for t in touches),
    )


async def until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def text(result: Any) -> str:
    return "\n".join(getattr(item, "text", "") for item in result.content)


# -- jupyter-mcp-server as an extension of this server -----------------------------------------


@pytest.mark.parametrize(("mcp_extensions", "mcp_config"), [(MCP_EXTENSION, MCP_EXTENSION_CONFIG)])
@asynctest
async def test_jupyter_mcp_server_tools_are_attributed_to_it(
    jp_serverapp: Any, jp_root_dir: Path, jp_base_url: str, recap: Any, http_server: Any
) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    write_notebook(jp_root_dir, NOTEBOOK, CELLS)
    await until(lambda: recap.sources["mcp-hooks"].hooked)
    url = f"http://127.0.0.1:{jp_serverapp.port}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token
    transport = StreamableHttpTransport(url, headers={"Authorization": f"token {token}"})
    async with Client(transport, timeout=120) as client:
        used = await client.call_tool(
            "use_notebook", {"notebook_name": "churn", "notebook_path": NOTEBOOK}
        )
        assert "churn" in text(used)
        assert recap.touches.since(NOTEBOOK, 0) == []  # connecting changes nothing
        await client.call_tool(
            "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "rows"}
        )
        await client.call_tool("overwrite_cell_source", {"cell_index": 0, "cell_source": "x = 2"})
        outputs = await client.call_tool("execute_cell", {"cell_index": 1, "timeout": 90})
        assert "ZeroDivisionError" in text(outputs)
        await client.call_tool("delete_cell", {"cell_indices": [2, 3]})
        await client.call_tool("read_notebook", {"notebook_name": "churn"})
    # jupyter-server-nbmodel 0.1.3 never stops its execution stack (its stop_extension looks for
    # the stack under a name it is not stored under): stopped here, while the loop still runs.
    (nbmodel,) = jp_serverapp.extension_manager.extension_apps["jupyter_server_nbmodel"]
    with contextlib.suppress(asyncio.CancelledError):
        await nbmodel._Extension__execution_stack.dispose()
    touches = recap.touches.since(NOTEBOOK, 0)
    assert {t.who for t in touches} == {"jupyter-mcp-server"}
    # inserted 1, overwrote 1, deleted 2; one run, which failed
    assert totals(touches) == (4, 1, 1)
    assert recap.touches.who_since(NOTEBOOK, 0) == ["jupyter-mcp-server"]


# -- jupyter-mcp-server as its own process: its span file ----------------------------------------

#: A span as jupyter-mcp-server's exporter writes it (one JSON line), from before the server
#: started: the tail starts at the file's end, so it is never attributed.
OLD_SPANS: list[dict[str, Any]] = [
    {
        "name": "kernel_lifecycle",
        "context": {"trace_id": "0x33da", "span_id": "0x3e75", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2026-12-02T09:40:40.781085Z",
        "end_time": "2026-12-02T09:40:40.781096Z",
        "status": {"status_code": "UNSET"},
        "attributes": {"event_type": "started", "kernel.id": "k0", "kernel.name": "report"},
        "events": [],
        "links": [],
        "resource": {
            "attributes": {"service.instance.id": "old", "service.name": "unknown_service"},
            "schema_url": "",
        },
    },
    {
        "name": "tool_call:insert_cell",
        "context": {"trace_id": "0x90dd", "span_id": "0xe76c", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2026-12-02T09:40:41.781040Z",
        "end_time": "2026-12-02T09:40:41.781963Z",
        "status": {"status_code": "UNSET"},
        "attributes": {"tool.name": "insert_cell", "result.summary": "Cell inserted"},
        "events": [],
        "links": [],
        "resource": {
            "attributes": {"service.instance.id": "old", "service.name": "unknown_service"},
            "schema_url": "",
        },
    },
]
TRACEBACK = (
    "-----\nZeroDivisionError    Traceback (most recent call last)\nCell In[1], line 1\n"
    "----> 1 rows = 1 / 0\n\nZeroDivisionError: division by zero"
)


@pytest.fixture
def old_spans(span_file: Path) -> Path:
    span_file.parent.mkdir(parents=True, exist_ok=True)
    span_file.write_text("".join(json.dumps(span) + "\n" for span in OLD_SPANS))
    return span_file


class McpProcess:
    """Fires jupyter-mcp-server's hook events as its tools do, into its own span exporter (the
    handler its ``JUPYTER_MCP_OTEL_FILE`` registers), as its process would."""

    def __init__(self, span_file: Path) -> None:
        from jupyter_mcp_server.otel_hook import create_otel_handler

        self.handler = create_otel_handler(file_path=span_file)

    async def fire(self, event: str, **data: Any) -> None:
        from jupyter_mcp_server.hooks import HookEvent

        await self.handler.on_event(HookEvent(event), **data)

    async def tool(self, name: str, result: Any = "", error: Exception | None = None) -> None:
        await self.tool_around(name, None, result=result, error=error)

    async def tool_around(
        self, name: str, inside: Any, result: Any = "", error: Exception | None = None
    ) -> None:
        context: dict[str, Any] = {}
        await self.fire("before_tool_call", tool_name=name, arguments={}, context=context)
        if inside is not None:
            await inside()
        await self.fire(
            "after_tool_call",
            tool_name=name,
            arguments={},
            result=None if error else result,
            error=error,
            context=context,
        )

    async def use_notebook(self, name: str, kernel_id: str) -> None:
        async def lifecycle() -> None:
            data = {"event_type": "started", "kernel_id": kernel_id, "kernel_name": name}
            await self.fire("kernel_lifecycle", context={}, **data)

        await self.tool_around("use_notebook", lifecycle, result=f"activated '{name}'")

    async def execute_cell(self, kernel_id: str, outputs: list[str]) -> None:
        async def run() -> None:
            context: dict[str, Any] = {}
            data = {"code": "rows = 1 / 0", "kernel_id": kernel_id, "metadata": {}}
            await self.fire("before_execute", context=context, **data)
            await self.fire("after_execute", outputs=outputs, error=None, context=context, **data)

        await self.tool_around("execute_cell", run, result=outputs)


@asynctest
async def test_a_jupyter_mcp_server_process_is_attributed_from_its_span_file(
    old_spans: Path, jp_fetch: Any, jp_root_dir: Path, recap: Any
) -> None:
    write_notebook(jp_root_dir, NOTEBOOK, CELLS)
    write_notebook(jp_root_dir, "report.ipynb", ["summary"])
    # The person's notebook has a kernel (a session of this server); the agent connects to it.
    body = {"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    session = json.loads(
        (await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body
    )
    kernel_id = session["kernel"]["id"]
    await until(lambda: recap.sources["mcp-spans"].otel_file == str(old_spans))
    process = McpProcess(old_spans)
    await process.use_notebook("churn", kernel_id)
    await process.tool("insert_cell", result="Cell inserted successfully at index 3 (code)!")
    await process.tool("overwrite_cell_source", result="Cell 0 overwritten successfully!")
    await process.execute_cell(kernel_id, [TRACEBACK])
    await process.tool("delete_cell", error=ValueError("Cell index 9 out of range"))
    await process.tool("read_notebook", result="Index\tType\tCount\tFirst Line")
    # Then a notebook it made itself: the name it gave it is the notebook's at the root.
    await process.use_notebook("report", "a-kernel-of-its-own")
    await process.tool("insert_cell", result="Cell inserted successfully at index 1 (code)!")
    # A line caught half-written is read once it ends.
    last = json.loads(old_spans.read_text().splitlines()[-1])
    line = json.dumps(dict(last, end_time="2026-12-02T13:40:40.781963Z")) + "\n"
    with old_spans.open("a") as spans:
        spans.write(line[:40])
    await asyncio.sleep(2.5)
    with old_spans.open("a") as spans:
        spans.write(line[40:])

    await until(lambda: totals(recap.touches.since("report.ipynb", 0)) == (2, 0, 0), timeout=10)
    touches = recap.touches.since(NOTEBOOK, 0)
    assert {t.who for t in touches} == {"jupyter-mcp-server"}
    assert totals(touches) == (2, 1, 1)  # inserted, overwrote; the run failed; the delete did not
    written = [t.at for t in recap.touches.since("report.ipynb", 0)]
    ended = datetime(2026, 12, 2, 13, 40, 40, 781963, tzinfo=timezone.utc)
    assert written[-1] == pytest.approx(ended.timestamp())  # the span's own end
    assert abs(written[0] - time.time()) < 60


# -- jupyter_server_mcp: Jupyter AI's MCP server in the Jupyter server ---------------------------


def add_cell(file_path: str, source: str) -> dict[str, Any]:
    """Append a code cell to a notebook (a tool this module gives jupyter_server_mcp)."""
    from jupyter_server.serverapp import ServerApp

    path = Path(ServerApp.instance().root_dir) / file_path
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["cells"].append(code_cell(len(notebook["cells"]), source))
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return {"success": True}


async def run_cell(file_path: str, cell_index: int) -> str:
    """Run a cell of a notebook (this one says the cell raised, as a kernel's traceback)."""
    return TRACEBACK


def read_cell(file_path: str, cell_index: int) -> str:
    """Read a cell of a notebook."""
    return "summary"


class PersonaManager:
    """What Jupyter AI's persona manager keeps of one chat: its personas and its file."""

    def __init__(self, personas: dict[str, Any], chat: str) -> None:
        self.personas, self.chat = personas, chat

    def get_chat_path(self, relative: bool = False) -> str:
        return self.chat


class Persona:
    name = "Claude"


CLAUDE_ACP = "jupyter-ai-personas::jupyter_ai_acp_client::ClaudeAcpPersona"


@pytest.mark.parametrize(("mcp_extensions", "mcp_config"), [(SERVER_MCP, SERVER_MCP_CONFIG)])
@asynctest
async def test_jupyter_server_mcp_tool_calls_are_attributed_to_the_client(
    jp_serverapp: Any, jp_root_dir: Path, recap: Any, http_server: Any
) -> None:
    import mcp.types
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    write_notebook(jp_root_dir, NOTEBOOK, CELLS)
    write_notebook(jp_root_dir, "report.ipynb", ["summary"])
    write_notebook(jp_root_dir.parent, "outside.ipynb", ["secret"])
    jp_serverapp.web_app.settings.setdefault("jupyter-ai", {})["persona-managers"] = {
        "chat-1": PersonaManager({CLAUDE_ACP: Persona()}, "analysis/churn.chat")
    }
    # As the server starts it: jupyter_server_mcp makes its MCP server only then, after ours.
    await jp_serverapp.extension_manager.start_all_extensions()
    await until(lambda: recap.sources["server-mcp"].attached is not None, timeout=10)
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_server_mcp"]
    url = f"http://127.0.0.1:{app.mcp_server_instance.port}/mcp"

    claude_code = mcp.types.Implementation(name="claude-code", title="Claude Code", version="2")
    async with Client(StreamableHttpTransport(url), client_info=claude_code) as client:
        await client.call_tool("add_cell", {"file_path": NOTEBOOK, "source": "rows = 2"})
        await client.call_tool("run_cell", {"file_path": NOTEBOOK, "cell_index": 1})
        await client.call_tool("read_cell", {"file_path": NOTEBOOK, "cell_index": 1})
        # Absolute, inside the root: the same notebook.
        absolute = str(jp_root_dir / NOTEBOOK)
        await client.call_tool("add_cell", {"file_path": absolute, "source": "rows"})
        # Outside the server's root: whatever the tool did there is not the server's notebook.
        await client.call_tool("add_cell", {"file_path": "../outside.ipynb", "source": "x"})
    async with Client(StreamableHttpTransport(url)) as client:  # a client that names nobody
        await client.call_tool("add_cell", {"file_path": "report.ipynb", "source": "x"})
    persona = {"X-Jupyter-Chat-Id": "chat-1", "X-JupyterAI-Persona-Id": CLAUDE_ACP}
    async with Client(StreamableHttpTransport(url, headers=persona)) as client:
        await client.call_tool("run_cell", {"file_path": "report.ipynb", "cell_index": 0})

    churn = recap.touches.since(NOTEBOOK, 0)
    assert {t.who for t in churn} == {"Claude Code"}
    assert totals(churn) == (2, 1, 1)
    report = recap.touches.since("report.ipynb", 0)
    assert [(t.who, t.edited, t.ran, t.failed) for t in report] == [
        ("an MCP client via jupyter_server_mcp", 1, 0, 0),
        ("Claude via churn.chat", 0, 1, 1),
    ]
    assert recap.touches.since("../outside.ipynb", 0) == []
    assert recap.touches.since("outside.ipynb", 0) == []


# -- the parts, alone ---------------------------------------------------------------------------


def test_only_notebooks_under_the_root_are_named(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "analysis").mkdir(parents=True)
    (tmp_path / "link").symlink_to(root)
    from jupyter_recap.outside.mcp import notebook_path

    def named(raw: object) -> str | None:
        return notebook_path(str(root), raw)

    assert named("analysis/churn.ipynb") == "analysis/churn.ipynb"
    assert named("./analysis//churn.ipynb") == "analysis/churn.ipynb"
    assert named(str(root / "analysis" / "churn.ipynb")) == "analysis/churn.ipynb"
    assert named(str(tmp_path / "link" / "churn.ipynb")) == "churn.ipynb"
    for outside in ("../churn.ipynb", "analysis/../../churn.ipynb", str(tmp_path / "churn.ipynb")):
        assert named(outside) is None, outside
    for other in ("analysis/train.py", "", None, 3, "a\x00.ipynb", "x" * 5000 + ".ipynb"):
        assert named(other) is None, other


def test_the_span_file_is_this_servers_variable_unless_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_recap.outside.mcp import OTEL_ENV
    from jupyter_recap.server.outside.mcp_spans import McpSpanSource

    def span_file(configured: str) -> str | None:
        source = McpSpanSource(FakeSink(tmp_path), configured)
        source.start()
        source.stop()
        return source.otel_file

    monkeypatch.setenv(OTEL_ENV, str(tmp_path / "from-env.jsonl"))
    assert span_file("") == str(tmp_path / "from-env.jsonl")
    assert span_file(str(tmp_path / "configured.jsonl")) == str(tmp_path / "configured.jsonl")
    monkeypatch.delenv(OTEL_ENV)
    assert span_file("") is None


def test_the_tail_reads_whole_lines_only_and_skips_one_too_long(tmp_path: Path) -> None:
    from jupyter_recap.outside.mcp import LINE_BYTES, SpanTail

    path = tmp_path / "spans.jsonl"
    path.write_bytes(b'{"old": 1}\n')
    tail = SpanTail(str(path))
    tail.start_at_end()
    assert tail.read_lines() == []  # what was there before is not news
    with path.open("ab") as file:
        file.write(b'{"a": 1}\n{"b"')
    assert tail.read_lines() == [b'{"a": 1}']
    assert tail.read_lines() == []  # unchanged: not read again
    with path.open("ab") as file:
        file.write(b": 2}\n" + b"x" * (LINE_BYTES + 10))
    assert tail.read_lines() == [b'{"b": 2}']
    with path.open("ab") as file:
        file.write(b'still the long line\n{"c": 3}\n')
    assert tail.read_lines() == [b'{"c": 3}']


def test_the_tail_reads_a_burst_over_several_polls_and_a_new_file_from_its_start(
    tmp_path: Path,
) -> None:
    from jupyter_recap.outside.mcp import READ_BYTES, SpanTail

    path = tmp_path / "spans.jsonl"
    tail = SpanTail(str(path))
    tail.start_at_end()  # not there yet
    line = b'{"name": "tool_call:insert_cell", "attributes": {}}\n'
    count = READ_BYTES // len(line) * 3
    path.write_bytes(line * count)
    polls = [tail.read_lines() for _ in range(5)]
    assert [len(lines) for lines in polls][-1] == 0
    assert sum(len(lines) for lines in polls) == count
    assert all(len(lines) * len(line) <= READ_BYTES for lines in polls)
    # Rotated: a new file under the same name is read from its start.
    path.unlink()
    path.write_bytes(b'{"new": 1}\n')
    assert tail.read_lines() == [b'{"new": 1}']
    # Truncated and written again.
    path.write_bytes(b'{"n": 2}\n')
    assert tail.read_lines() == [b'{"n": 2}']


def test_the_tail_never_reads_what_is_not_a_file(tmp_path: Path) -> None:
    from jupyter_recap.outside.mcp import SpanTail

    pipe = tmp_path / "spans.fifo"
    os.mkfifo(pipe)
    tail = SpanTail(str(pipe))
    tail.start_at_end()
    assert tail.read_lines() == []  # would block the server's loop if it opened it


def test_hook_events_it_cannot_read_never_reach_jupyter_mcp_server(
    tmp_path: Path, jp_asyncio_loop: Any
) -> None:
    from jupyter_mcp_server.hooks import HookEvent

    from jupyter_recap.server.outside.mcp_hooks import McpHookSource, _HookHandler

    sink = FakeSink(tmp_path)
    handler = _HookHandler(McpHookSource(sink))
    for event in HookEvent:
        run = jp_asyncio_loop.run_until_complete
        run(handler.on_event(event, context="not a dict", arguments=7))
        run(handler.on_event(event, context={}, tool_name=None, outputs=object()))
    assert sink.touch_list == []


def test_two_processes_writing_one_span_file_keep_their_own_notebooks(
    tmp_path: Path, jp_asyncio_loop: Any
) -> None:
    write_notebook(tmp_path, "churn.ipynb", ["a"])
    write_notebook(tmp_path, "report.ipynb", ["b"])
    from jupyter_recap.outside.mcp import SpanReader

    sink = FakeSink(tmp_path)
    reader = SpanReader(sink.root_dir, sink.notebook_of)

    def span(writer: str, name: str, **attributes: Any) -> dict[str, Any]:
        resource = {"attributes": {"service.instance.id": writer}}
        return {"name": name, "attributes": attributes, "resource": resource}

    spans = [
        span("one", "kernel_lifecycle", event_type="started", **{"kernel.name": "churn"}),
        span("two", "kernel_lifecycle", event_type="started", **{"kernel.name": "report"}),
        span("one", "tool_call:insert_cell", **{"tool.name": "insert_cell"}),
        span("two", "tool_call:overwrite_cell_source"),
        span("two", "tool_call:delete_cell", error=True, **{"error.message": "out of range"}),
        span("one", "execute", **{"kernel.id": "unknown-here"}),
        span("one", "tool_call:execute_cell", **{"result.summary": TRACEBACK[:200]}),
        span("two", "kernel_lifecycle", event_type="started", **{"kernel.name": "elsewhere"}),
        span("two", "tool_call:insert_cell"),  # in a notebook this server cannot name
    ]
    for each in spans:
        touch = jp_asyncio_loop.run_until_complete(reader.span(each))
        if touch is not None:
            sink.touched(
                touch.path,
                touch.who,
                touch.at,
                edited=touch.edited,
                ran=touch.ran,
                failed=touch.failed,
            )
    touches = sink.touches
    assert totals(touches.since("churn.ipynb", 0)) == (1, 1, 1)
    assert totals(touches.since("report.ipynb", 0)) == (1, 0, 0)
