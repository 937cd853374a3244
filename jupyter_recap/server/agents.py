"""The agents panel's routes (docs/focus-protocol.md): ``GET agents`` (every row, in the
attention order, with how many need the person), ``GET agents/{id}`` (one row) and ``GET usage``
(today's model calls of recaps, the panel's usage line). A kernel's own row arrives at
``PUT kernels/{id}/agent`` (:mod:`.kernels`).
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import StoreError
from ..stores.usage import UsageLedger
from ..textutil import format_cost, printable
from ..wire import CHAT_ROW_PREFIX, CLI_ROW_PREFIX, AgentList, DayUsageJSON, UsageJSON
from .handlers import RecapHandler, shown


class AgentsHandler(RecapHandler):
    """``GET agents``: every row of the agents panel."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        board = self.recap.board
        answer: AgentList = {
            "now": _now(),
            "version": board.version,
            "agents": board.rows(),
            "outside": board.outside,
            "left_out": len(board.left_out),
            "left_out_needing": board.needing(left_out=True),
            "needing": board.needing(),
        }
        self.reply(answer)


class AgentHandler(RecapHandler):
    """``GET agents/{id}``: one row (404 for a kernel that is not this server's or has none)."""

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        board = self.recap.board
        # A chat's or a CLI agent's row is no kernel's.
        other = kernel_id.startswith((CHAT_ROW_PREFIX, CLI_ROW_PREFIX))
        if not other and not board.is_dead(kernel_id):  # a dead kernel's row is still the server's
            self.require_kernel(kernel_id)
        row = board.row(kernel_id)
        if row is None:
            message = (
                f"no agents row for {shown(kernel_id)}"
                if other
                else f"kernel {shown(kernel_id)} has no agents row (jupyter_recap not loaded)"
            )
            raise web.HTTPError(404, "%s", message)
        self.reply({"now": _now(), "version": board.version, "agent": row})


def _now() -> float:
    return round(time.time(), 3)


class UsageHandler(RecapHandler):
    """``GET usage``: today's model calls of recaps, from every kernel of the person."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        # Off the IOLoop: reading takes the ledger's lock when a corrupt day file is moved aside.
        answer, warnings = await asyncio.to_thread(read_usage)
        for warning in warnings:
            # The server's own log, which the person sees; the ledger's goes to the debug log.
            self.log.warning("jupyter_recap: %s", warning)
        self.reply(answer)


def read_usage(ledger: UsageLedger | None = None) -> tuple[UsageJSON, list[str]]:
    """Today's usage as ``GET usage`` answers it, and the ledger's warnings (a corrupt day file
    moved aside). A store that is refused or cannot be read is ``today: null`` with a one-line
    ``error``, so the panel can say why: never a 500."""
    try:
        ledger = ledger if ledger is not None else UsageLedger()
        today = ledger.today()
    except (StoreError, OSError) as error:
        line = " ".join(printable(str(error) or type(error).__name__).split())
        return {"today": None, "cost": None, "error": line}, []
    answer: UsageJSON = {
        "today": cast(DayUsageJSON, today.to_dict()),
        "cost": format_cost(today.cost),
        "error": None,
    }
    return answer, ledger.take_warnings()
