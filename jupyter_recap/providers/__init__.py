"""Language-model providers: OpenAI-compatible, Anthropic and Ollama, over plain httpx.

Importing this package is cheap: httpx is imported only when a request is made.
"""

from __future__ import annotations

from .anthropic import AnthropicProvider
from .base import (
    MAX_OUTPUT_TOKENS,
    OFFLINE,
    CancelToken,
    Completion,
    CompletionRequest,
    ModelRef,
    Provider,
)
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
