"""Routes over the session store: list the stored sessions, draft a recap of one.

``GET jupyter-recap/api/sessions?notebook=&limit=`` lists summaries newest first.
``POST jupyter-recap/api/sessions/{id}/recap`` drafts a recap of one stored session with the same
:func:`~jupyter_recap.pipeline.service.draft_recap` the magics and the CLI use, off the IOLoop; a
client that hangs up cancels the model call. At most ``RecapServer.max_recap_drafts`` drafts run at
once, on threads of their own; more get 429. The store is the default one
(``JUPYTER_RECAP_HOME``).
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .. import fields
from ..errors import StoreError, UnsafeStoreError
from ..focus.validate import ID_CHARS
from ..pipeline.providers.base import CancelToken
from ..pipeline.service import RecapResult, draft_recap
from ..stores import sessionfiles as files
from ..stores.framing import record_framing
from ..stores.sessions import LISTED_SESSIONS, SessionStore
from ..stores.usage import UsageLedger
from ..wire import SessionList, SessionRecapAnswer, SessionSummaryJSON
from .handlers import RETRY_AFTER_SECONDS, RecapHandler, ShuttingDown, reading_fields

if TYPE_CHECKING:
    from ..record.transcript import Transcript
    from ..stores.sessionfiles import SessionRecord

DEFAULT_LIMIT = LISTED_SESSIONS
MAX_LIMIT = 1000


def _trusted_store() -> SessionStore:
    """The default store, or HTTP 500 saying why it is refused (someone else could write it)."""
    store = SessionStore()
    try:
        store.exists()
    except UnsafeStoreError as error:
        raise web.HTTPError(500, "%s", f"stored sessions are not used: {error}") from None
    return store


def _list(notebook: str | None, limit: int) -> list[SessionSummaryJSON]:
    return [s.to_dict() for s in _trusted_store().list(notebook, limit)]


def _load(id_or_prefix: str) -> tuple[SessionRecord, Transcript]:
    """The session, or HTTP 400 (not an id, ambiguous) / 404 (no such session)."""
    try:
        prefix = files.check_prefix(id_or_prefix)
    except StoreError as error:
        raise web.HTTPError(400, "%s", str(error)) from None
    store = _trusted_store()
    matches = [i for i in files.session_ids(store.root) if i.startswith(prefix)]
    if not matches:
        raise web.HTTPError(404, "%s", f"no session matches {prefix!r}")
    try:
        return store.load(prefix)
    except StoreError as error:
        # Several matches (ambiguous prefix) is the caller's mistake; one unreadable header
        # is a session we cannot offer.
        raise web.HTTPError(400 if len(matches) > 1 else 404, "%s", str(error)) from None


class SessionsHandler(RecapHandler):
    """``GET sessions?notebook=&limit=``: stored sessions, newest first."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        with reading_fields():
            raw = self.get_query_argument("limit", None)
            limit = fields.integer_argument("limit", raw, DEFAULT_LIMIT, 1, MAX_LIMIT)
        notebook = self.get_query_argument("notebook", None) or None
        try:
            sessions = await asyncio.to_thread(_list, notebook, limit)
        except StoreError as error:
            raise web.HTTPError(400, "%s", str(error)) from None
        answer: SessionList = {"sessions": sessions}
        self.reply(answer)


class SessionRecapHandler(RecapHandler):
    """``POST sessions/{id}/recap``: a recap of one stored session (null recap is a 200)."""

    # Asking for a recap is a deliberate user action: it counts as activity.
    _track_activity = True

    _cancel: CancelToken | None = None
    _gone = False

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        model = self._model_override()
        recap = self.recap
        if recap.drafting >= recap.max_recap_drafts:
            message = (
                f"this server is already drafting {recap.drafting} recaps; "
                f"retry in {RETRY_AFTER_SECONDS} s"
            )
            raise web.HTTPError(429, "%s", message)
        try:
            token = self._cancel = recap.open_draft()
            try:
                result, record = await self._draft(session_id, model, token)
            finally:
                recap.close_draft(token)
        except ShuttingDown as error:
            raise web.HTTPError(503, "%s", str(error)) from None
        if self._gone:
            return
        answer: SessionRecapAnswer = {
            "session_id": record.id,
            "recap": result.recap.text if result.recap is not None else None,
            "model": result.recap.model if result.recap is not None else result.model,
            "reason": result.reason,
        }
        self.reply(answer)

    async def _draft(
        self, session_id: str, model: str | None, token: CancelToken
    ) -> tuple[RecapResult, SessionRecord]:
        in_pool = self.recap.in_pool
        record, transcript = await in_pool(functools.partial(_load, session_id))
        settings = self.recap_settings()
        framing = await in_pool(
            functools.partial(record_framing, record, enabled=bool(settings.memory))
        )
        if self._gone:  # hung up while the session was loading
            token.cancel()
        draft = functools.partial(
            draft_recap,
            transcript,
            model=model,
            settings=settings,
            trigger="http",
            cancel=token,
            framing=framing,
            usage=UsageLedger(),  # the person asked: counted, never held to the budget
        )
        result: RecapResult = await in_pool(draft)
        return result, record

    def _model_override(self) -> str | None:
        if not self.request.body.strip():
            return None
        body = self.json_body()
        with reading_fields():
            model = fields.text(body, "model", ID_CHARS, blank=False)
        return model.strip() if model else None

    def recap_settings(self) -> Any:
        """``c.Recap.*`` from the server's configuration, else the defaults."""
        from ..settings import Recap

        return Recap(parent=self.recap)

    def on_connection_close(self) -> None:
        # The client hung up: abort the model call rather than pay for an unread answer.
        self._gone = True
        if self._cancel is not None:
            self._cancel.cancel()
        super().on_connection_close()
