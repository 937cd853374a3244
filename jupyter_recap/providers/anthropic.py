"""Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from ..errors import ProviderBadResponse
from .base import CancelToken, Completion, CompletionRequest, ModelRef
from .transport import post_json, text_or_none, token_count

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicProvider:
    """POST ``{base_url}/v1/messages``; ``x-api-key`` is sent only when there is a key."""

    def __init__(
        self, ref: ModelRef, *, api_key: str | None, base_url: str = DEFAULT_BASE_URL
    ) -> None:
        self._ref = ref
        self._api_key = api_key or None
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")

    @property
    def ref(self) -> ModelRef:
        """Which provider and model this is."""
        return self._ref

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body for ``request``: no tools, no extended thinking, a small output cap."""
        return {
            "model": self._ref.model,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "max_tokens": request.max_tokens,
        }

    def complete(self, request: CompletionRequest, cancel: CancelToken | None = None) -> Completion:
        """Ask for one message and return its text blocks joined, with token counts."""
        headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = post_json(
            f"{self._base_url}/v1/messages",
            headers=headers,
            body=self.request_body(request),
            timeout=request.timeout,
            cancel=cancel,
            provider_id=self._ref.id,
        )
        blocks = data.get("content")
        blocks = blocks if isinstance(blocks, list) else []
        text = text_or_none(
            "".join(
                block["text"]
                for block in blocks
                if isinstance(block, dict)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            )
        )
        stop = data.get("stop_reason")
        stop = stop if isinstance(stop, str) else None
        if text is None:
            why = f" (stop_reason {stop})" if stop else ""
            raise ProviderBadResponse(f"anthropic answer has no text{why}", provider=self._ref.id)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            text=text.strip(),
            tokens_in=token_count(usage.get("input_tokens")),
            tokens_out=token_count(usage.get("output_tokens")),
            stop_reason=stop,
        )
