"""What a browser page reports of the person (docs/focus-protocol.md): ``POST focus`` (the
focus of its notebooks and chats, and its heartbeat), ``POST input`` (typing in a cell),
``POST seen`` (a notebook saved) and ``POST changes/reviewed`` (changed cells the person saw);
``GET capabilities``, what a page asks first, and ``GET changes``, a notebook's cells to review.

Where the person's focus makes a notebook looked at or left for the changes it holds is
:meth:`FocusHandler._notebook`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .. import fields
from .._version import __version__
from ..fields import FieldError
from ..focus.board import chat_row_id
from ..focus.hub import HEARTBEAT_MISSES
from ..focus.validate import ID_CHARS
from ..wire import FocusAnswer
from .handlers import RecapHandler, error_message, reading_fields

FEATURES = [
    "focus",
    "focus_batch",
    "input",
    "feed",
    "banner",
    "session_recap",
    "sessions",
    "agents",
    "usage",
    "changes",
]

#: Longest accepted notebook path; ids (kernel, browser tab, widget model) are capped at
#: ``ID_CHARS`` (256), so a kernel's state in the hub stays small (64 tabs x these is the most
#: one kernel can hold). Kernel ids and widget model ids are 32-36 characters, tab ids UUIDs;
#: paths are capped like PATH_MAX.
PATH_CHARS = 4096


class CapabilitiesHandler(RecapHandler):
    """``GET capabilities``: what this server extension speaks."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(
            {
                "version": __version__,
                "features": FEATURES,
                # A third of the time-out after which the server forgets a silent tab: a tab
                # misses two beats before it counts as gone.
                "heartbeat_seconds": round(self.hub.heartbeat_timeout / HEARTBEAT_MISSES, 3),
            }
        )


class FocusHandler(RecapHandler):
    """``POST focus``: the focus of notebooks and chats in one tab (changes and heartbeat).

    One report (``{kernel_id, path, focused, client_id}`` or ``{chat, focused, client_id}``),
    or a page's batch of them (``{client_id, reports: [...]}``): a page sends every change of
    one moment, and its heartbeat, as one request, however many notebooks it has open.
    """

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.json_body()
        if "reports" in body:
            self._batch(body)
            return
        with reading_fields():
            fields.require(body, "client_id")
            client_id = fields.string(body, "client_id", ID_CHARS)
            report = self._read(body, "")
        if isinstance(report, _ChatReport):
            self.reply(self._chat(report, client_id))
            return
        self.require_kernel(report.kernel_id)
        self.reply(self._notebook(report, client_id))

    def _batch(self, body: dict[str, Any]) -> None:
        """A page's reports in one request: each answered in order; one about a kernel that
        is gone (or a chat over the limit) is answered with its error, the others still
        count."""
        with reading_fields():
            fields.require(body, "client_id", "reports")
            client_id = fields.string(body, "client_id", ID_CHARS)
            raw = fields.get(body, "reports")
            if not isinstance(raw, list):
                raise FieldError("reports", "must be a list")
            if len(raw) > MAX_BATCH_REPORTS:
                raise FieldError("reports", f"more than {MAX_BATCH_REPORTS} reports")
            reports = []
            for n, item in enumerate(raw):
                if not isinstance(item, dict):
                    raise FieldError(f"reports.{n}", "must be an object")
                reports.append(self._read(item, f"reports.{n}."))
        answers: list[Mapping[str, object]] = []
        for report in reports:
            try:
                if isinstance(report, _ChatReport):
                    answers.append(self._chat(report, client_id))
                else:
                    self.require_kernel(report.kernel_id)
                    answers.append(self._notebook(report, client_id))
            except web.HTTPError as error:
                answers.append(
                    {**report.names(), "error": error_message(error), "status": error.status_code}
                )
        self.reply({"answers": answers, "agents_version": self.recap.board.version})

    @staticmethod
    def _read(body: Mapping[str, Any], where: str) -> _NotebookReport | _ChatReport:
        """One report's fields (``where``: its place in a batch, for the error's line)."""
        if "chat" in body:
            fields.require(body, f"{where}chat", f"{where}focused")
            path = fields.string(body, f"{where}chat", PATH_CHARS)
            if not path.endswith(".chat"):
                raise FieldError(f"{where}chat", "not the path of a .chat file")
            return _ChatReport(path, fields.flag(body, f"{where}focused"))
        fields.require(body, f"{where}kernel_id", f"{where}path", f"{where}focused")
        return _NotebookReport(
            fields.string(body, f"{where}kernel_id", ID_CHARS),
            fields.string(body, f"{where}path", PATH_CHARS),
            fields.flag(body, f"{where}focused"),
            fields.text(body, f"{where}kernel_client_id", ID_CHARS),
        )

    def _notebook(self, report: _NotebookReport, client_id: str) -> Mapping[str, object]:
        kernel_id, path = report.kernel_id, report.path
        self.hub.report(kernel_id, client_id, path, report.focused)
        board = self.recap.board
        board.set_path(kernel_id, path)
        snapshot = self.hub.snapshot(kernel_id)
        if report.kernel_client_id:
            self.recap.changes.page_session(kernel_id, report.kernel_client_id)
        self.recap.notebook_looked_at(kernel_id, path)
        answer: FocusAnswer = {
            "kernel_id": kernel_id,
            "focused": snapshot.focused,
            "banner_model_id": snapshot.banner_model_id,
            # A page that saw a lower version missed a push: it reads the board again.
            "agents_version": board.version,
            # A page keeps re-reporting only the notebooks whose kernel runs jupyter_recap.
            "recapped": self.hub.recapped(kernel_id),
        }
        return answer

    def _chat(self, report: _ChatReport, client_id: str) -> Mapping[str, object]:
        """A chat's focus in one tab (its answer names the chat's row)."""
        row_id = chat_row_id(report.path)
        if not self.hub.has_kernel(row_id) and len(self.hub.chat_paths()) >= MAX_FOCUSED_CHATS:
            raise web.HTTPError(429, "%s", f"more than {MAX_FOCUSED_CHATS} chats reported")
        self.hub.report(row_id, client_id, report.path, report.focused)
        snapshot = self.hub.snapshot(row_id)
        return {
            "id": row_id,
            "focused": snapshot.focused,
            "agents_version": self.recap.board.version,
        }


@dataclass(frozen=True, slots=True)
class _NotebookReport:
    kernel_id: str
    path: str
    focused: bool
    kernel_client_id: str | None

    def names(self) -> dict[str, str]:
        return {"kernel_id": self.kernel_id}


@dataclass(frozen=True, slots=True)
class _ChatReport:
    path: str
    focused: bool

    def names(self) -> dict[str, str]:
        return {"id": chat_row_id(self.path)}


MAX_BATCH_REPORTS = 256
"""Reports one batch may hold (a page's open notebooks and chats; the body limit comes first
for long paths)."""

MAX_FOCUSED_CHATS = 256
"""Chats whose focus the server follows at once (every open chat tab of every page)."""


class SeenHandler(RecapHandler):
    """``POST seen``: the person's page saved a notebook; what it holds now, they have seen."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        with reading_fields():
            fields.require(body, "path", "client_id")
            path = fields.string(body, "path", PATH_CHARS, blank=False)
            fields.string(body, "client_id", ID_CHARS)
        await self.recap.changes.page_saved(notebook_path(path))
        self.reply({})


MAX_REVIEWED = 1024
"""Cell ids one ``POST changes/reviewed`` may name."""


class ChangesHandler(RecapHandler):
    """``GET changes?path=``: the notebook's cells changed since the person last saw them."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        raw = self.get_query_argument("path", "")
        with reading_fields():
            path = fields.string({"path": raw}, "path", PATH_CHARS, blank=False)
        self.reply(await self.recap.changes.reviews.review(notebook_path(path)))


class ReviewedHandler(RecapHandler):
    """``POST changes/reviewed``: the person saw these changed cells (on screen, or selected)."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        with reading_fields():
            fields.require(body, "path", "cell_ids", "client_id")
            path = fields.string(body, "path", PATH_CHARS, blank=False)
            fields.string(body, "client_id", ID_CHARS)
            cell_ids = body["cell_ids"]
            if not isinstance(cell_ids, list) or len(cell_ids) > MAX_REVIEWED:
                raise FieldError("cell_ids", f"must be a list of at most {MAX_REVIEWED} ids")
            for index, cell_id in enumerate(cell_ids):
                fields.string({str(index): cell_id}, f"cell_ids.{index}", ID_CHARS, blank=False)
        self.reply(await self.recap.changes.reviews.reviewed(notebook_path(path), cell_ids))


def notebook_path(path: str) -> str:
    """``path`` when it names a notebook inside the server's root; else a 400 saying why."""
    if not path.endswith(".ipynb"):
        raise web.HTTPError(400, "%s", "path: not the path of a notebook (.ipynb)")
    if path.startswith(("/", "\\")) or ".." in path.replace("\\", "/").split("/"):
        raise web.HTTPError(400, "%s", "path: not a path inside the server's root")
    return path


class InputHandler(RecapHandler):
    """``POST input``: the person typed in a cell of the kernel's notebook."""

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.json_body()
        with reading_fields():
            fields.require(body, "kernel_id", "client_id")
            kernel_id = fields.string(body, "kernel_id", ID_CHARS)
            client_id = fields.string(body, "client_id", ID_CHARS)
        self.require_kernel(kernel_id)
        self.hub.input(kernel_id, client_id)
        self.reply({})
