"""OpenAI Chat Completions, and the servers that speak it (OpenRouter, vLLM, llama.cpp, …)."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ProviderBadResponse
from .base import CancelToken, Completion, CompletionRequest, ModelRef
from .transport import post_json, text_or_none, token_count

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


class OpenAIProvider:
    """POST ``{base_url}/chat/completions``; the bearer token is sent only when there is a key."""

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

    def complete(self, request: CompletionRequest, cancel: CancelToken | None = None) -> Completion:
        """Ask for one chat completion and return its text and token counts."""
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        data = post_json(
            f"{self._base_url}/chat/completions",
            headers=headers,
            body=self.request_body(request),
            timeout=request.timeout,
            cancel=cancel,
            provider_id=self._ref.id,
        )
        name = self._ref.provider
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderBadResponse(f"{name} answer has no choices", provider=self._ref.id)
        choice = choices[0]
        message = choice.get("message")
        text = text_or_none(message.get("content") if isinstance(message, dict) else None)
        finish = choice.get("finish_reason")
        stop = finish if isinstance(finish, str) else None
        if text is None:
            why = f" (finish_reason {stop})" if stop else ""
            raise ProviderBadResponse(f"{name} answer has no text{why}", provider=self._ref.id)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            text=text.strip(),
            tokens_in=token_count(usage.get("prompt_tokens")),
            tokens_out=token_count(usage.get("completion_tokens")),
            stop_reason=stop,
        )
