"""Model ids, credentials, the choice of model, and building providers."""

from __future__ import annotations

from typing import Any

import pytest
from fakellm import DEFAULT_TEXT, FakeLLM, fake_llm, model_not_found, status  # noqa: F401
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strength import examples

from jupyter_recap.errors import ConfigError, ProviderError, ProviderHTTPError
from jupyter_recap.pipeline.models import (
    MISSING,
    MISSING_FOR_SECONDS,
    MissingModels,
    Resolution,
    has_credentials,
    is_local,
    make_provider,
    note_missing,
    parse_model_id,
    resolve_models,
)
from jupyter_recap.pipeline.models import model_not_found as model_not_found_error
from jupyter_recap.pipeline.providers import (
    OFFLINE,
    AnthropicProvider,
    CompletionRequest,
    ModelRef,
    OllamaProvider,
    OpenAIProvider,
)
from jupyter_recap.pipeline.service import draft_recap
from jupyter_recap.record.transcript import Transcript

OPENAI_KEY = {"OPENAI_API_KEY": "sk-test"}


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        # jupyter-ai 2: provider:model, split on the first colon
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("openai-chat:gpt-4o", "openai", "gpt-4o"),
        ("openai-chat-custom:my-vllm-model", "openai", "my-vllm-model"),
        ("anthropic-chat:claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest"),
        ("anthropic:claude-haiku-4-5", "anthropic", "claude-haiku-4-5"),
        ("ollama:llama3.2:3b", "ollama", "llama3.2:3b"),
        ("  Anthropic:claude-x  ", "anthropic", "claude-x"),
        # jupyter-ai 3 / LiteLLM: provider/model, split on the first slash
        ("openai/gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("ollama_chat/qwen3:8b", "ollama", "qwen3:8b"),
        ("ollama/llama3.2:3b", "ollama", "llama3.2:3b"),
        ("openrouter/anthropic/claude-3.5-sonnet", "openrouter", "anthropic/claude-3.5-sonnet"),
        ("openrouter:anthropic/claude-3.5-sonnet", "openrouter", "anthropic/claude-3.5-sonnet"),
        # jupyter-ai 2 aliases
        ("chatgpt", "openai", "gpt-3.5-turbo"),
        ("gpt4", "openai", "gpt-4"),
        ("gpt3", "openai", "text-davinci-003"),
        # bare names whose provider is obvious
        ("gpt-4o", "openai", "gpt-4o"),
        ("o3-mini", "openai", "o3-mini"),
        ("o1", "openai", "o1"),
        ("o4-mini", "openai", "o4-mini"),
        ("chatgpt-4o-latest", "openai", "chatgpt-4o-latest"),
        ("claude-opus-4-1", "anthropic", "claude-opus-4-1"),
        # the offline engine
        ("offline", "offline", "offline"),
        ("OFFLINE", "offline", "offline"),
    ],
)
def test_parse_model_id(text: str, provider: str, model: str) -> None:
    assert parse_model_id(text) == ModelRef(provider, model)


@pytest.mark.parametrize(
    "ref",
    [ModelRef("ollama", "llama3.2:3b"), ModelRef("openrouter", "anthropic/claude-3.5-sonnet"),
     ModelRef("openai", "gpt-4o"), OFFLINE],
)  # fmt: skip
def test_canonical_id_round_trips(ref: ModelRef) -> None:
    assert parse_model_id(ref.id) == ref


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("bedrock:anthropic.claude-v2", "'bedrock'"),
        ("gemini:gemini-1.5-pro", "'gemini'"),
        ("azure-chat-openai/gpt-4", "'azure-chat-openai'"),
        ("", "empty"),
        ("   ", "empty"),
        ("openai:", "no model"),
        ("llama3.2", "cannot tell the provider"),
        ("auto", "cannot tell the provider"),
    ],
)
def test_parse_model_id_errors(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_model_id(text)
    message = str(info.value)
    assert words in message
    assert "\n" not in message
    if words.startswith("'"):  # an unknown provider: say which ones work
        assert "openai, anthropic, ollama, openrouter" in message


@pytest.mark.parametrize(
    ("ref", "env", "expected"),
    [
        (ModelRef("openai", "gpt-4o"), {}, False),
        (ModelRef("openai", "gpt-4o"), {"OPENAI_API_KEY": "sk"}, True),
        (ModelRef("openai", "gpt-4o"), {"OPENAI_API_KEY": "  "}, False),
        (ModelRef("openai", "local"), {"OPENAI_BASE_URL": "http://localhost:8000/v1"}, True),
        (ModelRef("anthropic", "claude-x"), {"OPENAI_API_KEY": "sk"}, False),
        (ModelRef("anthropic", "claude-x"), {"ANTHROPIC_API_KEY": "sk-ant"}, True),
        (ModelRef("anthropic", "claude-x"), {"ANTHROPIC_BASE_URL": "http://proxy"}, True),
        (ModelRef("ollama", "llama3.2"), {}, True),
        (ModelRef("openrouter", "a/b"), {}, False),
        (ModelRef("openrouter", "a/b"), {"OPENAI_API_KEY": "sk"}, False),
        (ModelRef("openrouter", "a/b"), {"OPENROUTER_API_KEY": "sk-or"}, True),
        (OFFLINE, {}, True),
        (ModelRef("bedrock", "x"), {"OPENAI_API_KEY": "sk"}, False),
    ],
)
def test_has_credentials(ref: ModelRef, env: dict[str, str], expected: bool) -> None:
    assert has_credentials(ref, env) is expected


# --- resolve_models -------------------------------------------------------------------------


def test_auto_uses_active_model_with_credentials() -> None:
    result = resolve_models("auto", active_model="openai-chat:gpt-4o-mini", env=OPENAI_KEY)
    assert result == Resolution(
        (ModelRef("openai", "gpt-4o-mini"),), "active model openai:gpt-4o-mini (OPENAI_API_KEY set)"
    )


def test_auto_tries_fast_model_first() -> None:
    env = {**OPENAI_KEY, "ANTHROPIC_API_KEY": "sk-ant"}
    result = resolve_models(
        "auto", fast_model="openai:gpt-4o-mini", active_model="anthropic:claude-opus-4-1", env=env
    )
    assert result.candidates == (
        ModelRef("openai", "gpt-4o-mini"),
        ModelRef("anthropic", "claude-opus-4-1"),
    )
    assert result.why.startswith("fast model openai:gpt-4o-mini")
    assert OFFLINE not in result.candidates


def test_auto_fast_model_equal_to_active_is_tried_once() -> None:
    result = resolve_models("", fast_model="gpt-4o", active_model="openai:gpt-4o", env=OPENAI_KEY)
    assert result.candidates == (ModelRef("openai", "gpt-4o"),)


def test_auto_skips_fast_model_without_credentials() -> None:
    result = resolve_models(
        "auto", fast_model="anthropic:claude-haiku-4-5", active_model="gpt-4o", env=OPENAI_KEY
    )
    assert result.candidates == (ModelRef("openai", "gpt-4o"),)
    assert "anthropic:claude-haiku-4-5 skipped: no credentials" in result.why


def test_auto_without_credentials_is_offline() -> None:
    result = resolve_models("auto", active_model="anthropic:claude-x", env=OPENAI_KEY)
    assert result.candidates == (OFFLINE,)
    assert result.why.startswith("no model with credentials: offline engine")


def test_auto_with_no_model_at_all_is_offline() -> None:
    result = resolve_models("auto", env=OPENAI_KEY)
    assert result.candidates == (OFFLINE,)
    assert "offline" in result.why


def test_auto_ollama_needs_no_key() -> None:
    result = resolve_models("auto", active_model="ollama:llama3.2", env={})
    assert result.candidates == (ModelRef("ollama", "llama3.2"),)


@pytest.mark.parametrize("bad", ["bedrock:anthropic.claude-v2", "my-local-model", "gemini/x"])
def test_auto_bad_active_model_falls_back_to_offline(bad: str) -> None:
    result = resolve_models("auto", active_model=bad, env=OPENAI_KEY)
    assert result.candidates == (OFFLINE,)
    assert "active model skipped" in result.why
    assert "\n" not in result.why


def test_auto_bad_fast_model_is_skipped() -> None:
    result = resolve_models("auto", fast_model="gemini:x", active_model="gpt-4o", env=OPENAI_KEY)
    assert result.candidates == (ModelRef("openai", "gpt-4o"),)
    assert "fast model skipped" in result.why


def test_setting_wins_alone_over_active_model() -> None:
    result = resolve_models(
        "anthropic/claude-haiku-4-5", fast_model="gpt-4o", active_model="gpt-4o", env=OPENAI_KEY
    )
    # chosen by a person: used even without credentials (the call then reports the auth error)
    assert result.candidates == (ModelRef("anthropic", "claude-haiku-4-5"),)
    assert "Recap.model" in result.why


def test_setting_offline() -> None:
    result = resolve_models("offline", active_model="gpt-4o", env=OPENAI_KEY)
    assert result.candidates == (OFFLINE,)


def test_override_wins_over_everything() -> None:
    result = resolve_models(
        "anthropic:claude-x", override="ollama:qwen3", active_model="gpt-4o", env=OPENAI_KEY
    )
    assert result.candidates == (ModelRef("ollama", "qwen3"),)
    assert result.why.startswith("asked for this recap (--model)")


@pytest.mark.parametrize(("setting", "override"), [("bedrock:x", None), ("auto", "gemini:y")])
def test_bad_setting_or_override_raises(setting: str, override: str | None) -> None:
    with pytest.raises(ConfigError):
        resolve_models(setting, override=override, env=OPENAI_KEY)


# --- make_provider --------------------------------------------------------------------------


def test_make_provider_classes() -> None:
    assert isinstance(make_provider(ModelRef("openai", "gpt-4o"), {}), OpenAIProvider)
    assert isinstance(make_provider(ModelRef("openrouter", "a/b"), {}), OpenAIProvider)
    assert isinstance(make_provider(ModelRef("anthropic", "c"), {}), AnthropicProvider)
    assert isinstance(make_provider(ModelRef("ollama", "l"), {}), OllamaProvider)
    assert make_provider(ModelRef("ollama", "l"), {}).ref == ModelRef("ollama", "l")
    with pytest.raises(ValueError):
        make_provider(OFFLINE, {})
    with pytest.raises(ConfigError):
        make_provider(ModelRef("bedrock", "x"), {})


def _ask(ref: ModelRef, env: dict[str, str]) -> str:
    return make_provider(ref, env).complete(CompletionRequest("sys", "user", timeout=5)).text


def test_make_provider_uses_openai_env(fake_llm: FakeLLM) -> None:  # noqa: F811
    env = {"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": f"{fake_llm.url}/v1/"}
    assert _ask(ModelRef("openai", "gpt-4o"), env) == DEFAULT_TEXT
    path, headers, _ = fake_llm.requests[0]
    assert (path, headers["authorization"]) == ("/v1/chat/completions", "Bearer sk-o")


def test_make_provider_openrouter_uses_its_own_key(fake_llm: FakeLLM) -> None:  # noqa: F811
    env = {
        "OPENAI_API_KEY": "sk-o",
        "OPENROUTER_API_KEY": "sk-or",
        "OPENROUTER_BASE_URL": f"{fake_llm.url}/api/v1",
    }
    assert _ask(ModelRef("openrouter", "anthropic/claude-3.5-sonnet"), env) == DEFAULT_TEXT
    path, headers, body = fake_llm.requests[0]
    assert path == "/api/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-or"
    assert body["model"] == "anthropic/claude-3.5-sonnet"


def test_make_provider_uses_anthropic_env(fake_llm: FakeLLM) -> None:  # noqa: F811
    env = {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": fake_llm.url}
    assert _ask(ModelRef("anthropic", "claude-x"), env) == DEFAULT_TEXT
    assert fake_llm.requests[0].headers["x-api-key"] == "sk-ant"


def test_make_provider_ollama_host_without_scheme(fake_llm: FakeLLM) -> None:  # noqa: F811
    env = {"OLLAMA_HOST": fake_llm.url.removeprefix("http://")}
    assert _ask(ModelRef("ollama", "llama3.2"), env) == DEFAULT_TEXT
    assert fake_llm.requests[0].path == "/api/chat"


@pytest.mark.parametrize(
    ("model", "env", "local"),
    [
        ("offline", {}, True),
        ("ollama:llama3.2", {}, True),
        ("ollama:llama3.2", {"OLLAMA_HOST": "gpu-box.lan:11434"}, False),
        ("openai:gpt-4o-mini", {}, False),
        ("openai:gpt-4o-mini", {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, True),
        ("openai:qwen", {"OPENAI_BASE_URL": "http://localhost:1234/v1"}, True),
        ("openai:qwen", {"OPENAI_BASE_URL": "http://[::1]:1234/v1"}, True),
        ("anthropic:claude-haiku-4-5", {"ANTHROPIC_BASE_URL": "https://proxy.example"}, False),
        ("openrouter:anthropic/claude-3.5-sonnet", {}, False),
    ],
)
def test_is_local(model: str, env: dict[str, str], local: bool) -> None:
    assert is_local(parse_model_id(model), env) is local


# --- a model its provider does not have (a mistyped %%ai model) ------------------------------


def _wire_env(provider: str, fake: FakeLLM) -> dict[str, str]:
    """Keys and URLs that send calls to ``provider`` to ``fake``."""
    return {
        "openai": {"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": f"{fake.url}/v1"},
        "openrouter": {"OPENROUTER_API_KEY": "sk-or", "OPENROUTER_BASE_URL": f"{fake.url}/v1"},
        "anthropic": {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": fake.url},
        "ollama": {"OLLAMA_HOST": fake.url},
    }[provider]


def _failure(ref: ModelRef, env: dict[str, str]) -> Exception:
    with pytest.raises(ProviderError) as raised:
        _ask(ref, env)
    return raised.value


MISTYPED = [
    ModelRef("openai", "gpt-4o-mnii"),
    ModelRef("anthropic", "claude-sonet-4-5"),
    ModelRef("ollama", "llama3.3:7b"),
    ModelRef("openrouter", "anthropic/claude-3.5-sonet"),
]


@pytest.mark.parametrize("ref", MISTYPED, ids=lambda ref: ref.provider)
def test_each_providers_not_found_answer_is_recognised(
    fake_llm: FakeLLM,  # noqa: F811
    ref: ModelRef,
) -> None:
    fake_llm.respond(model_not_found(openrouter=ref.provider == "openrouter"))
    error = _failure(ref, _wire_env(ref.provider, fake_llm))
    assert model_not_found_error(ref, error), error


#: Model names as people type them: letters, digits and the separators providers use.
model_names = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-._:/"), min_size=1, max_size=80
).filter(lambda name: name.strip("-._:/") != "")


#: Failures of a model that exists, or of no model in particular: none is a missing model.
OTHER_FAILURES = {
    "busy": lambda name: status(500, f"model {name} is overloaded"),
    "unsupported": lambda name: status(400, f"The model `{name}` does not support 'max_tokens'"),
    "no route": lambda name: status(404, "no route /v1/chat/completions"),
}


@settings(max_examples=examples(100), deadline=None)
@given(
    provider=st.sampled_from(["openai", "anthropic", "ollama", "openrouter"]),
    name=model_names,
    failure=st.sampled_from(["not found", *OTHER_FAILURES]),
)
def test_a_missing_model_is_told_apart_from_other_failures(
    provider: str, name: str, failure: str
) -> None:
    assume(name.lower() not in "no route /v1/chat/completions")  # a name must say something
    ref = ModelRef(provider, name)
    with FakeLLM() as fake:
        # Keys as long as real ones: a short test key would be redacted out of a model's name.
        env = {k: v * 8 if k.endswith("_KEY") else v for k, v in _wire_env(provider, fake).items()}
        if failure == "not found":
            fake.respond(model_not_found(openrouter=provider == "openrouter"))
        else:
            fake.respond(OTHER_FAILURES[failure](name))
        error = _failure(ref, env)
    assert model_not_found_error(ref, error) is (failure == "not found"), error


@pytest.mark.parametrize(
    "behaviour",
    [
        status(500, "model gpt-4o-mini is overloaded"),  # the model exists, it is busy
        status(400, "The model `gpt-4o-mini` does not support 'max_tokens'"),
        status(401, "The model `gpt-4o-mini` does not exist"),  # a key problem first
        status(429, "Rate limit reached for gpt-4o-mini"),
    ],
)
def test_other_failures_naming_the_model_are_not_a_missing_model(
    fake_llm: FakeLLM,  # noqa: F811
    behaviour: Any,
) -> None:
    ref = ModelRef("openai", "gpt-4o-mini")
    fake_llm.respond(behaviour)
    assert not model_not_found_error(ref, _failure(ref, _wire_env("openai", fake_llm)))


def test_a_base_url_that_points_nowhere_is_not_a_missing_model(
    fake_llm: FakeLLM,  # noqa: F811
) -> None:
    ref = ModelRef("openai", "gpt-4o-mini")
    fake_llm.respond(status(404, "no route /v2x/chat/completions"))  # a proxy's 404, any model
    error = _failure(ref, _wire_env("openai", fake_llm))
    assert "404" in str(error) and not model_not_found_error(ref, error)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _missing(ref: ModelRef, env: dict[str, str], clock: _Clock | None = None) -> MissingModels:
    missing = MissingModels(clock or _Clock())
    error = ProviderHTTPError(
        f"openai answered HTTP 404: The model `{ref.model}` does not exist", status=404
    )
    assert note_missing(ref, env, error, missing) == f"model {ref.id} was not found"
    return missing


def test_a_missing_active_model_is_skipped_and_said() -> None:
    mistyped = ModelRef("openai", "gpt-4o-mnii")
    missing = _missing(mistyped, OPENAI_KEY)
    result = resolve_models(
        "auto", active_model="openai-chat:gpt-4o-mnii", env=OPENAI_KEY, missing=missing
    )
    assert result.candidates == (OFFLINE,)
    assert result.note == "model openai:gpt-4o-mnii was not found"
    assert result.why.startswith(
        "no usable model: offline engine (active model openai:gpt-4o-mnii skipped: not found "
        "(openai answered HTTP 404: The model `gpt-4o-mnii` does not exist"
    )
    # A later %%ai line with a model that exists takes over at once.
    result = resolve_models(
        "auto", active_model="openai-chat:gpt-4o-mini", env=OPENAI_KEY, missing=missing
    )
    assert result.candidates == (ModelRef("openai", "gpt-4o-mini"),) and result.note == ""
    # A missing fast model leaves the active one.
    result = resolve_models(
        "auto", fast_model="gpt-4o-mnii", active_model="gpt-4o", env=OPENAI_KEY, missing=missing
    )
    assert result.candidates == (ModelRef("openai", "gpt-4o"),)
    assert "fast model openai:gpt-4o-mnii skipped: not found" in result.why


def test_a_missing_model_is_asked_again_later_and_elsewhere() -> None:
    clock = _Clock()
    mistyped = ModelRef("ollama", "llama3.3")
    missing = _missing(mistyped, {}, clock)
    assert resolve_models("auto", active_model="ollama:llama3.3", env={}, missing=missing).note
    # another server may have it
    elsewhere = {"OLLAMA_HOST": "gpu-box.lan:11434"}
    result = resolve_models("auto", active_model="ollama:llama3.3", env=elsewhere, missing=missing)
    assert result.candidates == (mistyped,)
    # pulled meanwhile: asked again once the record is old
    clock.now += MISSING_FOR_SECONDS + 1
    result = resolve_models("auto", active_model="ollama:llama3.3", env={}, missing=missing)
    assert result.candidates == (mistyped,) and result.note == ""


def test_a_missing_model_setting_is_skipped_and_an_override_asked_again() -> None:
    mistyped = ModelRef("openai", "gpt-4o-mnii")
    missing = _missing(mistyped, OPENAI_KEY)
    result = resolve_models("openai:gpt-4o-mnii", env=OPENAI_KEY, missing=missing)
    assert result.candidates == (OFFLINE,)
    assert result.note == "model openai:gpt-4o-mnii was not found"
    assert result.why.startswith("model setting openai:gpt-4o-mnii (Recap.model")
    result = resolve_models("auto", override="openai:gpt-4o-mnii", env=OPENAI_KEY, missing=missing)
    assert result.candidates == (mistyped,)


# --- the recap that falls back says why --------------------------------------------------------


def _session(model: str) -> Transcript:
    t = Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?", model=model)
    t.assistant("Line 142 references customers_v1. Next: repoint it to customers_v2.")
    t.outcome("ok")
    return t


@pytest.mark.parametrize("ref", MISTYPED, ids=lambda ref: ref.provider)
def test_a_recap_by_a_missing_model_is_written_offline_and_says_so(
    fake_llm: FakeLLM,  # noqa: F811
    ref: ModelRef,
) -> None:
    env = _wire_env(ref.provider, fake_llm)
    transcript = _session(ref.id)
    fake_llm.respond(model_not_found(openrouter=ref.provider == "openrouter"))
    MISSING.clear()
    try:
        for attempt in range(2):
            result = draft_recap(transcript, env=env)
            assert result.recap is not None, result.reason
            assert (result.recap.model, result.recap.note) == (
                "offline",
                f"model {ref.id} was not found",
            )
            assert "invoices.ts" in result.recap.text
            # asked once: the second recap knows
            assert [r.body["model"] for r in fake_llm.requests] == [ref.model], attempt
        # A later agent turn on a model that exists takes over.
        good = ModelRef(ref.provider, "good-model")
        transcript.user("And the orders table?", model=good.id)
        result = draft_recap(transcript, env=env)
        assert result.recap is not None and result.recap.model == good.id
        assert result.recap.note == ""
    finally:
        MISSING.clear()


def test_a_model_that_fails_otherwise_is_still_no_recap(fake_llm: FakeLLM) -> None:  # noqa: F811
    fake_llm.respond(status(404, "no route"))
    result = draft_recap(_session("openai:gpt-4o-mini"), env=_wire_env("openai", fake_llm))
    assert result.recap is None and "404" in result.reason
