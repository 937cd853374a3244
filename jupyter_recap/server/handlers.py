"""The base of every HTTP route of docs/focus-protocol.md (:mod:`.routes` is their table;
the handlers live by resource: :mod:`.pages`, :mod:`.kernels`, :mod:`.agents`,
:mod:`.sessions`): :class:`RecapHandler`, and :class:`KernelRouteHandler` for the routes a
kernel calls.

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

import contextlib
import hmac
import json
import logging
from collections.abc import Iterator, Mapping
from http.client import responses
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from jupyter_server.auth.identity import User
from jupyter_server.base.handlers import APIHandler
from tornado import web

from .. import fields
from ..fields import FieldError
from ..textutil import printable, shorten
from ..wire import KERNEL_HEADER, kernel_proof, strict_json

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from jupyter_server.auth.authorizer import Authorizer

    from ..focus.board import AgentBoard
    from ..focus.hub import FocusHub
    from ..pipeline.providers.base import CancelToken
    from .outside.changes import NotebookChanges
    from .polls import LongPolls

_T = TypeVar("_T")


class RunningRecap(Protocol):
    """What the routes use of the running extension (``RecapServer`` is one): named here, so
    the handlers need not import the package that registers them."""

    hub: FocusHub
    board: AgentBoard
    polls: LongPolls
    changes: NotebookChanges
    max_body_bytes: int
    max_poll_timeout: float
    max_recap_drafts: int

    @property
    def drafting(self) -> int: ...

    def ensure_watched(self, kernel_id: str) -> None: ...

    def notebook_looked_at(self, kernel_id: str, path: str) -> None: ...

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


def error_message(error: web.HTTPError) -> str:
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
            message = error_message(error)
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
