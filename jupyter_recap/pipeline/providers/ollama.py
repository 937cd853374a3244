"""Ollama's native chat API (no key; a local or LAN server)."""

from __future__ import annotations

from typing import Any

from .base import CompletionRequest, ModelRef
from .jsonchat import Answer, JSONChatProvider, as_dict, as_str, text_or_none, token_count

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


class OllamaProvider(JSONChatProvider):
    """POST ``{host}/api/chat`` with streaming and thinking switched off."""

    stop_field = "done_reason"

    def __init__(self, ref: ModelRef, *, host: str = DEFAULT_HOST) -> None:
        super().__init__(ref)
        self._host = normalize_host(host)

    @property
    def host(self) -> str:
        """The base URL requests go to."""
        return self._host

    def endpoint(self) -> str:
        return f"{self._host}/api/chat"

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

    def parse(self, data: dict[str, Any]) -> Answer:
        """The message text, the done reason and the token counts."""
        return Answer(
            text_or_none(as_dict(data.get("message")).get("content")),
            as_str(data.get("done_reason")),
            token_count(data.get("prompt_eval_count")),
            token_count(data.get("eval_count")),
        )
