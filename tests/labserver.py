"""A real ``jupyter lab`` on 127.0.0.1 for browser tests, isolated in a temporary home."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

START_WITHIN = 180.0
"""Seconds a hub or lab server may take to answer once started."""

TESTS = Path(__file__).parent
ROOT = TESTS.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

# The test extras install Jupyter AI 3 and jupyter-collaboration, whose packages enable their
# server and lab extensions for every server of the environment. A test lab runs without them
# unless it asks: these lists say which belong to which, and ``isolation_config`` turns the
# rest off in the lab's own config folder (the user level, which outranks the environment's).

#: Jupyter AI's chat: the chat transport, its router, the personas and the ACP client that
#: renders their tool calls, the slash commands, and the file watcher that reloads open
#: documents an agent changed on disk.
CHAT_SERVER_EXTENSIONS = (
    "jupyterlab_chat",
    "jupyter_ai_router",
    "jupyter_ai_persona_manager",
    "jupyter_ai_acp_client",
    "jupyter_ai_chat_commands",
    "jupyter_live_content",
)
CHAT_LAB_EXTENSIONS = (
    "jupyterlab-chat-extension",
    "@jupyter-ai/router",
    "@jupyter-ai/persona-manager",
    "@jupyter-ai/acp-client",
    "@jupyter-ai/chat-commands",
    "@jupyter-ai-contrib/live-content",
    # the notebook commands the agents' tools call in the browser, and the diff view they use
    "jupyterlab-ai-commands",
    "jupyterlab-diff",
    "jupyterlab-cell-input-footer-extension",
    "jupyterlab-commands-toolkit",
)
#: Real-time collaboration: Y documents for notebooks and chats.
COLLABORATION_SERVER_EXTENSIONS = ("jupyter_server_ydoc", "jupyter_server_fileid")
COLLABORATION_LAB_EXTENSIONS = (
    "@jupyter/collaboration-extension",
    "@jupyter/docprovider-extension",
    "jupyterlab-notebook-awareness",
)
#: Never on in a test lab: the agents' tool servers. ``jupyter_server_mcp`` listens on the fixed
#: port 3001, so two labs with it would collide; LiteLLM's model list (for Jupyternaut) takes
#: seconds to import and no test persona needs it.
OFF_SERVER_EXTENSIONS = (
    "jupyter_server_mcp",
    "jupyter_ai_tools",
    "jupyterlab_commands_toolkit",
    "jupyter_ai_litellm",
)
#: Never on in a test lab either: jupyter-mcp-server (a test extra, which tests/server runs in
#: its own servers), the lab commands it offers as tools, and the server-side execution its
#: tools run cells with, whose lab extension would run every cell the page runs through it.
MCP_SERVER_EXTENSIONS = ("jupyter_mcp_server", "jupyter_mcp_tools", "jupyter_server_nbmodel")
MCP_LAB_EXTENSIONS = ("@datalayer/jupyter-server-nbmodel", "@datalayer/jupyter-mcp-tools")
#: The test persona (tests/persona/), which chat labs find through its entry point.
PERSONA_DIR = TESTS / "persona"
PERSONA_ID = "jupyter-ai-personas::recap_test_persona::TestClaudePersona"


@dataclass
class LabServer:
    """A running server: its URL (with base URL), token and notebook directory."""

    url: str
    token: str
    root: Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call one of the server's REST routes (``path`` below its URL) with its token."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def connect(self, kernel_id: str) -> Any:
        """A ready client for one of this server's kernels, without a heartbeat.

        jupyter_client judges a kernel dead after one missed one-second heartbeat; on a
        busy two-core machine a kernel still starting misses it, and ``wait_for_ready``
        then fails with "Kernel died". The server owns these kernels, so a test only
        needs the shell and IOPub channels; readiness is the kernel_info reply.
        """
        from jupyter_client.blocking.client import BlockingKernelClient

        runtime = self.root.parent / "runtime"
        kc = BlockingKernelClient(connection_file=str(runtime / f"kernel-{kernel_id}.json"))
        kc.load_connection_file()
        kc.start_channels(hb=False)
        try:
            kc.wait_for_ready(timeout=90)
        except RuntimeError as error:
            kc.stop_channels()
            log = (self.root.parent / "lab.log").read_text()[-3000:]
            raise RuntimeError(f"kernel {kernel_id} never answered: {error}\n{log}") from error
        except BaseException:
            kc.stop_channels()
            raise
        return kc

    def lab_url(self, path: str) -> str:
        """Open ``path`` in a workspace of its own, so no other test's documents come back."""
        workspace = Path(path).stem
        return f"{self.url}lab/workspaces/{workspace}/tree/{path}?reset&token={self.token}"

    def write_notebook(self, name: str, sources: list[str]) -> str:
        """Write a notebook of code cells (with a kernelspec, so Lab asks nothing)."""
        cells: list[dict[str, Any]] = [
            {
                "cell_type": "code",
                "id": f"cell-{n}",
                "metadata": {},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
            for n, source in enumerate(sources)
        ]
        notebook = {
            "cells": cells,
            "metadata": {"kernelspec": KERNELSPEC},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.root / name).write_text(json.dumps(notebook), encoding="utf-8")
        return name


def offline_lab(tmp: Path) -> Iterator[LabServer]:
    """A module's lab: offline recaps, the debug log in ``tmp`` (use under a fixture)."""
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as server:
        yield server


def open_and_run(
    browser: Any, lab: LabServer, name: str, cells: list[str], size: tuple[int, int] = (1200, 900)
) -> Any:
    """A new page with notebook ``name`` (made of ``cells``) open, its kernel idle, all run."""
    from browser import new_page  # Playwright, for the browser tests alone

    lab.write_notebook(name, cells)
    page = new_page(browser, size[0], size[1])
    page.goto(lab.lab_url(name), wait_until="commit")
    # The notebook must be the current one (a restored workspace may open others first) and
    # its kernel ready before cells can run.
    page.wait_for_function(
        """(name) => {
          const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
          return w && w.context && w.context.path === name
            && w.sessionContext.session?.kernel?.status === 'idle';
        }""",
        arg=name,
        timeout=60_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return page


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_lab(
    tmp: Path,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    settings: dict[str, dict[str, object]] | None = None,
    app: str = "jupyterlab",
    chat: bool = False,
    collaboration: bool = False,
    recap: bool = True,
    recap_server: bool = True,
    server_extensions: Sequence[str] = (),
) -> Iterator[LabServer]:
    """Start ``jupyter lab`` (or Notebook 7: ``app="notebook"``) and wait until it answers.

    ``args`` are extra command-line arguments; ``settings`` maps plugin ids
    (``"@jupyterlab/notebook-extension:tracker"``) to user settings. Jupyter AI and
    jupyter-collaboration are off unless ``chat`` (Jupyter AI's chats, with the test persona
    "Claude" of tests/persona/ as the default persona) or ``collaboration`` (real-time
    collaboration) ask for them. ``recap=False``: a lab as if jupyter_recap were not
    installed (its server extension and labextension off); ``recap_server=False``: only its
    server extension off. ``server_extensions``: server extensions to turn on besides (an
    agent's tool server, say). (Turn extensions on or off here, not with a
    ``--ServerApp.jpserver_extensions`` argument: that replaces the whole table, and every
    extension of the environment comes back on.)
    """
    root = tmp / "notebooks"
    root.mkdir()
    isolation_config(
        tmp / "config",
        chat=chat,
        collaboration=collaboration,
        recap=recap,
        recap_server=recap_server,
        server_extensions=server_extensions,
    )
    python_path = [str(ROOT), str(TESTS)]
    if chat:
        python_path += [str(PERSONA_DIR), str(_persona_distribution(tmp / "persona-site"))]
    # No "get notified about Jupyter news?" toast over the notebook.
    plugins = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}
    for plugin, values in {**plugins, **(settings or {})}.items():
        package, _, name = plugin.partition(":")
        folder = tmp / "settings" / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    server_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))
    }
    server_env.update(
        {
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "IPYTHONDIR": str(tmp / "ipython"),
            "JUPYTER_RECAP_HOME": str(tmp / "recap-home"),
            "PYTHONPATH": os.pathsep.join(python_path),
            **(env or {}),
        }
    )
    # Notebook 7 is a JupyterLab-based app: the same options, under its own class name.
    cls = "LabApp" if app == "jupyterlab" else "JupyterNotebookApp"
    command = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--{cls}.workspaces_dir={tmp / 'workspaces'}",
        f"--{cls}.user_settings_dir={tmp / 'settings'}",
        f"--{cls}.expose_app_in_browser=True",
        "--ServerApp.allow_root=True",
        *(
            [
                "--LabApp.extension_manager=readonly",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]
            if app == "jupyterlab"
            else []
        ),
        *args,
    ]
    log = (tmp / "lab.log").open("w")
    # In the temporary folder: what a server writes beside it (the collaboration store's
    # database) stays out of the checkout.
    process = subprocess.Popen(
        command, env=server_env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, token, process, tmp / "lab.log")
        yield LabServer(url, token, root)
    finally:
        stop_server(process, log)


def isolation_config(
    config: Path,
    chat: bool,
    collaboration: bool,
    recap: bool = True,
    recap_server: bool = True,
    server_extensions: Sequence[str] = (),
) -> None:
    """Write the lab's user-level config: Jupyter AI's and collaboration's server and lab
    extensions off, but for the groups asked for (see the lists at the top) and the named
    ``server_extensions``; jupyter_recap's own off too unless ``recap`` (its server extension
    alone unless ``recap_server``)."""
    on_server = (CHAT_SERVER_EXTENSIONS if chat else ()) + (
        COLLABORATION_SERVER_EXTENSIONS if collaboration else ()
    )
    on_lab = (CHAT_LAB_EXTENSIONS if chat else ()) + (
        COLLABORATION_LAB_EXTENSIONS if collaboration else ()
    )
    every_server: tuple[str, ...] = CHAT_SERVER_EXTENSIONS + COLLABORATION_SERVER_EXTENSIONS
    every_server += OFF_SERVER_EXTENSIONS + MCP_SERVER_EXTENSIONS
    every_lab = CHAT_LAB_EXTENSIONS + COLLABORATION_LAB_EXTENSIONS + MCP_LAB_EXTENSIONS
    enabled = {name: name in on_server for name in every_server}
    enabled.update(dict.fromkeys(server_extensions, True))
    if not (recap and recap_server):
        enabled["jupyter_recap"] = False
    server: dict[str, Any] = {"ServerApp": {"jpserver_extensions": enabled}}
    if chat:
        # The chat input's persona picker starts on the default persona, so a message typed in
        # the browser goes to the test persona without picking it first.
        server["PersonaManager"] = {"default_persona_id": PERSONA_ID}
    config.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
    (config / "labconfig").mkdir(exist_ok=True)
    disabled = {name: True for name in every_lab if name not in on_lab}
    if not recap:
        disabled["jupyter-recap"] = True
    # No build check: on each page load JupyterLab asks its server whether the application
    # needs a rebuild, and the server runs node twice to answer (a version check, `yarn
    # config`): 58 node processes in a run, for a dialog no test looks at.
    page = {"disabledExtensions": disabled, "buildCheck": False, "buildAvailable": False}
    (config / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=1))


def _persona_distribution(site: Path) -> Path:
    """A folder holding only the test persona's distribution metadata, for the lab's path.

    Jupyter AI finds personas through the ``jupyter_ai.personas`` entry points of installed
    distributions; a ``.dist-info`` folder on ``sys.path`` is one, without installing anything
    (the module itself is found on PYTHONPATH, in tests/persona/).
    """
    info = site / "recap_test_persona-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: recap-test-persona\nVersion: 0.0.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[jupyter_ai.personas]\nrecap-test-persona = recap_test_persona:TestClaudePersona\n"
    )
    return site


def wait_until_up(
    url: str,
    token: str,
    process: subprocess.Popen[bytes],
    log: Path,
    probe: str = "api/status",
) -> None:
    """Wait until GET ``url + probe`` answers 200; raise with the log's tail if it never does."""
    # Generous: a loaded machine (a run beside other work) took over a minute to start a hub;
    # a server that exits is seen at once, so only a real hang waits this long.
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early:\n{log.read_text()[-3000:]}")
        try:
            request = urllib.request.Request(
                f"{url}{probe}", headers={"Authorization": f"token {token}"}
            )
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the server did not start:\n{log.read_text()[-3000:]}")


def stop_server(process: subprocess.Popen[bytes], log: IO[str]) -> None:
    """Ask the server to stop, kill it if it will not, and close its log."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()
