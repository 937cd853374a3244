"""Model calls held at a gate: a test decides when each answer of the local fake LLM comes.

With them a turn can end while a draft of an earlier one is in flight, deterministically. Each
answer is a recap of the latest finished round its request's context holds ("Round N done"), so
a recap names the turn it covers.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading

from fakellm import Behaviour, Call, FakeLLM, answer

WAIT = 20.0
"""Seconds an awaited event may take on a loaded machine (never a sleep: a bound)."""


class Gates:
    """One gate per model call, in the order the calls arrive; a call answers once its gate
    opens (and hangs up quietly when the client does)."""

    def __init__(self, fake: FakeLLM, count: int = 40) -> None:
        self.fake = fake
        self.events = [threading.Event() for _ in range(count)]
        fake.respond(*(self._gated(event) for event in self.events))

    def _gated(self, gate: threading.Event) -> Behaviour:
        def run(call: Call) -> None:
            sock = call.handler.connection
            while not gate.is_set() and not call.stop.is_set():
                readable, _, _ = select.select([sock], [], [], 0.02)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    return  # cancelled by the kernel: nobody waits for this answer
            context = json.dumps(call.body)
            rounds = [int(n) for n in re.findall(r"Round (\d+) done", context)]
            latest = max(rounds, default=0)
            answer(f"<recap>Recap of round {latest}. Next: step {latest + 1}.</recap>")(call)

        return run

    def open(self, call: int) -> None:
        """Let the ``call``-th model call (1-based) answer."""
        self.events[call - 1].set()

    def arrived(self, calls: int) -> bool:
        return self.fake.wait_for_requests(calls, timeout=WAIT)
