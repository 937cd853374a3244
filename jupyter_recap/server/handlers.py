"""The HTTP routes of docs/focus-protocol.md: thin tornado handlers over the focus hub and the
agents board, on :class:`RecapHandler`, the base of every route (the session routes of
:mod:`.sessions` too; :mod:`.routes` lists them all).

Browser routes use the server's own authentication (cookie + XSRF header, or a token). Kernel
routes also accept a kernel's proof of identity in ``X-Jupyter-Recap-Kernel``: an HMAC keyed by
that kernel's own ZMQ connection key over its id (:func:`~jupyter_recap.wire.kernel_proof`).
It opens the routes of the kernel named in the URL and nothing else, and needs no token, which
matters where the server has none to share (JupyterHub). Every error is answered as
``{"message": "..."}`` by :meth:`RecapHandler.write_error`, the one place where failures become
status codes. A bad field of a body or a bad query argument, read with the readers of
:mod:`jupyter_recap.fields` inside :func:`reading_fields`, is a 400 whose message is the
reader's line (``"client_id: must be a string"``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.client import responses
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.auth.identity import User
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .. import fields
from .._version import __version__
from ..errors import StoreError
from ..fields import FieldError
from ..focus.board import chat_row_id
from ..focus.hub import HEARTBEAT_MISSES
from ..focus.validate import ID_CHARS, ReportError, parse_report
from ..stores.usage import UsageLedger
from ..textutil import format_cost, printable, shorten
from ..wire import (
    CHAT_ROW_PREFIX,
    KERNEL_HEADER,
    DayUsageJSON,
    FocusAnswer,
    UsageJSON,
    kernel_proof,
    strict_json,
)
from .polls import Poll, PollsFull

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from jupyter_server.auth.authorizer import Authorizer

    from ..focus.board import AgentBoard
    from ..focus.hub import FocusHub
    from ..pipeline.providers.base import CancelToken
    from .changes import NotebookChanges
    from .chats import ChatSource
    from .polls import LongPolls

_T = TypeVar("_T")


class RunningRecap(Protocol):
    """What the routes use of the running extension (``RecapServer`` is one): named here, so
    the handlers need not import the package that registers them."""

    hub: FocusHub
    board: AgentBoard
    polls: LongPolls
    chats: ChatSource
    changes: NotebookChanges
    max_body_bytes: int
    max_poll_timeout: float
    max_recap_drafts: int

    @property
    def drafting(self) -> int: ...

    def ensure_watched(self, kernel_id: str) -> None: ...

    def open_draft(self) -> CancelToken: ...

    def close_draft(self, token: CancelToken) -> None: ...

    def in_pool(self, function: Callable[[], _T]) -> Awaitable[_T]: ...


AUTH_RESOURCE = "jupyter_recap"
RETRY_AFTER_SECONDS = 10
"""``Retry-After`` of a request refused because the server holds its limit of waiting polls or
of recap drafts."""
#: How much of a caller's id an error message quotes.
_SHOWN_ID = 80


class ShuttingDown(RuntimeError):
    """The server is shutting down: no new work is started (a route answers 503)."""


def _message(error: web.HTTPError) -> str:
    """What an HTTP error of a route says (its message, formatted)."""
    if not error.log_message:
        return responses.get(error.status_code, "Error")
    return error.log_message % error.args if error.args else error.log_message


def shown(value: str) -> str:
    """A caller-supplied id as an error message may quote it: printable, one line, short."""
    return shorten(printable(value), _SHOWN_ID) or "''"


@contextlib.contextmanager
def reading_fields() -> Iterator[None]:
    """A :class:`~jupyter_recap.fields.FieldError` raised inside is HTTP 400 with its
    line as the message."""
    try:
        yield
    except FieldError as error:
        raise web.HTTPError(400, "%s", str(error)) from None


class RecapHandler(APIHandler):
    """Base of every route: JSON in and out, errors as ``{"message"}``, no culling activity."""

    auth_resource = AUTH_RESOURCE
    # Heartbeats and long polls arrive forever from an open tab or a running kernel; counting
    # them as activity would keep an abandoned server from ever being culled.
    _track_activity = False

    @property
    def recap(self) -> RunningRecap:
        recap: RunningRecap = self.settings["jupyter_recap"]
        return recap

    @property
    def hub(self) -> FocusHub:
        return self.recap.hub

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        message = responses.get(status_code, "Error")
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if isinstance(error, web.HTTPError) and error.log_message:
            message = _message(error)
        if status_code == 429:
            # Set here: send_error clears every header set before the error was raised.
            self.set_header("Retry-After", str(RETRY_AFTER_SECONDS))
        self.set_header("Content-Type", "application/json")
        self.finish(strict_json({"message": " ".join(printable(str(message)).split())}))

    def require_kernel(self, kernel_id: str) -> None:
        """404 unless ``kernel_id`` is a running kernel of this server."""
        if kernel_id not in self.kernel_manager:
            raise web.HTTPError(404, "%s", f"no running kernel {shown(kernel_id)}")
        self.recap.ensure_watched(kernel_id)

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object (413 when too large, 400 when not an object); read its
        fields with :mod:`~jupyter_recap.fields` inside :func:`reading_fields`."""
        limit = self.recap.max_body_bytes
        declared = self.request.headers.get("Content-Length", "0")
        if len(self.request.body) > limit or (declared.isdigit() and int(declared) > limit):
            raise web.HTTPError(413, "%s", f"the body is larger than {limit} bytes")
        try:
            body = json.loads(self.request.body)
        except RecursionError:
            # json.loads recurses once per level: "[" * 10_000 fits in 16 KiB and would be a 500.
            raise web.HTTPError(400, "the body is nested too deeply") from None
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body is not a JSON object")
        return body

    def number_argument(self, name: str, default: float) -> float:
        """A non-negative number from the query (400 otherwise)."""
        with reading_fields():
            return fields.number_argument(name, self.get_query_argument(name, None), default)

    def reply(self, data: Mapping[str, object]) -> None:
        # Strict JSON: a NaN or infinity (a corrupt figure) is null, not a 500 or an answer
        # the page's JSON.parse refuses.
        self.finish(strict_json(data))


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
]
DEFAULT_POLL_TIMEOUT = 25.0

#: Longest accepted notebook path; ids (kernel, browser tab, widget model) are capped at
#: ``ID_CHARS`` (256), so a kernel's state in the hub stays small (64 tabs x these is the most
#: one kernel can hold). Kernel ids and widget model ids are 32-36 characters, tab ids UUIDs;
#: paths are capped like PATH_MAX.
PATH_CHARS = 4096

_KERNEL_ID = r"(?P<kernel_id>[^/]+)"

log = logging.getLogger(__name__)


class _KernelProofAuthorizer:
    """Allows a kernel that proved its identity our own resource and nothing else.

    The server's authorizer knows only its own users (JupyterHub's checks hub scopes), so it is
    not asked about the synthetic kernel user; the proof, checked against the kernel id in the
    URL, is the authorization.
    """

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource == AUTH_RESOURCE


_KERNEL_USER = User(username="jupyter-recap-kernel", display_name="jupyter_recap kernel")
_KERNEL_AUTHORIZER = _KernelProofAuthorizer()


class KernelRouteHandler(RecapHandler):
    """Routes a kernel calls: the server's auth OR that kernel's proof of identity."""

    _kernel_authenticated = False

    async def prepare(self) -> None:  # type: ignore[override]
        if self._proves_kernel():
            # A kernel is no browser: no cookie, so no XSRF token and no login redirect. But a
            # browser page that learnt a proof must not use it, so host and origin still count.
            if not self.check_host():
                self.current_user = self._jupyter_current_user = None
                raise web.HTTPError(403)
            # Setting the user here is what ``@web.authenticated`` then checks.
            self._kernel_authenticated = True
            self.current_user = self._jupyter_current_user = _KERNEL_USER
            if not self.check_origin():
                raise web.HTTPError(404)
            return
        await super().prepare()

    def _proves_kernel(self) -> bool:
        """Whether the request carries the proof of the kernel named in its URL."""
        proof = self.request.headers.get(KERNEL_HEADER)
        kernel_id = self.path_kwargs.get("kernel_id")
        if not proof or not kernel_id:
            return False
        if kernel_id not in self.kernel_manager:
            return False  # not a kernel of this server: nothing to check the proof against
        kernel = self.kernel_manager.get_kernel(kernel_id)
        key = getattr(getattr(kernel, "session", None), "key", None)
        if not isinstance(key, bytes) or not key:
            # Anyone can compute an HMAC with an empty key: such a kernel cannot prove anything.
            log.debug("jupyter_recap: kernel %s has no connection key; proof refused", kernel_id)
            return False
        expected = kernel_proof(key, kernel_id).encode()
        return hmac.compare_digest(proof.encode("latin-1", "replace"), expected)

    def check_xsrf_cookie(self) -> None:
        if not self._kernel_authenticated:
            super().check_xsrf_cookie()

    @property
    def authorizer(self) -> Authorizer:
        if self._kernel_authenticated:
            return _KERNEL_AUTHORIZER  # type: ignore[return-value]
        return super().authorizer


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
                    {**report.names(), "error": _message(error), "status": error.status_code}
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
        self.recap.chats.looked_at(path, report.focused)
        board = self.recap.board
        board.set_path(kernel_id, path)
        snapshot = self.hub.snapshot(kernel_id)
        if report.kernel_client_id:
            self.recap.changes.page_session(kernel_id, report.kernel_client_id)
        # The notebook is looked at when any of the person's tabs looks at it.
        self.recap.changes.looked_at(path, snapshot.focused is True, kernel_id)
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
        if not path.endswith(".ipynb"):
            raise web.HTTPError(400, "%s", "path: not the path of a notebook (.ipynb)")
        if path.startswith(("/", "\\")) or ".." in path.replace("\\", "/").split("/"):
            raise web.HTTPError(400, "%s", "path: not a path inside the server's root")
        await self.recap.changes.page_saved(path)
        self.reply({})


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


class KernelHandler(RecapHandler):
    """``GET kernels/{id}``: the kernel's focus, banner and execution state."""

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        self.require_kernel(kernel_id)
        self.reply(self.hub.snapshot(kernel_id).to_json())


class BannerHandler(KernelRouteHandler):
    """``PUT kernels/{id}/banner``: the kernel's banner widget model id (null clears it)."""

    @web.authenticated
    @authorized
    def put(self, kernel_id: str) -> None:
        body = self.json_body()
        with reading_fields():
            fields.require(body, "model_id")
            model_id = fields.text(body, "model_id", ID_CHARS)
        self.require_kernel(kernel_id)
        self.hub.set_banner(kernel_id, model_id)
        self.reply({})


class AgentReportHandler(KernelRouteHandler):
    """``PUT kernels/{id}/agent``: the kernel's agent state, for the agents panel."""

    @web.authenticated
    @authorized
    async def put(self, kernel_id: str) -> None:
        body = self.json_body()
        self.require_kernel(kernel_id)
        try:
            report = parse_report(body)
        except ReportError as error:
            raise web.HTTPError(400, "%s", str(error)) from None
        if report.ignored:
            # Once per report, every dropped field in one line: the server's log, which the
            # person sees; the kernel gets the same lines in the answer.
            line = "; ".join(report.ignored)
            self.log.warning(
                "jupyter_recap: kernel %s reported bad fields, ignored: %s", shown(kernel_id), line
            )
        board = self.recap.board
        board.report(kernel_id, report)
        if not board.path(kernel_id):
            board.set_path(kernel_id, await self._session_path(kernel_id))
        self.reply({"agents_version": board.version, "ignored": list(report.ignored)})

    async def _session_path(self, kernel_id: str) -> str:
        """The notebook of the kernel's session, until a browser reports which one it is."""
        try:
            manager: Any = self.session_manager  # untyped in jupyter_server
            session = await manager.get_session(kernel_id=kernel_id)
        except Exception:  # noqa: BLE001 - no session (a kernel started on its own): no path
            return ""
        path = session.get("path") if isinstance(session, dict) else None
        return path if isinstance(path, str) else ""


class AgentsHandler(RecapHandler):
    """``GET agents``: every row of the agents panel."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        board = self.recap.board
        self.reply(
            {
                "now": _now(),
                "version": board.version,
                "agents": board.rows(),
                "outside": board.outside,
                "left_out": len(board.left_out),
            }
        )


class AgentHandler(RecapHandler):
    """``GET agents/{id}``: one row (404 for a kernel that is not this server's or has none)."""

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        board = self.recap.board
        chat = kernel_id.startswith(CHAT_ROW_PREFIX)
        if not chat and not board.is_dead(kernel_id):  # a dead kernel's row is still the server's
            self.require_kernel(kernel_id)
        row = board.row(kernel_id)
        if row is None:
            message = (
                f"no agents row for {shown(kernel_id)}"
                if chat
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


class EventsHandler(KernelRouteHandler):
    """``GET kernels/{id}/events?since=&timeout=``: the kernel's feed, as a long poll."""

    _gone = False
    _poll: Poll | None = None

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        self.require_kernel(kernel_id)
        # Pages keep the focus of this kernel's notebooks up to date from now on.
        self.hub.feed_polled(kernel_id)
        since = self.number_argument("since", 0)
        if since != int(since):
            raise web.HTTPError(400, "%s", str(FieldError("since", "must be an integer")))
        timeout = min(
            self.number_argument("timeout", DEFAULT_POLL_TIMEOUT), self.recap.max_poll_timeout
        )
        feed = self.hub.events_since(kernel_id, int(since))
        if feed.events or feed.restarted or timeout <= 0:
            self.reply(feed.to_json())  # no wait, so no slot: the state is always readable
            return
        polls = self.recap.polls
        try:
            poll = self._poll = polls.enter(kernel_id)
        except PollsFull:
            message = (
                f"this server already holds its limit of {polls.total} waiting polls; "
                f"retry in {RETRY_AFTER_SECONDS} s"
            )
            raise web.HTTPError(429, "%s", message) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                # Cleared right before reading the feed, with no await between: no notify
                # can slip by unseen.
                poll.event.clear()
                feed = self.hub.events_since(kernel_id, int(since))
                remaining = deadline - loop.time()
                if feed.events or feed.restarted or remaining <= 0 or poll.evicted or self._gone:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(poll.event.wait(), remaining)
                self.require_kernel(kernel_id)  # shut down meanwhile: 404
        finally:
            polls.leave(poll)
        if not self._gone:
            self.reply(feed.to_json())

    def on_connection_close(self) -> None:
        # The kernel hung up (extension unloaded, kernel shutting down, network gone): stop
        # waiting for it and give its slot back now, not at its timeout.
        self._gone = True
        if self._poll is not None:
            self.recap.polls.leave(self._poll)
            self._poll.event.set()
        super().on_connection_close()


def focus_routes(api: str) -> list[tuple[str, type[RecapHandler]]]:
    """The URL patterns of the routes here, under ``api`` (``…/jupyter-recap/api``)."""
    return [
        (url_path_join(api, "capabilities"), CapabilitiesHandler),
        (url_path_join(api, "focus"), FocusHandler),
        (url_path_join(api, "input"), InputHandler),
        (url_path_join(api, "seen"), SeenHandler),
        (url_path_join(api, "kernels", _KERNEL_ID), KernelHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "banner"), BannerHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "events"), EventsHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "agent"), AgentReportHandler),
        (url_path_join(api, "agents"), AgentsHandler),
        # A chat row's id arrives encoded whole ("chat%3Adir%2Fa.chat"): one path segment.
        (url_path_join(api, "agents", _KERNEL_ID), AgentHandler),
        (url_path_join(api, "usage"), UsageHandler),
    ]
