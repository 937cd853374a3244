"""The seam between the recap pipeline and a language model: one request, one text answer."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ...errors import Cancelled

#: Output budget of one recap call; a recap is 1–3 sentences.
MAX_OUTPUT_TOKENS = 256


@dataclass(frozen=True)
class ModelRef:
    """A model on a provider we speak to (``openai``, ``anthropic``, ``ollama``, ``offline``)."""

    provider: str
    model: str

    @property
    def id(self) -> str:
        """The canonical ``provider:model`` spelling (just ``offline`` for the offline engine)."""
        return "offline" if self.provider == "offline" else f"{self.provider}:{self.model}"

    def __str__(self) -> str:
        return self.id


OFFLINE = ModelRef("offline", "offline")


@dataclass(frozen=True)
class CompletionRequest:
    """What the pipeline asks of a model: a system prompt and one user message."""

    system: str
    user: str
    max_tokens: int = MAX_OUTPUT_TOKENS
    timeout: float = 60.0
    """Seconds until the whole call (connect, send, wait, read) is abandoned."""


@dataclass(frozen=True)
class Completion:
    """The model's answer and what it cost."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    stop_reason: str | None = None


class CancelToken:
    """Cancels an in-flight draft from another thread; providers abort their HTTP request."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel: run every registered callback once (e.g. close the HTTP response)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            with contextlib.suppress(Exception):  # a failing abort must not stop the others
                callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancel (at once if already cancelled); returns an unregister."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)

                def unregister() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return unregister
        callback()
        return lambda: None

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~jupyter_recap.errors.Cancelled` if cancelled."""
        if self._event.is_set():
            raise Cancelled("the draft was cancelled")

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a cancel; True if cancelled."""
        return self._event.wait(timeout)


class Provider(Protocol):
    """A language model we can ask for one completion."""

    @property
    def ref(self) -> ModelRef:
        """Which provider and model this is."""
        ...

    def complete(self, request: CompletionRequest, cancel: CancelToken | None = None) -> Completion:
        """Answer ``request``; raise a :class:`~jupyter_recap.errors.ProviderError` on failure."""
        ...


def error_message(raw: bytes) -> str:
    """The message in an error body: OpenAI/Anthropic ``error.message``, Ollama ``error``,
    jupyter_server's ``message``. Shared by the model providers and the kernel's server link
    (here, with no httpx import behind it)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if not isinstance(error, str):
        error = data.get("message")
    return error if isinstance(error, str) else ""
