"""Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from .base import CompletionRequest
from .jsonchat import Answer, KeyedProvider, as_dict, as_str, text_or_none, token_count

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicProvider(KeyedProvider):
    """POST ``{base_url}/v1/messages``; ``x-api-key`` is sent only when there is a key."""

    default_base_url = DEFAULT_BASE_URL

    def endpoint(self) -> str:
        return f"{self._base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body for ``request``: no tools, no extended thinking, a small output cap."""
        return {
            "model": self._ref.model,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "max_tokens": request.max_tokens,
        }

    def parse(self, data: dict[str, Any]) -> Answer:
        """The text blocks joined, the stop reason and the token counts."""
        blocks = data.get("content")
        text = "".join(
            block["text"]
            for block in (blocks if isinstance(blocks, list) else [])
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
        usage = as_dict(data.get("usage"))
        return Answer(
            text_or_none(text),
            as_str(data.get("stop_reason")),
            token_count(usage.get("input_tokens")),
            token_count(usage.get("output_tokens")),
        )
