"""``scripts/demo`` starts JupyterLab as root, as containers and CI run it.

What used to happen: run as root, the demo stopped at Jupyter's "Running as root is not
recommended. Use --allow-root to bypass." The demo now passes ``--allow-root`` when its
effective user id is 0.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import urllib.request
from pathlib import Path

from labserver import ROOT, _free_port, isolation_config, stop_server, wait_until_up


def as_root_env(tmp_path: Path) -> dict[str, str]:
    """The demo's environment: Jupyter's folders in ``tmp_path``, and uid 0.

    The machines the tests run on run as root; elsewhere ``id -u`` (all the script asks) answers
    0 from a stand-in first on the PATH, so the script takes its root path all the same.
    """
    isolation_config(tmp_path / "config", chat=False, collaboration=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        JUPYTER_RECAP_HOME=str(tmp_path / "recap-home"),
        JUPYTER_RECAP_MODEL="offline",
    )
    if os.geteuid() != 0:
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "id").write_text('#!/bin/sh\n[ "$1" = -u ] && echo 0 || exec /usr/bin/id "$@"\n')
        (shim / "id").chmod(0o755)
        env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    return env


def test_the_demo_starts_jupyterlab_as_root(tmp_path: Path) -> None:
    port, token = _free_port(), secrets.token_hex(16)
    log_path = tmp_path / "demo.log"
    log = log_path.open("w")
    # exactly the Quickstart's command, with the README's example arguments for a port
    process = subprocess.Popen(
        [
            str(ROOT / "scripts" / "demo"),
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
        ],
        env=as_root_env(tmp_path),
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, token, process, log_path)
        # the page the demo opens: the demo notebook in JupyterLab
        request = urllib.request.Request(
            f"{url}lab/tree/notebooks/recap_loop_demo.ipynb",
            headers={"Authorization": f"token {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            assert b"jupyter-config-data" in response.read()
    finally:
        stop_server(process, log)
    assert "--allow-root" not in log_path.read_text()  # no refusal telling how to bypass it
