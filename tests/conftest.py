"""Shared fixtures: an isolated environment for every test, and a real IPython shell."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import fakellm and helpers

from fakellm import fake_llm

# LiteLLM (under jupyter-ai's magics and server extension) fetches its model price list from
# the internet when imported; no test may reach the internet, and kernels and servers started
# by the tests inherit this.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

__all__ = ["fake_llm"]  # the local fake LLM server fixture, for every test module

# Property-based tests run the same examples on every run (a red CI run can be replayed
# locally) and without per-example deadlines, which a shared, noisy 2-core machine would trip.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OPENROUTER_API_KEY",
    "JUPYTER_RECAP_MODEL",
    "JUPYTER_RECAP_AUTO",
    "JUPYTER_RECAP_AUTO_HOSTED",
    "JUPYTER_RECAP_MEMORY",
)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No test sees the developer's keys, and the debug log goes to a temporary file."""
    from jupyter_recap import debuglog

    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "recap-debug.log"
    monkeypatch.setenv("JUPYTER_RECAP_LOG", str(log))
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(tmp_path / "recap-home"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    debuglog.reset()
    yield log
    debuglog.reset()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium through Playwright, shared by a module's browser tests."""
    from browser import launch

    yield from launch()


@pytest.fixture
def shell() -> Iterator[object]:
    """A real InteractiveShell with in-memory history; the extension is unloaded afterwards."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from jupyter_recap.record import transcript
    from jupyter_recap.stores import workstate

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=config)  # display() publishes through the instance
    transcript.set_current(None)
    workstate.set_current_state(None)
    yield ip
    extensions = ip.extension_manager
    assert extensions is not None  # set up by InteractiveShell.__init__
    if "jupyter_recap" in extensions.loaded:
        extensions.unload_extension("jupyter_recap")
    transcript.set_current(None)
    workstate.set_current_state(None)
    InteractiveShell.clear_instance()
