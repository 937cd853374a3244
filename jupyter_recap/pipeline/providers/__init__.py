"""Language-model providers: OpenAI-compatible, Anthropic and Ollama, over plain httpx.

Importing this package is cheap: the provider modules load on first use, and httpx only when a
request is made.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .base import (
    MAX_OUTPUT_TOKENS,
    OFFLINE,
    CancelToken,
    Completion,
    CompletionRequest,
    ModelRef,
    Provider,
)

if TYPE_CHECKING:
    from .anthropic import AnthropicProvider
    from .ollama import OllamaProvider
    from .openai import OpenAIProvider

__all__ = [
    "MAX_OUTPUT_TOKENS",
    "OFFLINE",
    "AnthropicProvider",
    "CancelToken",
    "Completion",
    "CompletionRequest",
    "ModelRef",
    "OllamaProvider",
    "OpenAIProvider",
    "Provider",
]

_LAZY = {
    "AnthropicProvider": "anthropic",
    "OllamaProvider": "ollama",
    "OpenAIProvider": "openai",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)
