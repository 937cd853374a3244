"""A small typed client of a jupyter_recap server extension, for other tools.

::

    with RecapClient("http://127.0.0.1:8888/", token="…") as client:
        if "session_recap" in client.capabilities()["features"]:
            for summary in client.sessions(notebook="analysis.ipynb"):
                print(client.recap_session(summary.id).recap)

``base_url`` is the server's URL including its base URL (``c.ServerApp.base_url``). Every failure
(no connection, timeout, an error status, an answer that is not what the route promises) raises
:class:`~jupyter_recap.errors.ServerError` with the server's message and the HTTP status.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from .errors import ServerError
from .stores.listings import SessionSummary

__all__ = ["RecapClient", "ServerError", "SessionRecap", "SessionSummary"]

API = "jupyter-recap/api/"
ALL_LIMIT = 1000
DEFAULT_TIMEOUT = 10.0
RECAP_TIMEOUT = 90.0
"""Default wait for a recap: above the server's 60 s model backstop (``Recap.timeout_seconds``)."""


@dataclass(frozen=True)
class SessionRecap:
    """The answer of ``POST sessions/{id}/recap``; ``recap`` is None when none could be drafted."""

    session_id: str
    recap: str | None
    model: str | None
    reason: str


class RecapClient:
    """A synchronous client; ``token`` is sent as ``Authorization: token …`` when given."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        root = base_url if base_url.endswith("/") else base_url + "/"
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"token {token}"
        self.base_url = root
        self._http = httpx.Client(
            base_url=root + API, headers=headers, timeout=timeout, transport=transport
        )

    # -- routes --------------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """``{"version": …, "features": [...]}``."""
        data = self._call("GET", "capabilities")
        if not isinstance(data.get("features"), list):
            raise ServerError("the capabilities answer has no feature list", status=200)
        return data

    def sessions(self, notebook: str | None = None, all: bool = False) -> list[SessionSummary]:
        """Stored sessions (of one notebook, if given), newest first: 15, or up to 1000."""
        params: dict[str, str | int] = {}
        if notebook:
            params["notebook"] = notebook
        if all:
            params["limit"] = ALL_LIMIT
        data = self._call("GET", "sessions", params=params)
        try:
            return [
                SessionSummary(
                    id=str(item["id"]),
                    updated=float(item["updated"]),
                    title=str(item["title"]),
                    turns=int(item["turns"]),
                    notebook=None if item.get("notebook") is None else str(item["notebook"]),
                    last_recap=None if item.get("last_recap") is None else str(item["last_recap"]),
                    progress=None if item.get("progress") is None else str(item["progress"]),
                    # A server older than living titles sends none: its title is the prompt.
                    first_prompt=str(item.get("first_prompt", item["title"])),
                )
                for item in data["sessions"]
            ]
        except (KeyError, TypeError, ValueError):
            raise ServerError("the sessions answer is malformed", status=200) from None

    def recap_session(
        self, session_id: str, timeout: float = RECAP_TIMEOUT, *, model: str | None = None
    ) -> SessionRecap:
        """Draft a recap of one stored session (an id or unique prefix) on the server.

        ``model`` (``"offline"`` or ``"provider:model"``) overrides the server's choice. A session
        with nothing to recap, or a model that failed, gives ``recap=None`` and the reason.
        """
        path = f"sessions/{urllib.parse.quote(session_id, safe='')}/recap"
        body = {"model": model} if model is not None else {}
        data = self._call("POST", path, json=body, timeout=timeout)
        recap, used = data.get("recap"), data.get("model")
        if (
            not isinstance(data.get("session_id"), str)
            or not isinstance(data.get("reason"), str)
            or not isinstance(recap, (str, type(None)))
            or not isinstance(used, (str, type(None)))
        ):
            raise ServerError("the recap answer is malformed", status=200)
        return SessionRecap(data["session_id"], recap, used, data["reason"])

    # -- plumbing ------------------------------------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ServerError(f"{method} {path}: no answer in time") from None
        except httpx.HTTPError as error:
            raise ServerError(f"{method} {path}: {type(error).__name__}: {error}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_error:
            message = data.get("message") if isinstance(data, dict) else None
            text = message if isinstance(message, str) and message else response.reason_phrase
            raise ServerError(
                f"{method} {path}: {response.status_code} {text}", status=response.status_code
            )
        if not isinstance(data, dict):
            raise ServerError(
                f"{method} {path}: the answer is not a JSON object", status=response.status_code
            )
        return data

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RecapClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
