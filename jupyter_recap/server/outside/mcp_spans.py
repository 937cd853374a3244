"""jupyter-mcp-server as its own process: its tool calls read from its OpenTelemetry span file.

Launched by the agent and talking to this server over HTTP, jupyter-mcp-server keeps its hooks in
its own process; its exporter writes one JSON line per span to ``JUPYTER_MCP_OTEL_FILE`` when
the person sets it. This source tails that file (``c.RecapServer.mcp_otel_file``, else the same
variable in this server's environment) every :data:`~jupyter_recap.outside.mcp.POLL_SECONDS`,
only when its size or time changed, from its end as found at start, and reads the spans with
:class:`~jupyter_recap.outside.mcp.SpanReader`. A file the jupyter-mcp-server extension of this
server writes is not read: its hooks tell already (:mod:`.mcp_hooks`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import cast

from tornado.ioloop import PeriodicCallback

from ... import untrusted
from ...errors import RefusedFile
from ...outside.mcp import OTEL_ENV, POLL_SECONDS, SpanReader, SpanTail
from ...outside.source import API_VERSION, OutsideSink, SourceContext
from .host import SourceHost
from .mcp_hooks import EXTENSION

log = logging.getLogger(__name__)


class McpSpanSource:
    """The outside source of the span file of a jupyter-mcp-server running on its own."""

    name = "mcp-spans"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(
        self, sink: OutsideSink, configured: str = "", hooked: Callable[[], bool] = lambda: False
    ) -> None:
        """``configured``: the span file the server's setting names (else the environment's);
        ``hooked``: whether this server's own jupyter-mcp-server is heard through its hooks."""
        self.sink = sink
        self.configured = configured
        self.hooked = hooked
        self.otel_file: str | None = None
        self.reader = SpanReader(sink.root_dir, sink.notebook_of)
        self._tail: SpanTail | None = None
        self._periodic: PeriodicCallback | None = None
        self._polling = False
        self.stopped = False

    def start(self) -> None:
        self.stopped = False
        name = (self.configured or os.environ.get(OTEL_ENV, "")).strip()
        if not name:
            return
        path = os.path.abspath(os.path.expanduser(name))
        if self.hooked() and path in self._in_process_span_files():
            log.info("jupyter_recap: %s is this server's own jupyter-mcp-server's", path)
            return
        self.otel_file = path
        self._tail = SpanTail(path)
        self._tail.start_at_end()
        self._periodic = PeriodicCallback(self._poll, POLL_SECONDS * 1000)
        self._periodic.start()
        log.info("jupyter_recap: attributing the jupyter-mcp-server spans written to %s", path)

    def stop(self) -> None:
        self.stopped = True
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        self._tail = None

    def _in_process_span_files(self) -> set[str]:
        files = {os.environ.get(OTEL_ENV, "")}
        files |= {
            str(getattr(app, "otel_file", "") or "") for app in self.sink.extension_apps(EXTENSION)
        }
        return {os.path.abspath(os.path.expanduser(f)) for f in files if f.strip()}

    async def _poll(self) -> None:
        if self._polling or self.stopped:
            return
        self._polling = True
        try:
            await self.read_spans()
        except Exception:  # the next poll tries again
            log.debug("jupyter_recap: reading MCP spans failed", exc_info=True)
        finally:
            self._polling = False

    async def read_spans(self) -> None:
        """Read what the span file gained since the last read, and note its touches."""
        tail = self._tail
        if tail is None:
            return
        for line in tail.read_lines():
            try:
                span = untrusted.parse_json(line, shown="a span")
            except RefusedFile:  # not JSON, or nested too deep
                continue
            if not isinstance(span, dict):
                continue
            touch = await self.reader.span(span)
            if touch is not None and not self.stopped:
                self.sink.touched(
                    touch.path,
                    touch.who,
                    touch.at,
                    edited=touch.edited,
                    ran=touch.ran,
                    failed=touch.failed,
                )


def make_source(context: SourceContext) -> McpSpanSource:
    """The entry point's factory: the file of ``c.RecapServer.mcp_otel_file``, unless the
    ``mcp-hooks`` source hears this server's own jupyter-mcp-server."""
    host = cast(SourceHost, context.host)

    def hooked() -> bool:
        return bool(getattr(host.sources.get("mcp-hooks"), "hooked", False))

    return McpSpanSource(context.sink, host.mcp_otel_file, hooked)
