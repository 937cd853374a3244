"""A toy agent's log, heard by jupyter_recap as an outside source: the sample plugin.

The toy agent appends one JSON line per turn to ``toyagent.log`` in the server's root::

    {"notebook": "churn.ipynb", "prompt": "…", "reply": "…", "edited": 1, "ran": 0}

This source reads what the log gained every :data:`POLL_SECONDS` and tells jupyter_recap, using
nothing but the public contract (:mod:`jupyter_recap.outside.source`): the notebook was touched
by "Toy agent", the turn's entries go to the kernels serving the notebook, and the notebook gets
a line of what the agent did. It is registered by its distribution's entry point
(``[jupyter_recap.outside] toy-log = recap_toy_log:make_source``), not by jupyter_recap.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

from jupyter_recap.outside.source import OutsideSink, SourceContext
from jupyter_recap.wire import OutsideActivity, OutsideEntry

POLL_SECONDS = 0.2
WHO = "Toy agent"


class ToyLogSource:
    name = "toy-log"
    line_precedence = 0
    api_version = 1
    """The contract this source was written for, as a number: the constant, imported, would
    claim whatever version the installed jupyter_recap speaks."""

    def __init__(self, sink: OutsideSink) -> None:
        self.sink = sink
        self.path = os.path.join(sink.root_dir, "toyagent.log")
        self.offset = 0
        self.lines: dict[str, OutsideActivity] = {}
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._timer = asyncio.get_event_loop().call_later(POLL_SECONDS, self._poll)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _poll(self) -> None:
        try:
            self._read()
        finally:
            self._timer = asyncio.get_event_loop().call_later(POLL_SECONDS, self._poll)

    def _read(self) -> None:
        try:
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                data = log.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for raw in complete.splitlines():
            try:
                turn = json.loads(raw)
            except ValueError:
                continue
            if isinstance(turn, dict) and isinstance(turn.get("notebook"), str):
                self._turn(turn)

    def _turn(self, turn: dict[str, object]) -> None:
        path = str(turn["notebook"])
        edited, ran = int(str(turn.get("edited", 0))), int(str(turn.get("ran", 0)))
        self.sink.touched(path, WHO, edited=edited, ran=ran)
        entries: list[OutsideEntry] = [
            {"kind": "user", "text": str(turn.get("prompt", "")), "name": None, "error": None},
            {"kind": "assistant", "text": str(turn.get("reply", "")), "name": None, "error": None},
            {"kind": "outcome", "text": "ok", "name": None, "error": None},
        ]
        for kernel_id in self.sink.kernels_of(path):
            self.sink.add_entries(kernel_id, entries)
        self.lines[path] = {
            "text": f"{WHO} edited {edited} cell(s): {turn.get('reply', '')}",
            "links": [],
            "at": time.time(),
        }
        self.sink.publish_lines(self.lines)


def make_source(context: SourceContext) -> ToyLogSource:
    return ToyLogSource(context.sink)


class _OldSource(ToyLogSource):
    name = "toy-old"
    api_version = 2  # written against a contract this jupyter_recap does not speak


def make_old_source(context: SourceContext) -> ToyLogSource:
    return _OldSource(context.sink)
