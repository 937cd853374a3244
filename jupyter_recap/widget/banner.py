"""The recap banner: a small anywidget that shows a "where was I" recap above your next cell.

Everything the model wrote is synced as plain text and rendered with ``textContent`` by
``static/banner.js``; it never becomes HTML.

Front ends without widget support (terminal IPython, nbconvert, GitHub's notebook viewer) get
:meth:`RecapBanner.plain_text` as the ``text/plain`` repr: the latest recap this banner showed,
with its engine and task-progress line, or nothing before the first. It is what a saved notebook
keeps, so it never holds a passing state ("drafting…", a failure, a dismissed banner). A
notebook only keeps that text up to date if every display of the banner carries
:attr:`RecapBanner.display_id` and the kernel sends ``update_display_data`` for it whenever the
recap changes (``jupyter_recap.ipython.surface`` does both).
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anywidget
from traitlets import Bool, Dict, Enum, List, Unicode, observe

from ..debuglog import get_logger
from ..errors import RecapError
from ..textutil import printable

_STATIC = pathlib.Path(__file__).parent / "static"

#: The states a banner can be in; ``hidden`` renders nothing.
STATES = ("hidden", "drafting", "shown", "failed")

_NO_LINKS: dict[str, Any] = {"links": [], "stop_cell": None, "progress": None, "notice": ""}

LABEL = "✦ recap"

#: The custom message a view sends for its *Continue* button, and the kernel's answer's type.
HANDOFF = "handoff"
#: The longest request id a view may send (it is echoed back; the view makes short ones).
REQUEST_ID_CHARS = 64


class RecapBanner(anywidget.AnyWidget):
    """A compact, dismissible banner holding one recap (or its drafting / failed state)."""

    # The sources as text, not as paths: for a path anywidget makes a shared FileContents and
    # connects every instance to its ``changed`` signal for good, so no closed banner would
    # ever be freed (about 30 KB on each ``%load_ext`` / ``%unload_ext``).
    _esm = (_STATIC / "banner.js").read_text(encoding="utf-8")
    _css = (_STATIC / "banner.css").read_text(encoding="utf-8")

    text = Unicode("", help="The recap itself; always rendered as plain text.").tag(sync=True)
    model = Unicode("", help='The engine that wrote it, e.g. "offline".').tag(sync=True)
    state = Enum(STATES, default_value="hidden", help="What the banner shows.").tag(sync=True)
    note = Unicode("", help="A short secondary line: failure reason or progress.").tag(sync=True)
    reason = Unicode(
        "manual",
        help="""The trigger that produced it: "manual", "away", "post_turn", "idle" or "resume".
        An internal name: the browser shows it in words ("while you were away", "after the
        agent's turn", "after a quiet spell", "from your last session"; nothing for "manual").""",
    ).tag(sync=True)
    notice = Unicode(
        "",
        help="""A one-time line about the recap itself, shown under it: that automatic recaps
        now go to a hosted model, or why this one was written offline. Not part of
        :meth:`plain_text` (a saved notebook keeps the recap, not the announcement).""",
    ).tag(sync=True)
    dismissed = Bool(False, help="Set by the dismiss button in the browser.").tag(sync=True)
    links = List(
        Dict(),
        help="""Spans of ``text`` that name a cell: ``{start, end, cell_id}`` with UTF-16
        offsets. Made by jupyter_recap from recorded cell ids, never from model output; the
        labextension turns them into links that select the cell.""",
    ).tag(sync=True)
    progress = Dict(
        None,
        allow_none=True,
        help="""The task list's progress, ``{done, total, blocked}``, shown as a progress bar
        (``note`` holds its text form for plain-text front ends), or None.""",
    ).tag(sync=True)
    stop_cell = Dict(
        None,
        allow_none=True,
        help="""Where the work stopped: ``{cell_id, label, failed}`` (the failed cell, else the
        latest agent cell), or None.""",
    ).tag(sync=True)

    def __init__(self, display_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._latest: tuple[str, str, str] | None = None
        """The latest recap shown (text, model, progress line), for :meth:`plain_text`."""
        self.display_id = display_id or f"jupyter-recap-banner-{self.model_id}"
        """The one display id of every output of this banner (kept after :meth:`close`). The
        kernel passes the id of the output ``%load_ext`` left for it, since the banner itself
        is made only when it first has something to show."""
        self.handoff: Callable[[], str] | None = None
        """Writes the source of a handoff cell from the session's state (the kernel sets it;
        it raises :class:`~jupyter_recap.errors.RecapError` when there is nothing to hand
        off). The *Continue* button of a view above the active cell asks for it."""
        self.on_msg(self._on_view_message)

    def show(
        self,
        text: str,
        model: str,
        reason: str = "manual",
        note: str = "",
        links: Sequence[Mapping[str, Any]] | None = None,
        stop_cell: Mapping[str, Any] | None = None,
        progress: Mapping[str, int] | None = None,
        notice: str = "",
    ) -> None:
        """Show a finished recap written by engine ``model``, with its cell links and the task
        list's progress (``note`` is its text form, for plain text)."""
        self._set(
            state="shown",
            text=text,
            model=model,
            reason=reason,
            note=note,
            links=[dict(link) for link in links or ()],
            stop_cell=dict(stop_cell) if stop_cell is not None else None,
            progress=dict(progress) if progress is not None else None,
            notice=notice,
        )
        self._latest = (self.text, self.model, self.note)

    def set_progress(self, note: str, progress: Mapping[str, int] | None) -> bool:
        """Refresh a shown recap's task-progress line (``note``) and bar; True if that changed
        :meth:`plain_text`.

        A banner that is not showing its recap keeps the progress it was shown with, in the
        browser and in :meth:`plain_text`.
        """
        if self.state != "shown":
            return False
        with self.hold_sync():
            self.set_trait("note", printable(note))
            self.set_trait("progress", dict(progress) if progress is not None else None)
        latest = self._latest
        if latest is None or latest[2] == self.note:
            return False
        self._latest = (latest[0], latest[1], self.note)
        return True

    def drafting(self, model: str = "", reason: str = "manual") -> None:
        """Show the "drafting…" state while a recap is being written."""
        self._set(state="drafting", text="", model=model, reason=reason, note="", **_NO_LINKS)

    def fail(self, note: str, model: str = "") -> None:
        """Show that drafting failed, with a short human-readable reason in ``note``."""
        self._set(state="failed", text="", model=model or self.model, note=note, **_NO_LINKS)

    def clear(self) -> None:
        """Hide the banner and forget its text."""
        self._set(state="hidden", text="", note="", **_NO_LINKS)

    def _set(self, **values: Any) -> None:
        """Apply ``values`` and reset ``dismissed``, sending one update to the front end.

        Every text is made inert first: the browser writes it with ``textContent``, which
        would still let a bidi override reorder what is read, and :meth:`plain_text` goes to
        terminals (``jupyter console``), which would act on escape sequences. (Link offsets
        are computed by the caller on text that is already printable.)
        """
        with self.hold_sync():
            self.set_trait("dismissed", False)
            for name, value in values.items():
                self.set_trait(name, printable(value) if isinstance(value, str) else value)

    @observe("dismissed")
    def _on_dismissed(self, change: dict[str, Any]) -> None:
        """The dismiss button was clicked: hide the banner."""
        if change["new"]:
            self.state = "hidden"

    def _on_view_message(self, widget: Any, content: Any, buffers: Any) -> None:
        """A view's *Continue* was clicked: answer with the handoff cell's source (the view
        asks the labextension to insert it below the active cell, never run), or with the one
        line saying why there is none. Never raises into the kernel's comm handling."""
        if not isinstance(content, dict) or content.get("type") != HANDOFF:
            return
        request = content.get("id")
        if not isinstance(request, str) or not request or len(request) > REQUEST_ID_CHARS:
            return
        reply: dict[str, str] = {"type": HANDOFF, "id": request}
        try:
            if self.handoff is None:
                raise RecapError("this kernel does not write handoffs")
            reply["source"] = self.handoff()
        except RecapError as error:
            reply["error"] = printable(str(error))
        except Exception:  # noqa: BLE001 - the page gets one line, the debug log the rest
            get_logger().exception("banner: writing the handoff failed")
            reply["error"] = "the handoff could not be written (see the debug log)"
        with contextlib.suppress(Exception):  # the comm may be gone (kernel shutting down)
            self.send(reply)

    def close(self) -> None:
        """Close the banner and the ``Layout`` widget DOMWidget made for it.

        ipywidgets closes only the widget itself; its layout keeps a comm open in the kernel
        (and a model in the page), one more on every ``%load_ext`` / ``%unload_ext``.
        """
        layout = self.layout
        super().close()
        if layout is not None:
            layout.close()

    def plain_text(self) -> str:
        """The latest recap as plain text (header with its engine, the recap, its progress
        line), or ``""`` before the first: what terminals and saved notebooks show.

        Passing states (drafting, failed, hidden, dismissed) leave it unchanged, because a
        saved notebook keeps this text long after they are over.
        """
        if self._latest is None:
            return ""
        text, model, note = self._latest
        header = f"{LABEL} · {model}" if model else LABEL
        return printable("\n".join(line for line in (header, text, note) if line))

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view, with :meth:`plain_text` as the ``text/plain`` fallback."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, "text/plain": self.plain_text()}, metadata
