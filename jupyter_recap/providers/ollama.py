"""Ollama's native chat API (no key; a local or LAN server)."""

from __future__ import annotations

from typing import Any

from ..errors import ProviderBadResponse
from .base import CancelToken, Completion, CompletionRequest, ModelRef
from .transport import post_json, text_or_none, token_count

DEFAULT_HOST = "http://127.0.0.1:11434"
_DEFAULT_PORT = 11434


def normalize_host(host: str) -> str:
    """``OLLAMA_HOST`` as a base URL, read the way the ollama CLI reads it.

    ``0.0.0.0:11434`` and ``myhost`` have no scheme: they mean ``http://`` and, without a port,
    port 11434. A value with a scheme is used as given.
    """
    host = host.strip().rstrip("/")
    if not host:
        return DEFAULT_HOST
    if "://" in host:
        return host
    hostport = host.split("/", 1)[0]
    has_port = hostport.rpartition(":")[2].isdigit() and not hostport.endswith("]")
    return f"http://{host}" if has_port else f"http://{hostport}:{_DEFAULT_PORT}"


class OllamaProvider:
    """POST ``{host}/api/chat`` with streaming and thinking switched off."""

    def __init__(self, ref: ModelRef, *, host: str = DEFAULT_HOST) -> None:
        self._ref = ref
        self._host = normalize_host(host)

    @property
    def ref(self) -> ModelRef:
        """Which provider and model this is."""
        return self._ref

    @property
    def host(self) -> str:
        """The base URL requests go to."""
        return self._host

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body for ``request``: no streaming, no thinking, a small output cap."""
        return {
            "model": self._ref.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "stream": False,
            "think": False,
            "options": {"num_predict": request.max_tokens, "temperature": 0.3},
        }

    def complete(self, request: CompletionRequest, cancel: CancelToken | None = None) -> Completion:
        """Ask for one chat answer and return its text and token counts."""
        data = post_json(
            f"{self._host}/api/chat",
            headers={"content-type": "application/json"},
            body=self.request_body(request),
            timeout=request.timeout,
            cancel=cancel,
            provider_id=self._ref.id,
        )
        message = data.get("message")
        text = text_or_none(message.get("content") if isinstance(message, dict) else None)
        stop = data.get("done_reason")
        stop = stop if isinstance(stop, str) else None
        if text is None:
            why = f" (done_reason {stop})" if stop else ""
            raise ProviderBadResponse(f"ollama answer has no text{why}", provider=self._ref.id)
        return Completion(
            text=text.strip(),
            tokens_in=token_count(data.get("prompt_eval_count")),
            tokens_out=token_count(data.get("eval_count")),
            stop_reason=stop,
        )
