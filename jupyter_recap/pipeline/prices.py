"""What a model call costs: a small table of list prices, and token estimates.

:data:`PRICES` holds the vendors' public list prices in US dollars per million tokens (input,
output) for common models, as published in late 2025. They are estimates: they ignore
cached-input discounts, batch prices, long-context surcharges, taxes and any deal a person has,
and vendors change them. ``Recap.prices`` (``c.Recap.prices = {"openai:gpt-4o": [2.5, 10]}``)
overrides an entry or adds a model the table lacks. A model in neither is priced ``None``: its
tokens are counted and no price is invented for it. Ollama models run locally and cost nothing.
A cost as people read it (``~$1.24``) is :func:`jupyter_recap.textutil.format_cost`.

Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from ..errors import ConfigError
from ..settings import MAX_PRICE
from .models import parse_model_id

#: USD per million tokens, (input, output), keyed by ``provider:model`` as our model ids spell
#: them. A dated or suffixed id (``anthropic:claude-3-5-haiku-20241022``) is priced by the
#: longest key it extends (see :func:`price_for`), so a family whose variants differ in price
#: needs each variant listed (``gpt-4o-mini`` beside ``gpt-4o``, ``o3-pro`` beside ``o3``).
PRICES: dict[str, tuple[float, float]] = {
    "openai:gpt-3.5-turbo": (0.50, 1.50),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:gpt-4.1": (2.00, 8.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
    "openai:gpt-4.1-nano": (0.10, 0.40),
    "openai:gpt-5": (1.25, 10.00),
    "openai:gpt-5-mini": (0.25, 2.00),
    "openai:gpt-5-nano": (0.05, 0.40),
    "openai:o3": (2.00, 8.00),
    "openai:o3-pro": (20.00, 80.00),
    "openai:o3-mini": (1.10, 4.40),
    "openai:o4-mini": (1.10, 4.40),
    "anthropic:claude-3-haiku": (0.25, 1.25),
    "anthropic:claude-3-5-haiku": (0.80, 4.00),
    "anthropic:claude-3-5-sonnet": (3.00, 15.00),
    "anthropic:claude-3-7-sonnet": (3.00, 15.00),
    "anthropic:claude-sonnet-4": (3.00, 15.00),
    "anthropic:claude-sonnet-4-5": (3.00, 15.00),
    "anthropic:claude-haiku-4-5": (1.00, 5.00),
    "anthropic:claude-opus-4": (15.00, 75.00),
    "anthropic:claude-opus-4-1": (15.00, 75.00),
    "anthropic:claude-opus-4-5": (5.00, 25.00),
}

#: Providers whose models run on the person's machine: a call costs nothing.
FREE_PROVIDERS = frozenset({"ollama", "offline"})

#: Characters per token in the estimate used when a provider reports no usage.
CHARS_PER_TOKEN = 4

# OpenRouter spells Anthropic's versions with dots ("anthropic/claude-3.5-sonnet").
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def _canonical(model_id: object) -> tuple[str, str]:
    """``(provider, canonical id)`` of any spelling; the lower-cased text when unparseable."""
    if not isinstance(model_id, str):
        return "", ""
    try:
        ref = parse_model_id(model_id)
    except ConfigError:
        text = model_id.strip().lower()
        return text.split(":", 1)[0] if ":" in text else "", text
    return (
        ref.provider,
        ref.id if ref.provider == "offline" else f"{ref.provider}:{ref.model.lower()}",
    )


def _price(value: object) -> tuple[float, float] | None:
    """``value`` as (input, output) when it is two finite non-negative numbers, else None."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        return None
    pair: list[float] = []
    for number in value:
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return None
        if not math.isfinite(number) or not 0 <= number <= MAX_PRICE:
            return None
        pair.append(float(number))
    return pair[0], pair[1]


def _lookup(key: str, table: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """The exact entry, else the longest key that ``key`` extends by ``-…`` or ``:…``."""
    if key in table:
        return table[key]
    best: str | None = None
    for candidate in table:
        if (
            key.startswith(candidate)
            and key[len(candidate)] in "-:"
            and (best is None or len(candidate) > len(best))
        ):
            best = candidate
    return None if best is None else table[best]


def _via_openrouter(key: str) -> str | None:
    """``openrouter:openai/gpt-4o`` → ``openai:gpt-4o``: OpenRouter passes on list prices."""
    vendor, _, model = key.partition(":")[2].partition("/")
    if vendor not in ("openai", "anthropic") or not model:
        return None
    model = model.split(":", 1)[0]  # ":free", ":beta" and the like
    return f"{vendor}:{_VERSION_DOT.sub('-', model) if vendor == 'anthropic' else model}"


def price_for(
    model_id: str,
    overrides: Mapping[str, Sequence[float]] | None = None,
    *,
    local: bool = False,
) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for ``model_id``, or None when unknown.

    ``overrides`` (``Recap.prices``) replace or add table entries. The exact id is looked up
    first, then the longest entry the id extends by ``-…`` or ``:…``, over the table and the
    overrides alike (``anthropic:claude-3-5-haiku-20241022`` finds ``anthropic:claude-3-5-haiku``;
    ``openai:gpt-4o-mini`` never finds ``openai:gpt-4o``, nor an override of it).
    Any spelling :func:`~jupyter_recap.pipeline.models.parse_model_id` accepts works
    (``openai-chat:gpt-4o-mini``, ``gpt-4o-mini``). Local models (Ollama) cost nothing unless
    overridden. ``local`` says the call goes to a server on this machine (an
    OpenAI-compatible vLLM, llama.cpp or LM Studio on localhost): a vendor's list price for the
    same model name does not apply, so it is free unless an override names it. Never raises:
    a malformed override is skipped.
    """
    provider, key = _canonical(model_id)
    if not key:
        return None
    if local:
        named = {_canonical(name)[1]: _price(value) for name, value in (overrides or {}).items()}
        found = _lookup(key, {name: pair for name, pair in named.items() if pair is not None})
        return (0.0, 0.0) if found is None else found
    table = PRICES
    if overrides:
        # One table, so the longest entry wins whichever side it is on: an override of
        # gpt-4.1 must not price gpt-4.1-mini, which the built-in table knows better.
        table = dict(PRICES)
        for name, value in overrides.items():
            pair = _price(value)
            if pair is not None:
                table[_canonical(name)[1]] = pair
    found = _lookup(key, table)
    if found is None and provider == "openrouter":
        routed = _via_openrouter(key)
        found = None if routed is None else _lookup(routed, table)
    if found is None and provider in FREE_PROVIDERS:
        return (0.0, 0.0)
    return found


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is (4 characters a token); at least 1 unless empty."""
    if not text:
        return 0
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def call_cost(
    model_id: str,
    tokens_in: int,
    tokens_out: int,
    overrides: Mapping[str, Sequence[float]] | None = None,
    *,
    local: bool = False,
) -> float | None:
    """The estimated price of one call in USD, or None when the model's price is unknown.
    ``local``: the model runs on this machine (see :func:`price_for`)."""
    price = price_for(model_id, overrides, local=local)
    if price is None:
        return None
    return (price[0] * max(0, tokens_in) + price[1] * max(0, tokens_out)) / 1_000_000
