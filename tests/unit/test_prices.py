"""Model prices: the built-in table, overrides, token estimates and how a cost is shown."""

from __future__ import annotations

import pytest

from jupyter_recap.pipeline.prices import PRICES, call_cost, estimate_tokens, price_for
from jupyter_recap.textutil import format_cost


def test_the_table_covers_the_common_models_as_our_ids_spell_them() -> None:
    for model in (
        "openai:gpt-4o",
        "openai:gpt-4o-mini",
        "openai:gpt-4.1",
        "openai:gpt-4.1-mini",
        "openai:gpt-4.1-nano",
        "openai:o3-mini",
        "openai:o4-mini",
        "openai:gpt-3.5-turbo",
        "anthropic:claude-3-5-haiku",
        "anthropic:claude-3-5-sonnet",
        "anthropic:claude-3-7-sonnet",
        "anthropic:claude-sonnet-4",
        "anthropic:claude-opus-4",
        "anthropic:claude-haiku-4-5",
        "anthropic:claude-sonnet-4-5",
    ):
        assert price_for(model) == PRICES[model]
    for price_in, price_out in PRICES.values():
        assert 0 < price_in <= price_out  # output costs more than input everywhere


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("anthropic:claude-3-5-haiku-20241022", "anthropic:claude-3-5-haiku"),
        ("anthropic:claude-3-5-sonnet-latest", "anthropic:claude-3-5-sonnet"),
        ("anthropic:claude-sonnet-4-20250514", "anthropic:claude-sonnet-4"),
        ("anthropic:claude-sonnet-4-5-20250929", "anthropic:claude-sonnet-4-5"),
        ("anthropic:claude-opus-4-5-20251101", "anthropic:claude-opus-4-5"),
        ("openai:gpt-4o-2024-08-06", "openai:gpt-4o"),
        ("openai:gpt-4o-mini-2024-07-18", "openai:gpt-4o-mini"),
        ("openai:o3-mini-2025-01-31", "openai:o3-mini"),
    ],
)
def test_dated_ids_find_their_model(model: str, key: str) -> None:
    assert price_for(model) == PRICES[key]


def test_a_longer_name_is_never_priced_as_its_shorter_sibling() -> None:
    assert price_for("openai:gpt-4o-mini") == (0.15, 0.60)
    assert price_for("openai:gpt-4o") == (2.50, 10.00)
    assert price_for("openai:gpt-4.1-nano") != price_for("openai:gpt-4.1")
    assert price_for("anthropic:claude-opus-4-5") != price_for("anthropic:claude-opus-4")
    # a prefix that does not end at a separator is another model, not a variant
    assert price_for("openai:gpt-4omni") is None
    assert price_for("openai:o3x") is None


def test_other_spellings_are_normalised() -> None:
    assert price_for("openai-chat:gpt-4o-mini") == (0.15, 0.60)
    assert price_for("gpt-4o-mini") == (0.15, 0.60)
    assert price_for("anthropic-chat:claude-3-5-haiku-20241022") == (0.80, 4.00)
    assert price_for("claude-sonnet-4-5") == (3.00, 15.00)
    assert price_for("OpenAI:GPT-4o-mini") == (0.15, 0.60)
    assert price_for("chatgpt") == PRICES["openai:gpt-3.5-turbo"]  # jupyter-ai's alias
    # OpenRouter passes on the vendors' list prices and spells Anthropic versions with dots
    assert price_for("openrouter:openai/gpt-4o-mini") == (0.15, 0.60)
    assert price_for("openrouter:anthropic/claude-3.5-sonnet") == (3.00, 15.00)
    assert price_for("openrouter:meta-llama/llama-3.3-70b-instruct") is None


def test_unknown_models_have_no_price_and_nothing_raises() -> None:
    for model in ("openai:gpt-99", "anthropic:claude-9", "mistral:large", "llama3", "", "  "):
        assert price_for(model) is None
        assert call_cost(model, 1000, 1000) is None
    assert price_for(None) is None  # type: ignore[arg-type]
    assert price_for("openai:gpt-4o", {"openai:gpt-4o": "cheap"}) == (2.50, 10.00)  # type: ignore[dict-item]


def test_local_models_are_free() -> None:
    assert price_for("ollama:llama3.2") == (0.0, 0.0)
    assert price_for("ollama/qwen2.5:7b") == (0.0, 0.0)
    assert price_for("ollama_chat:mistral") == (0.0, 0.0)
    assert price_for("offline") == (0.0, 0.0)
    assert call_cost("ollama:llama3.2", 50_000, 2_000) == 0.0


def test_overrides_come_first_and_extend_the_table() -> None:
    overrides = {
        "openai:gpt-4o-mini": [0.1, 0.4],
        "openrouter:meta-llama/llama-3.3-70b-instruct": (0.12, 0.3),
        "anthropic:claude-3-5-haiku": [1, 5],
        "gpt-4.1": [1, 4],  # another spelling of the key
        "ollama:llama3.2": [0.01, 0.01],  # someone paying for their GPU time
    }
    assert price_for("openai:gpt-4o-mini", overrides) == (0.1, 0.4)
    assert price_for("openai:gpt-4o", overrides) == (2.50, 10.00)  # not the override of -mini
    assert price_for("openrouter:meta-llama/llama-3.3-70b-instruct", overrides) == (0.12, 0.3)
    assert price_for("anthropic:claude-3-5-haiku-20241022", overrides) == (1.0, 5.0)
    assert price_for("openai:gpt-4.1", overrides) == (1.0, 4.0)
    assert price_for("openai:gpt-4.1-mini", overrides) == (0.40, 1.60)  # the table's sibling
    assert price_for("ollama:llama3.2", overrides) == (0.01, 0.01)
    assert price_for("ollama:phi4", overrides) == (0.0, 0.0)
    assert price_for("openai:gpt-4o-mini", {"openai:gpt-4o-mini": [-1, 1]}) == (0.15, 0.60)


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


def test_call_cost() -> None:
    # 10,000 in and 500 out on gpt-4o-mini: 10,000 × 0.15 / 1e6 + 500 × 0.60 / 1e6
    assert call_cost("openai:gpt-4o-mini", 10_000, 500) == pytest.approx(0.0018)
    assert call_cost("anthropic:claude-sonnet-4-5-20250929", 1_000_000, 100_000) == pytest.approx(
        4.5
    )
    assert call_cost("openai:x", 1000, 0, {"openai:x": [2, 0]}) == pytest.approx(0.002)
    assert call_cost("openai:gpt-4o", -5, 0) == 0.0


@pytest.mark.parametrize(
    ("usd", "shown"),
    [
        (None, "n/a"),
        (0.0, "$0"),
        (0.0031, "~$0.0031"),
        (0.00314159, "~$0.0031"),
        (0.00004, "<$0.0001"),
        (0.0123, "~$0.01"),
        (1.2449, "~$1.24"),
        (1234.5, "~$1,234.50"),
        (float("nan"), "n/a"),
        (-1.0, "n/a"),
    ],
)
def test_format_cost(usd: float | None, shown: str) -> None:
    assert format_cost(usd) == shown
