"""The outside-source contract: the list the server runs, its failures kept apart, and whose
line a notebook shows when two sources have one (jupyter_recap.outside.source and
jupyter_recap.server.outside)."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest
from outsidekit import FakeSink

from jupyter_recap.outside.source import API_VERSION, OutsideSink, OutsideSource, merge_lines
from jupyter_recap.server.outside.hooks import HookIntake
from jupyter_recap.server.outside.mcp_hooks import McpHookSource
from jupyter_recap.server.outside.mcp_spans import McpSpanSource
from jupyter_recap.server.outside.mcp_tools import ServerMcpSource
from jupyter_recap.server.outside.oneshot import OneShotTurns
from jupyter_recap.server.outside.running import SourceList
from jupyter_recap.wire import OutsideActivity


class Recorded:
    """A source that records its starts and stops, and raises where told."""

    api_version = API_VERSION

    def __init__(self, name: str, log: list[str], *, fails: str = "", precedence: int = 0) -> None:
        self.name = name
        self.line_precedence = precedence
        self.log = log
        self.fails = fails

    def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fails == "start":
            raise RuntimeError("boom")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")
        if self.fails == "stop":
            raise RuntimeError("boom")


def line(text: str) -> OutsideActivity:
    return {"text": text, "links": [], "at": 1.0}


def test_the_project_s_sources_meet_the_contract(tmp_path: Path) -> None:
    sink: OutsideSink = FakeSink(tmp_path)  # the fake is a sink (mypy checks it too)
    sources: list[OutsideSource] = [
        HookIntake(sink),
        OneShotTurns(sink, dict),
        McpHookSource(sink),
        McpSpanSource(sink),
        ServerMcpSource(sink),
    ]
    assert all(isinstance(source, OutsideSource) for source in sources)
    names = [source.name for source in sources]
    assert len(set(names)) == len(names)
    assert all(source.api_version == API_VERSION for source in sources)


def test_a_source_that_fails_to_start_or_stop_costs_the_others_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []
    sources = SourceList(
        [
            Recorded("first", log),
            Recorded("broken", log, fails="start"),
            Recorded("last", log, fails="stop"),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="jupyter_recap.server.outside"):
        sources.start()
        assert sources.running == ["first", "last"]
        sources.stop()
    assert log == [
        "start first",
        "start broken",
        "start last",
        "stop first",
        "stop broken",
        "stop last",
    ]
    warnings = [record.getMessage() for record in caplog.records]
    assert warnings == [
        "jupyter_recap: outside source broken did not start",
        "jupyter_recap: outside source last did not stop",
    ]
    assert sources.running == []


def test_a_source_for_another_api_version_is_not_started(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []
    old = Recorded("old", log)
    old.api_version = API_VERSION + 1
    sources = SourceList([old, Recorded("current", log)])
    with caplog.at_level(logging.WARNING, logger="jupyter_recap.server.outside"):
        sources.start()
    assert log == ["start current"] and sources.running == ["current"]
    (warning,) = [record.getMessage() for record in caplog.records]
    assert "old" in warning and f"API version {API_VERSION + 1}" in warning


def test_the_higher_precedence_wins_a_notebook_whatever_order_the_lines_came_in() -> None:
    """A change line (precedence 1) names who changed the notebook: it wins over a chat's line
    (0) about the same notebook, in whatever order the two were published; equal precedences
    go by name, so the winner never depends on timing."""
    published = {
        "changes": {"a.ipynb": line("changed by Claude"), "b.ipynb": line("b changed")},
        "chats": {"a.ipynb": line("Claude worked here"), "c.ipynb": line("c worked")},
        "zeta": {"c.ipynb": line("zeta's line")},
    }
    precedence = {"changes": 1, "chats": 0, "zeta": 0}
    results = []
    for order in itertools.permutations(published):
        sources = SourceList([Recorded(name, [], precedence=precedence[name]) for name in order])
        merged: dict[str, OutsideActivity] = {}
        for name in order:
            merged = sources.publish(name, published[name])
        results.append(merged)
        assert merged == merge_lines({n: published[n] for n in order}, precedence)
    assert all(result == results[0] for result in results)
    assert {path: entry["text"] for path, entry in results[0].items()} == {
        "a.ipynb": "changed by Claude",
        "b.ipynb": "b changed",
        "c.ipynb": "zeta's line",
    }


def test_a_source_publishing_again_replaces_its_lines() -> None:
    sources = SourceList([Recorded("chats", [])])
    sources.publish("chats", {"a.ipynb": line("first")})
    assert sources.publish("chats", {"b.ipynb": line("second")}) == {"b.ipynb": line("second")}
