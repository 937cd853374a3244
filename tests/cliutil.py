"""The environment the CLI tests run the real command in: offline, no keys, the venv's tools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

VENV_BIN = Path(sys.executable).parent

#: Anything that could send a test's notebook to a real model, or tie it to a live notebook.
NETWORK_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENROUTER_API_KEY",
    "OLLAMA_HOST",
    "JUPYTER_RECAP_DEBUG",
    "JPY_SESSION_NAME",
)


def offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NETWORK_ENV}
    env["JUPYTER_RECAP_MODEL"] = "offline"
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env.update(extra)
    return env


def run_cli(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jupyter_recap.cli ARGS`` (or ``command ARGS``) as a console script would,
    in the offline environment unless ``env`` is given."""
    return subprocess.run(
        [*(command or [sys.executable, "-m", "jupyter_recap.cli"]), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=env or offline_env(),
        timeout=120,
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The single ``jupyter recap: …`` line on stderr of a run that exited with ``code``."""
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("jupyter recap: ")
    return lines[0]
