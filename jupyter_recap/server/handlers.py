"""The HTTP routes of docs/focus-protocol.md: thin tornado handlers over the focus hub.

Browser routes use the server's own authentication (cookie + XSRF header, or a token). Kernel
routes also accept the per-server secret in ``X-Jupyter-Recap-Secret``: kernels are children of
this server and inherit it through their environment, which matters where the server has no
token to share (JupyterHub). Every error is answered as ``{"message": "..."}`` by
:meth:`RecapHandler.write_error`, the one place where failures become status codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
from http.client import responses
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.auth.identity import User
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .._version import __version__

if TYPE_CHECKING:
    from jupyter_server.auth.authorizer import Authorizer

    from ..focushub import FocusHub
    from . import RecapServer

AUTH_RESOURCE = "jupyter_recap"
SECRET_HEADER = "X-Jupyter-Recap-Secret"
FEATURES = ["focus", "input", "feed", "banner", "session_recap", "sessions"]
DEFAULT_POLL_TIMEOUT = 25.0

_KERNEL_ID = r"(?P<kernel_id>[^/]+)"


class Signals:
    """Wakes the long polls waiting on a kernel; the hub calls :meth:`notify` on each event.

    Only ever used from the server's event loop, so a plain dict of ``asyncio.Event`` is enough:
    each notify sets the kernel's current event and the next waiter gets a fresh one.
    """

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def waiter(self, kernel_id: str) -> asyncio.Event:
        return self._events.setdefault(kernel_id, asyncio.Event())

    def notify(self, kernel_id: str) -> None:
        event = self._events.pop(kernel_id, None)
        if event is not None:
            event.set()


class _KernelSecretAuthorizer:
    """Allows a secret-authenticated kernel our own resource and nothing else.

    The server's authorizer knows only its own users (JupyterHub's checks hub scopes), so it is
    not asked about the synthetic kernel user; holding the secret is the authorization.
    """

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource == AUTH_RESOURCE


_KERNEL_USER = User(username="jupyter-recap-kernel", display_name="jupyter_recap kernel")
_KERNEL_AUTHORIZER = _KernelSecretAuthorizer()


class RecapHandler(APIHandler):
    """Base of every route: JSON in and out, errors as ``{"message"}``, no culling activity."""

    auth_resource = AUTH_RESOURCE
    # Heartbeats and long polls arrive forever from an open tab or a running kernel; counting
    # them as activity would keep an abandoned server from ever being culled.
    _track_activity = False

    @property
    def recap(self) -> RecapServer:
        recap: RecapServer = self.settings["jupyter_recap"]
        return recap

    @property
    def hub(self) -> FocusHub:
        return self.recap.hub

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        message = responses.get(status_code, "Error")
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if isinstance(error, web.HTTPError) and error.log_message:
            message = error.log_message % error.args if error.args else error.log_message
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": " ".join(str(message).split())}))

    def require_kernel(self, kernel_id: str) -> None:
        """404 unless ``kernel_id`` is a running kernel of this server."""
        if kernel_id not in self.kernel_manager:
            raise web.HTTPError(404, "%s", f"no running kernel {kernel_id}")
        self.recap.ensure_watched(kernel_id)

    def json_body(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The body as a JSON object with ``fields`` (name → type or tuple of types)."""
        limit = self.recap.max_body_bytes
        declared = self.request.headers.get("Content-Length", "0")
        if len(self.request.body) > limit or (declared.isdigit() and int(declared) > limit):
            raise web.HTTPError(413, "%s", f"the body is larger than {limit} bytes")
        try:
            body = json.loads(self.request.body)
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body is not a JSON object")
        for name, kind in fields.items():
            if name not in body:
                raise web.HTTPError(400, "%s", f"missing field {name!r}")
            value = body[name]
            # bool is an int in Python; a JSON true must not pass for a number or vice versa
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise web.HTTPError(400, "%s", f"field {name!r} has the wrong type")
        return body

    def number_argument(self, name: str, default: float) -> float:
        raw = self.get_query_argument(name, None)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise web.HTTPError(400, "%s", f"{name} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise web.HTTPError(400, "%s", f"{name} must be a non-negative number")
        return value

    def reply(self, data: dict[str, Any]) -> None:
        self.finish(json.dumps(data))


class KernelRouteHandler(RecapHandler):
    """Routes a kernel calls: the server's auth OR the secret header."""

    _secret_authenticated = False

    async def prepare(self) -> None:  # type: ignore[override]
        secret = self.request.headers.get(SECRET_HEADER)
        expected = self.recap.secret
        if secret and expected and hmac.compare_digest(secret.encode(), expected.encode()):
            # Kernels are not browsers: no cookie, so no XSRF and no login redirect. Setting the
            # user here is what ``@web.authenticated`` then checks.
            self._secret_authenticated = True
            self.current_user = self._jupyter_current_user = _KERNEL_USER
            return
        await super().prepare()

    def check_xsrf_cookie(self) -> None:
        if not self._secret_authenticated:
            super().check_xsrf_cookie()

    @property
    def authorizer(self) -> Authorizer:
        if self._secret_authenticated:
            return _KERNEL_AUTHORIZER  # type: ignore[return-value]
        return super().authorizer


class CapabilitiesHandler(RecapHandler):
    """``GET capabilities``: what this server extension speaks."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply({"version": __version__, "features": FEATURES})


class FocusHandler(RecapHandler):
    """``POST focus``: one notebook's focus in one tab (transition or heartbeat)."""

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.json_body({"kernel_id": str, "path": str, "focused": bool, "client_id": str})
        kernel_id = body["kernel_id"]
        self.require_kernel(kernel_id)
        self.hub.report(kernel_id, body["client_id"], body["path"], body["focused"])
        snapshot = self.hub.snapshot(kernel_id)
        self.reply(
            {
                "kernel_id": kernel_id,
                "focused": snapshot.focused,
                "banner_model_id": snapshot.banner_model_id,
            }
        )


class InputHandler(RecapHandler):
    """``POST input``: the person typed in a cell of the kernel's notebook."""

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.json_body({"kernel_id": str, "client_id": str})
        self.require_kernel(body["kernel_id"])
        self.hub.input(body["kernel_id"], body["client_id"])
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
        body = self.json_body({"model_id": (str, type(None))})
        self.require_kernel(kernel_id)
        self.hub.set_banner(kernel_id, body["model_id"])
        self.reply({})


class EventsHandler(KernelRouteHandler):
    """``GET kernels/{id}/events?since=&timeout=``: the kernel's feed, as a long poll."""

    _gone = False
    _kernel_id = ""

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        self.require_kernel(kernel_id)
        self._kernel_id = kernel_id
        since = self.number_argument("since", 0)
        if since != int(since):
            raise web.HTTPError(400, "since must be an integer")
        timeout = min(
            self.number_argument("timeout", DEFAULT_POLL_TIMEOUT), self.recap.max_poll_timeout
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            feed = self.hub.events_since(kernel_id, int(since))
            remaining = deadline - loop.time()
            if feed.events or feed.restarted or remaining <= 0 or self._gone:
                break
            # Taken right after reading the feed, with no await between: no event can slip by.
            waiter = self.recap.signals.waiter(kernel_id)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(waiter.wait(), remaining)
            self.require_kernel(kernel_id)  # shut down meanwhile: 404
        if not self._gone:
            self.reply(feed.to_json())

    def on_connection_close(self) -> None:
        # The kernel hung up (extension unloaded, kernel shutting down): stop waiting for it.
        self._gone = True
        if self._kernel_id:
            self.recap.signals.notify(self._kernel_id)


def routes(base_url: str) -> list[tuple[str, type[RecapHandler]]]:
    """The URL patterns of every route, under ``base_url``."""
    from .sessions import session_routes

    api = url_path_join(base_url, "jupyter-recap", "api")
    return [
        (url_path_join(api, "capabilities"), CapabilitiesHandler),
        (url_path_join(api, "focus"), FocusHandler),
        (url_path_join(api, "input"), InputHandler),
        (url_path_join(api, "kernels", _KERNEL_ID), KernelHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "banner"), BannerHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "events"), EventsHandler),
        *session_routes(api),
    ]
