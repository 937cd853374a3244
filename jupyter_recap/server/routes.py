"""The table of every route of docs/focus-protocol.md: its URL pattern and its handler, whose
module is named after the resource (:mod:`.pages`: what a page reports; :mod:`.kernels`: one
kernel's routes; :mod:`.agents`: the agents panel; :mod:`.sessions`: the stored sessions), all
on :mod:`.handlers`' base. Kept apart so that those modules import in one direction only."""

from __future__ import annotations

from jupyter_server.utils import url_path_join

from .agents import AgentHandler, AgentsHandler, UsageHandler
from .handlers import RecapHandler
from .kernels import AgentReportHandler, BannerHandler, EventsHandler, KernelHandler
from .pages import (
    CapabilitiesHandler,
    ChangesHandler,
    FocusHandler,
    InputHandler,
    ReviewedHandler,
    SeenHandler,
)
from .sessions import SessionRecapHandler, SessionsHandler

_KERNEL_ID = r"(?P<kernel_id>[^/]+)"
_SESSION_ID = r"(?P<session_id>[^/]+)"


def routes(base_url: str) -> list[tuple[str, type[RecapHandler]]]:
    """The URL patterns of every route, under ``base_url``."""
    api = url_path_join(base_url, "jupyter-recap", "api")
    return [
        (url_path_join(api, "capabilities"), CapabilitiesHandler),
        (url_path_join(api, "focus"), FocusHandler),
        (url_path_join(api, "input"), InputHandler),
        (url_path_join(api, "seen"), SeenHandler),
        (url_path_join(api, "changes"), ChangesHandler),
        (url_path_join(api, "changes", "reviewed"), ReviewedHandler),
        (url_path_join(api, "kernels", _KERNEL_ID), KernelHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "banner"), BannerHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "events"), EventsHandler),
        (url_path_join(api, "kernels", _KERNEL_ID, "agent"), AgentReportHandler),
        (url_path_join(api, "agents"), AgentsHandler),
        # A chat row's id arrives encoded whole ("chat%3Adir%2Fa.chat"): one path segment.
        (url_path_join(api, "agents", _KERNEL_ID), AgentHandler),
        (url_path_join(api, "usage"), UsageHandler),
        (url_path_join(api, "sessions"), SessionsHandler),
        (url_path_join(api, "sessions", _SESSION_ID, "recap"), SessionRecapHandler),
    ]
