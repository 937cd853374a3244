"""OpenAI Chat Completions, and the servers that speak it (OpenRouter, vLLM, llama.cpp, …)."""

from __future__ import annotations

import re
from typing import Any

from ...errors import ProviderBadResponse
from .base import CompletionRequest
from .jsonchat import Answer, KeyedProvider, as_dict, as_str, text_or_none, token_count

DEFAULT_BASE_URL = "https://api.openai.com/v1"

#: Reasoning models count their hidden reasoning against the output cap, so a 256-token cap
#: could be spent before any visible text; this much extra keeps room for the answer.
REASONING_HEADROOM = 2048

_O_SERIES = re.compile(r"o\d+(?:-|$)")
_GPT5 = re.compile(r"gpt-5(?P<minor>\.\d+)?(?:-|$)")


def reasoning_effort(model: str) -> tuple[bool, str | None]:
    """Whether ``model`` is a reasoning model, and the ``reasoning_effort`` to ask of it.

    gpt-5 gets "minimal" (its cheapest); gpt-5.x gets nothing, as its default ("none") is
    cheaper still and "minimal" is rejected; the o-series' cheapest is "low".
    """
    name = model.rsplit("/", 1)[-1].lower()  # OpenRouter spells them "openai/gpt-5-mini"
    if _O_SERIES.match(name):
        return True, "low"
    match = _GPT5.match(name)
    if match and "-chat" not in name:  # gpt-5-chat-latest is an ordinary chat model
        return True, None if match.group("minor") else "minimal"
    return False, None


class OpenAIProvider(KeyedProvider):
    """POST ``{base_url}/chat/completions``; the bearer token is sent only when there is a key."""

    stop_field = "finish_reason"

    default_base_url = DEFAULT_BASE_URL

    def endpoint(self) -> str:
        return f"{self._base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body for ``request``: no tools, no streaming, a small output cap."""
        body: dict[str, Any] = {
            "model": self._ref.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "stream": False,
        }
        reasoning, effort = reasoning_effort(self._ref.model)
        if reasoning:  # these reject max_tokens and temperature
            body["max_completion_tokens"] = request.max_tokens + REASONING_HEADROOM
            if effort:
                body["reasoning_effort"] = effort
        else:
            body["max_tokens"] = request.max_tokens
            body["temperature"] = 0.3
        return body

    def parse(self, data: dict[str, Any]) -> Answer:
        """The first choice's text and finish reason, and the token counts."""
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderBadResponse(
                f"{self._ref.provider} answer has no choices", provider=self._ref.id
            )
        choice = choices[0]
        usage = as_dict(data.get("usage"))
        return Answer(
            text_or_none(as_dict(choice.get("message")).get("content")),
            as_str(choice.get("finish_reason")),
            token_count(usage.get("prompt_tokens")),
            token_count(usage.get("completion_tokens")),
        )
