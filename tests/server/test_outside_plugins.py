"""Outside sources are plugins: found through the ``jupyter_recap.outside`` entry points.

The sample plugin of tests/plugins/toylog (a distribution of its own, exposed by putting its
folder on the path, the way an installed one is found) hears a toy agent's log file through
nothing but the public contract; a second plugin there fails to import, and a third is written
for another version of the contract. A real server with our extension: the toy agent's turns
reach the notebook's touches and its line in the agents panel with no change to jupyter_recap,
the broken plugins cost the others nothing, and a plugin is disabled by name.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest

pytestmark = pytest.mark.timeout(120)

PLUGINS = Path(__file__).parents[1] / "plugins" / "toylog"
OWN = ["hooks", "mcp-hooks", "mcp-spans", "oneshot", "server-mcp"]


@pytest.fixture
def plugins_installed() -> bool:
    """Whether the toy plugins are installed; a test overrides it with ``parametrize``."""
    return True


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """What the server logs of its outside sources (on their own logger: the package's debug
    log, when a test set it up, keeps its records from the root's handlers)."""
    logger = logging.getLogger("jupyter_recap.server.outside")
    handler, level = Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def installed(plugins_installed: bool, monkeypatch: pytest.MonkeyPatch, logged: list[str]) -> None:
    """The toy plugins' distributions on the path, before the server looks for sources (and
    what it logs of them kept)."""
    if plugins_installed:
        monkeypatch.syspath_prepend(str(PLUGINS))


async def until(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
    return found


@asynctest
async def test_a_plugin_s_source_is_heard_and_broken_ones_cost_nothing(
    recap: Any, jp_root_dir: Path, logged: list[str]
) -> None:
    await until(lambda: recap.sources.running)
    assert recap.sources.running == [*OWN, "toy-log", "changes", "chats"]
    lines = logged
    assert "jupyter_recap: outside source toy-log (recap-toy-log 0.1.0)" in lines
    assert any(
        line.startswith("jupyter_recap: outside source toy-broken (recap-toy-broken 0.1.0) could")
        and "ImportError" in line
        for line in lines
    ), lines
    old = [line for line in lines if "toy-old" in line and "API version" in line]
    assert len(old) == 1, lines
    # The toy agent works on a notebook: jupyter_recap hears it through the plugin alone.
    turn = {"notebook": "churn.ipynb", "prompt": "tidy", "reply": "dropped 2 cells", "edited": 2}
    (jp_root_dir / "toyagent.log").write_text(json.dumps(turn) + "\n", encoding="utf-8")
    touches = await until(lambda: recap.touches.since("churn.ipynb", 0.0))
    assert [(t.who, t.edited) for t in touches] == [("Toy agent", 2)]
    line = await until(lambda: recap.board.outside.get("churn.ipynb"))
    assert line["text"] == "Toy agent edited 2 cell(s): dropped 2 cells"
    # A second turn later: heard once more, and the notebook's line is the newest.
    again = {"notebook": "churn.ipynb", "prompt": "plot", "reply": "added a chart", "edited": 1}
    with (jp_root_dir / "toyagent.log").open("a", encoding="utf-8") as log:
        log.write(json.dumps(again) + "\n")
    touches = await until(
        lambda: (
            len(recap.touches.since("churn.ipynb", 0.0)) == 2
            and recap.touches.since("churn.ipynb", 0.0)
        )
    )
    assert [(t.who, t.edited) for t in touches] == [("Toy agent", 2), ("Toy agent", 1)]
    line = await until(
        lambda: (
            "chart" in recap.board.outside["churn.ipynb"]["text"]
            and recap.board.outside["churn.ipynb"]
        )
    )
    assert line["text"] == "Toy agent edited 1 cell(s): added a chart"


@pytest.mark.parametrize("recap_config", [{"disabled_sources": ["toy-log", "mcp-spans"]}])
@asynctest
async def test_a_source_disabled_by_name_is_not_loaded(recap: Any) -> None:
    await until(lambda: recap.sources.running)
    assert "toy-log" not in recap.sources.running and "mcp-spans" not in recap.sources.running
    assert recap.sources.get("toy-log") is None
    assert {"hooks", "mcp-hooks", "oneshot", "server-mcp", "changes", "chats"} <= set(
        recap.sources.running
    )


@pytest.mark.parametrize("plugins_installed", [False])
@asynctest
async def test_an_uninstalled_plugin_is_gone(recap: Any) -> None:
    await until(lambda: recap.sources.running)
    assert recap.sources.running == [*OWN, "changes", "chats"]
