"""See what an agent cell shows without changing, swallowing or delaying any of it.

While an agent cell runs we tee three things: rich display messages (``display_pub``), text
written to stdout/stderr, and ``set_next_input`` (jupyter-ai's ``-f code`` puts its answer into
the next cell that way). Everything is forwarded first and recorded second, and the record is
bounded: head and tail only, so a cell that prints 50 MB costs a few kilobytes.

The three kinds are kept apart, because they mean different things: a display is an answer, a
print may be a progress line, stderr is where jupyter-ai says it failed
(:func:`~jupyter_recap.record.outputs.agent_reply` decides).
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from typing import Any

from ..record.outputs import bundle_text
from .shell import Shell

HEAD_CHARS = 6000
TAIL_CHARS = 6000
#: Displays kept from the start and from the end of a cell that shows very many.
KEEP_DISPLAYS = 50


class BoundedText:
    """Accumulates text, keeping only its head and its tail."""

    def __init__(self, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.total = 0

    def add(self, text: str) -> None:
        """Record ``text``; O(len(text)) at worst, memory bounded by head + tail."""
        if not text:
            return
        self.total += len(text)
        room = self._head_limit - self._head_size
        if room > 0:
            self._head.append(text[:room])
            self._head_size += min(room, len(text))
            text = text[room:]
            if not text:
                return
        text = text[-self._tail_limit :]
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    def text(self) -> str:
        """The head, a marker with how much was dropped, and the tail."""
        head = "".join(self._head)
        tail = "".join(self._tail)[-self._tail_limit :]
        dropped = self.total - len(head) - len(tail)
        if dropped > 0:
            return f"{head}\n… [{dropped} characters omitted] …\n{tail}"
        return head + tail


class DisplayTexts:
    """The readable texts of a cell's displays, in order, bounded like :class:`BoundedText`.

    A display that is updated in place (a streamed answer, a status line rewritten with
    ``display_id``) counts once, with its latest text: that is what the person sees.
    """

    def __init__(self, keep: int = KEEP_DISPLAYS) -> None:
        self._keep = keep
        self._head: list[list[Any]] = []  # [display_id or None, text]
        self._tail: deque[list[Any]] = deque()
        self.dropped = 0

    def add(self, text: str, display_id: str | None = None) -> None:
        """Record one display, or the new text of the display ``display_id`` already shown."""
        if len(text) > HEAD_CHARS + TAIL_CHARS:
            bounded = BoundedText()
            bounded.add(text)
            text = bounded.text()
        if display_id is not None:
            for item in (*self._head, *self._tail):
                if item[0] == display_id:
                    item[1] = text
                    return
        if len(self._head) < self._keep:
            self._head.append([display_id, text])
            return
        self._tail.append([display_id, text])
        if len(self._tail) > self._keep:
            self._tail.popleft()
            self.dropped += 1

    def texts(self) -> list[str]:
        """Every kept text, with a marker where displays were dropped."""
        head = [str(text) for _, text in self._head]
        tail = [str(text) for _, text in self._tail]
        if self.dropped:
            head.append(f"… [{self.dropped} displays omitted] …")
        return [text for text in (*head, *tail) if text]


class OutputTap:
    """Tees one cell's outputs into bounded records; ``start`` then ``stop``."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.stdout = BoundedText()
        self.stderr = BoundedText()
        self.displays = DisplayTexts()
        self.next_input: str | None = None
        self.metadata: list[dict[str, Any]] = []
        self._undo: list[Any] = []
        # Terminal IPython prints displays and Out[n] to stdout; those bytes are already
        # recorded in richer form, so the stream tap pauses while they are written.
        self._paused = 0

    def start(self) -> None:
        """Begin teeing; every change is undone by :meth:`stop`."""
        self._tap_display()
        self._tap_displayhook()
        for name in ("stdout", "stderr"):
            self._tap_stream(name)
        self._tap_next_input()

    def stop(self) -> None:
        """Restore everything :meth:`start` changed, newest first."""
        while self._undo:
            undo = self._undo.pop()
            with contextlib.suppress(Exception):  # restoring must continue past one failure
                undo()

    # -- the three taps --------------------------------------------------------------------

    def _record_bundle(self, data: Any, metadata: Any, transient: Any = None) -> None:
        if isinstance(data, dict):
            display_id = transient.get("display_id") if isinstance(transient, dict) else None
            self.displays.add(
                bundle_text(data), display_id if isinstance(display_id, str) else None
            )
        if isinstance(metadata, dict) and metadata:
            self.metadata.append(metadata)

    def _tap_display(self) -> None:
        pub = getattr(self.shell, "display_pub", None)
        if pub is None:
            return
        if hasattr(pub, "register_hook"):
            # ipykernel: hooks see each display message and must hand it back unchanged.
            def hook(msg: dict[str, Any]) -> dict[str, Any]:
                if msg.get("msg_type") in ("display_data", "update_display_data"):
                    content = msg.get("content", {})
                    self._record_bundle(
                        content.get("data"), content.get("metadata"), content.get("transient")
                    )
                return msg

            pub.register_hook(hook)
            self._undo.append(lambda: pub.unregister_hook(hook))
            return
        original = pub.publish

        forward = self._pausing(original)

        def publish(data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
            result = forward(data, metadata, *args, **kwargs)
            self._record_bundle(data, metadata, kwargs.get("transient"))
            return result

        pub.publish = publish
        self._undo.append(lambda: _restore_attr(pub, "publish", publish))

    def _tap_stream(self, name: str) -> None:
        stream = getattr(sys, name)
        original = stream.write
        record = self.stdout if name == "stdout" else self.stderr

        def write(text: Any) -> Any:
            result = original(text)
            if isinstance(text, str) and not self._paused:
                record.add(text)
            return result

        try:
            stream.write = write  # keeps the stream object (and isinstance checks) unchanged
            self._undo.append(lambda: _restore_attr(stream, "write", write))
        except (AttributeError, TypeError):
            # Built-in streams refuse new attributes: swap in a forwarding proxy instead.
            proxy = _StreamProxy(stream, write)
            setattr(sys, name, proxy)

            def restore() -> None:
                if getattr(sys, name) is proxy:  # someone else's replacement stays
                    setattr(sys, name, stream)

            self._undo.append(restore)

    def _tap_displayhook(self) -> None:
        # The cell's returned value is formatted by the recorder from ExecutionResult.result;
        # terminal IPython's echo of it ("Out[n]: …") must not be recorded a second time.
        hook = getattr(self.shell, "displayhook", None)
        for name in ("write_output_prompt", "write_format_data"):
            original = getattr(hook, name, None)
            if original is None:
                continue
            paused = self._pausing(original)
            setattr(hook, name, paused)
            self._undo.append(lambda name=name, paused=paused: _restore_attr(hook, name, paused))

    def _pausing(self, function: Any) -> Any:
        def paused(*args: Any, **kwargs: Any) -> Any:
            self._paused += 1
            try:
                return function(*args, **kwargs)
            finally:
                self._paused -= 1

        return paused

    def _tap_next_input(self) -> None:
        shell = self.shell
        original = shell.set_next_input

        def set_next_input(text: str, replace: bool = False) -> Any:
            self.next_input = text
            return original(text, replace=replace)

        # An instance attribute over the method, for the length of the cell (undone by stop).
        setattr(shell, "set_next_input", set_next_input)  # noqa: B010 - patching a method
        self._undo.append(lambda: _restore_attr(shell, "set_next_input", set_next_input))


def _restore_attr(obj: Any, name: str, ours: Any) -> None:
    """Remove our instance attribute, unless someone replaced it after us."""
    if obj.__dict__.get(name) is ours:
        del obj.__dict__[name]


class _StreamProxy:
    """Forwards every attribute to the real stream; only ``write`` is teed."""

    def __init__(self, stream: Any, write: Any) -> None:
        self._stream = stream
        self.write = write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
