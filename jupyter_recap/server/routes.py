"""The table of every route of docs/focus-protocol.md: the focus, feed and agents routes
(:mod:`.handlers`) and the session routes (:mod:`.sessions`, whose handlers build on
:mod:`.handlers`' base). Kept apart so that those two modules import in one direction only."""

from __future__ import annotations

from jupyter_server.utils import url_path_join

from .handlers import RecapHandler, focus_routes
from .sessions import session_routes


def routes(base_url: str) -> list[tuple[str, type[RecapHandler]]]:
    """The URL patterns of every route, under ``base_url``."""
    api = url_path_join(base_url, "jupyter-recap", "api")
    return [*focus_routes(api), *session_routes(api)]
