"""The test persona "Claude": a Jupyter AI ACP persona whose agent is a local script.

Registered through the ``jupyter_ai.personas`` entry point like jupyter-ai-acp-client's personas
(tests/labserver.py writes the distribution metadata when a lab starts with ``chat=True``).
It is a real :class:`BaseAcpPersona`: Jupyter AI starts its agent as a subprocess and renders
the agent's tool calls, permission requests and text with its own ACP client, so the ``.chat``
file holds what a Claude Code turn leaves there. The agent, ``recap_test_agent.py`` next to this
file, needs no key, binary or network; its docstring lists the prompt words and what they do.

Two things run in the server process, in :class:`RecapTestAcpClient`: the notebook tools'
work (the agent asks for it over ACP extension methods, as Claude asks Jupyter AI's MCP server),
through the server's contents manager; and answering a pending permission by a human message
("@Claude approve" / "@Claude reject"), besides the chat's buttons and the permission route.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

import jupyter_ai_acp_client
import nbformat
from acp.exceptions import RequestError
from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_acp_client.default_acp_client import JaiAcpClient
from jupyter_ai_persona_manager import PersonaDefaults
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import ensure_async
from jupyterlab_chat.models import Message
from tornado import web

AGENT = Path(__file__).with_name("recap_test_agent.py")
MODEL = "claude-test-1"
AVATAR = Path(jupyter_ai_acp_client.__file__).parent / "static" / "claude.svg"
APPROVE = ("approve", "allow", "yes")
REJECT = ("reject", "deny", "no")
RUN_TIMEOUT = 60


class RecapTestAcpClient(JaiAcpClient):  # type: ignore[misc]
    """Jupyter AI's ACP client, plus the notebook tools the scripted agent calls."""

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        persona = self._personas_by_session.get(params.get("session_id", ""))
        if persona is None:
            raise RequestError.invalid_params({"session_id": "unknown session"})
        tools = NotebookTools(persona)
        if method == "recap_test/read_notebook":
            return await tools.read(params["path"])
        if method == "recap_test/edit_cell":
            return await tools.edit(params["path"], params["cell_id"], params["content"])
        if method == "recap_test/run_cell":
            return await tools.run(params["path"], params["cell_id"])
        raise RequestError.method_not_found(method)

    def pending_permissions(self, session_id: str) -> list[str]:
        """The tool call ids of ``session_id`` waiting for the person's answer."""
        return [
            call for session, call in self._permission_manager._pending if session == session_id
        ]


class NotebookTools:
    """What Jupyter AI's ``read_notebook``, ``edit_cell`` and ``run_cell`` tools do, through the
    server's contents manager; a run executes the cell's code in a fresh Python process."""

    def __init__(self, persona: BaseAcpPersona) -> None:
        # The one-shot route's persona manager (a %%ai model@Persona cell) has no extension
        # above it: the server is then the running one.
        extension = getattr(persona.parent, "parent", None)
        server = getattr(extension, "serverapp", None) or ServerApp.instance()
        self.contents = server.contents_manager
        self.root = persona.parent.root_dir

    def absolute(self, path: str) -> str:
        return os.path.abspath(os.path.join(self.root, path))

    async def _load(self, path: str) -> Any:
        model = await ensure_async(self.contents.get(path, content=True, type="notebook"))
        return model["content"]

    async def _save(self, path: str, notebook: Any) -> None:
        model = {"type": "notebook", "format": "json", "content": notebook}
        await ensure_async(self.contents.save(model, path))

    @staticmethod
    def _cell(notebook: Any, cell_id: str) -> Any:
        for cell in notebook.cells:
            if cell.get("id") == cell_id:
                return cell
        raise RequestError.invalid_params({"cell_id": f"no cell {cell_id!r}"})

    async def read(self, path: str) -> dict[str, Any]:
        answer: dict[str, Any] = {"absolute_path": self.absolute(path)}
        try:
            notebook = await self._load(path)
        except (web.HTTPError, OSError, ValueError) as error:  # the tool's answer, then
            answer["error"] = str(getattr(error, "log_message", None) or error)
            return answer
        cells = [
            {"id": cell.get("id", ""), "cell_type": cell.cell_type, "source": cell.source}
            for cell in notebook.cells
        ]
        answer.update(cells=cells, text=json.dumps(cells, indent=1))
        return answer

    async def edit(self, path: str, cell_id: str, content: str) -> dict[str, Any]:
        notebook = await self._load(path)
        self._cell(notebook, cell_id).source = content
        await self._save(path, notebook)
        return {"success": True}

    async def run(self, path: str, cell_id: str) -> dict[str, Any]:
        notebook = await self._load(path)
        cell = self._cell(notebook, cell_id)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            cell.source,
            cwd=os.path.dirname(self.absolute(path)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            out, err = b"", f"TimeoutError: still running after {RUN_TIMEOUT} s".encode()
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        counts = [c.get("execution_count") or 0 for c in notebook.cells if c.cell_type == "code"]
        cell.execution_count = max(counts, default=0) + 1
        if process.returncode == 0:
            cell.outputs = [
                nbformat.v4.new_output(  # type: ignore[no-untyped-call]
                    "stream", name="stdout", text=stdout
                )
            ]
            answer: dict[str, Any] = {"success": True, "result": stdout.strip()}
        else:
            error = (stderr.strip().splitlines() or ["Error: the process failed"])[-1]
            name, _, value = error.partition(": ")
            cell.outputs = [
                nbformat.v4.new_output(  # type: ignore[no-untyped-call]
                    "error", ename=name, evalue=value, traceback=stderr.splitlines()
                )
            ]
            answer = {"success": False, "error": error, "traceback": stderr}
        await self._save(path, notebook)
        return answer


class TestClaudePersona(BaseAcpPersona):  # type: ignore[misc]
    """ "Claude", backed by the scripted agent (recap_test_agent.py)."""

    acp_client_class = RecapTestAcpClient

    #: Held while the shared agent subprocess is torn down. Jupyter AI's ACP personas share one
    #: agent per class: when a chat closes and its persona tears the agent down, a persona of
    #: another chat preparing at that moment picks up the agent being closed and fails its first
    #: message ("Connection closed"). Tests open and close chats back to back, so this persona
    #: waits for a teardown in flight before preparing.
    _teardown: ClassVar[asyncio.Lock | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=[sys.executable, str(AGENT)], **kwargs)

    @classmethod
    def _teardown_lock(cls) -> asyncio.Lock:
        if cls._teardown is None:
            cls._teardown = asyncio.Lock()
        return cls._teardown

    async def prepare(self) -> None:
        async with self._teardown_lock():
            pass
        await super().prepare()

    async def _shutdown(self) -> None:
        async with self._teardown_lock():
            await super()._shutdown()

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="Claude",
            description="A scripted stand-in for Claude Code, for jupyter_recap's tests.",
            avatar_path=str(AVATAR),
            system_prompt="unused",
            model_uid=MODEL,
        )

    async def on_message(self, message: Message) -> None:
        """Answer a pending permission when the message is "approve" or "reject"; otherwise
        handle it as Jupyter AI does (one message at a time, so a message that arrives while a
        permission is pending would otherwise wait behind it)."""
        words = [w for w in message.body.lower().split() if not w.startswith("@")]
        if len(words) == 1 and words[0].strip(".!") in APPROVE + REJECT:
            option = "allow" if words[0].strip(".!") in APPROVE else "reject"
            if await self.answer_permissions(option):
                return
        await super().on_message(message)

    async def answer_permissions(self, option_id: str) -> int:
        """Answer every permission this chat's session waits for; how many there were."""
        if not self._client_started() or self._client_session_future is None:
            return 0
        client = await self.get_client()
        session_id = await self.get_session_id()
        pending = client.pending_permissions(session_id)
        for call in pending:
            client.resolve_permission(session_id, call, option_id)
        return len(pending)
