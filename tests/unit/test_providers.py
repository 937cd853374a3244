"""The three providers and the transport, against a real HTTP server (tests/fakellm.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakellm import (
    DEFAULT_TEXT,
    Behaviour,
    FakeLLM,
    drip,
    empty_choices,
    empty_content,
    hang,
    huge,
    raw,
    status,
)

from jupyter_recap.errors import (
    Cancelled,
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from jupyter_recap.pipeline.providers import (
    AnthropicProvider,
    CancelToken,
    CompletionRequest,
    ModelRef,
    OllamaProvider,
    OpenAIProvider,
    Provider,
)
from jupyter_recap.pipeline.providers.ollama import normalize_host
from jupyter_recap.pipeline.providers.openai import REASONING_HEADROOM, reasoning_effort
from jupyter_recap.pipeline.providers.transport import post_json

KEY = "sk-test-SECRET-0123456789abcdef"
SYSTEM = "You write 1-3 sentence recaps."
USER = "Transcript: the user asked the agent to fix the CSV loader."
REQUEST = CompletionRequest(system=SYSTEM, user=USER, max_tokens=256, timeout=5.0)

Factory = Callable[[str, "str | None"], Provider]

FACTORIES: dict[str, Factory] = {
    "openai": lambda url, key: OpenAIProvider(
        ModelRef("openai", "gpt-4o-mini"), api_key=key, base_url=f"{url}/v1"
    ),
    "anthropic": lambda url, key: AnthropicProvider(
        ModelRef("anthropic", "claude-haiku-4-5"), api_key=key, base_url=url
    ),
    "ollama": lambda url, key: OllamaProvider(ModelRef("ollama", "llama3.2"), host=url),
}


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx honours proxy variables; the fake server must be reached directly
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=sorted(FACTORIES))
def make(request: pytest.FixtureRequest, fake_llm: FakeLLM) -> Callable[[], Provider]:
    """A provider of each kind pointed at the fake server, with a key where it takes one."""
    return lambda: FACTORIES[request.param](fake_llm.url, KEY)


def _fail(provider: Provider, request: CompletionRequest = REQUEST) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        provider.complete(request)
    error = info.value
    message = str(error)
    assert error.provider == provider.ref.id
    assert KEY not in message
    assert "\n" not in message and len(message) < 200, message
    return error


# --- what is sent ---------------------------------------------------------------------------


def test_openai_request(fake_llm: FakeLLM) -> None:
    FACTORIES["openai"](fake_llm.url, KEY).complete(REQUEST)
    path, headers, body = fake_llm.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in path
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "max_tokens": 256,
        "temperature": 0.3,
        "stream": False,
    }


def test_openai_without_key_sends_no_authorization(fake_llm: FakeLLM) -> None:
    FACTORIES["openai"](fake_llm.url, None).complete(REQUEST)
    assert "authorization" not in fake_llm.requests[0].headers


@pytest.mark.parametrize(
    ("model", "effort"),
    [("gpt-5-mini", "minimal"), ("gpt-5", "minimal"), ("o3-mini", "low"), ("o1", "low"),
     ("o4-mini-2025-04-16", "low"), ("openai/gpt-5-nano", "minimal"), ("gpt-5.1", None)],
)  # fmt: skip
def test_openai_reasoning_models(fake_llm: FakeLLM, model: str, effort: str | None) -> None:
    OpenAIProvider(ModelRef("openai", model), api_key=KEY, base_url=fake_llm.url).complete(REQUEST)
    body = fake_llm.requests[0].body
    assert body["max_completion_tokens"] == 256 + REASONING_HEADROOM
    assert body.get("reasoning_effort") == effort
    assert "max_tokens" not in body and "temperature" not in body
    assert "tools" not in body and "tool_choice" not in body


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini", "gpt-4.1", "gpt-5-chat-latest", "omni-x", "llama3"]
)
def test_ordinary_chat_models_are_not_reasoning(model: str) -> None:
    assert reasoning_effort(model) == (False, None)


def test_anthropic_request(fake_llm: FakeLLM) -> None:
    FACTORIES["anthropic"](fake_llm.url, KEY).complete(REQUEST)
    path, headers, body = fake_llm.requests[0]
    assert path == "/v1/messages"
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert "authorization" not in headers
    assert body == {
        "model": "claude-haiku-4-5",
        "system": SYSTEM,
        "messages": [{"role": "user", "content": USER}],
        "max_tokens": 256,
    }


def test_anthropic_without_key_sends_no_key(fake_llm: FakeLLM) -> None:
    FACTORIES["anthropic"](fake_llm.url, None).complete(REQUEST)
    assert "x-api-key" not in fake_llm.requests[0].headers


def test_ollama_request(fake_llm: FakeLLM) -> None:
    FACTORIES["ollama"](fake_llm.url, None).complete(REQUEST)
    path, headers, body = fake_llm.requests[0]
    assert path == "/api/chat"
    assert "authorization" not in headers
    assert body == {
        "model": "llama3.2",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "stream": False,
        "think": False,
        "options": {"num_predict": 256, "temperature": 0.3},
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", "http://127.0.0.1:11434"), ("0.0.0.0:11434", "http://0.0.0.0:11434"),
     ("gpu-box", "http://gpu-box:11434"), ("http://gpu-box:8080/", "http://gpu-box:8080"),
     ("https://ollama.example.com", "https://ollama.example.com"),
     ("[::1]:11434", "http://[::1]:11434")],
)  # fmt: skip
def test_ollama_host_without_scheme(value: str, expected: str) -> None:
    assert normalize_host(value) == expected


# --- what is understood ---------------------------------------------------------------------


def test_success(make: Callable[[], Provider], fake_llm: FakeLLM) -> None:
    completion = make().complete(REQUEST)
    assert completion.text == DEFAULT_TEXT
    assert (completion.tokens_in, completion.tokens_out) == (321, 24)
    assert completion.stop_reason in ("stop", "end_turn")
    assert len(fake_llm.requests) == 1


FAILURES: list[tuple[str, Behaviour, type[ProviderError], str]] = [
    ("401", status(401, "invalid x-api-key"), ProviderAuthError, "API key (HTTP 401)"),
    ("403", status(403, "forbidden"), ProviderAuthError, "(HTTP 403)"),
    ("429", status(429, "slow down"), ProviderRateLimited, "HTTP 429"),
    ("500", status(500, "upstream exploded"), ProviderHTTPError, "HTTP 500: upstream exploded"),
    ("404-model", status(404, "model 'x' not found"), ProviderHTTPError, "model 'x' not found"),
    ("not-json", raw(b"<html>oops</html>"), ProviderBadResponse, "not JSON"),
    ("truncated-json", raw(b'{"choices": ['), ProviderBadResponse, "not JSON"),
    ("json-array", raw(b"[1, 2]"), ProviderBadResponse, "not an object"),
    ("empty-choices", empty_choices(), ProviderBadResponse, "no "),
    ("empty-content", empty_content(), ProviderBadResponse, "no text"),
    # a generic httpx error (DecodingError) from a body that claims gzip and is not
    ("bad-gzip", raw(b"not gzip at all", Content_Encoding="gzip"), ProviderError, ""),
]


@pytest.mark.parametrize(("behaviour", "kind", "words"), [f[1:] for f in FAILURES],
                         ids=[f[0] for f in FAILURES])  # fmt: skip
def test_failures(
    make: Callable[[], Provider],
    fake_llm: FakeLLM,
    behaviour: Behaviour,
    kind: type[ProviderError],
    words: str,
) -> None:
    fake_llm.respond(behaviour)
    error = _fail(make())
    assert isinstance(error, kind)
    assert words in str(error)


def test_auth_error_names_the_provider(fake_llm: FakeLLM) -> None:
    fake_llm.respond(status(401, f"Incorrect API key provided: {KEY}"))
    error = _fail(FACTORIES["openai"](fake_llm.url, KEY))
    assert str(error) == "openai rejected the API key (HTTP 401)"


def test_http_error_keeps_status(fake_llm: FakeLLM) -> None:
    fake_llm.respond(status(503, "overloaded"))
    error = _fail(FACTORIES["anthropic"](fake_llm.url, KEY))
    assert isinstance(error, ProviderHTTPError) and error.status == 503


@pytest.mark.parametrize("kind", ["openai", "anthropic"])  # Ollama is never sent a key
def test_error_excerpt_is_short_and_redacted(kind: str, fake_llm: FakeLLM) -> None:
    fake_llm.respond(status(400, f"bad request for key {KEY}\n" + "blah " * 200))
    message = str(_fail(FACTORIES[kind](fake_llm.url, KEY)))
    assert "***" in message
    assert message.endswith("…")
    assert "HTTP 400" in message


def test_timeout_when_server_never_answers(make: Callable[[], Provider], fake_llm: FakeLLM) -> None:
    fake_llm.respond(hang())
    started = time.monotonic()
    error = _fail(make(), CompletionRequest(SYSTEM, USER, timeout=0.5))
    assert isinstance(error, ProviderTimeout)
    assert "no answer within 0.5 s" in str(error)
    assert time.monotonic() - started < 3


def test_timeout_is_total_even_when_bytes_keep_dripping(fake_llm: FakeLLM) -> None:
    fake_llm.respond(drip(interval=0.05))  # ~300 bytes: 15 s, each byte well within 0.5 s
    started = time.monotonic()
    error = _fail(
        FACTORIES["openai"](fake_llm.url, KEY), CompletionRequest(SYSTEM, USER, timeout=0.5)
    )
    assert isinstance(error, ProviderTimeout)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("declare_length", [False, True])
def test_huge_answer_is_refused_quickly(
    make: Callable[[], Provider],
    fake_llm: FakeLLM,
    declare_length: bool,
) -> None:
    fake_llm.respond(huge(10_000_000, declare_length=declare_length))
    started = time.monotonic()
    error = _fail(make())
    assert isinstance(error, ProviderBadResponse)
    assert "answer too large" in str(error)
    assert time.monotonic() - started < 3


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_connection_refused(kind: str) -> None:
    error = _fail(FACTORIES[kind](f"http://127.0.0.1:{_closed_port()}", KEY))
    assert isinstance(error, ProviderUnavailable)
    assert str(error).startswith("cannot reach 127.0.0.1:")


def test_unsupported_url_scheme_is_unavailable() -> None:
    # httpx.UnsupportedProtocol: another httpx error that must not escape as itself
    error = _fail(OpenAIProvider(ModelRef("openai", "gpt-4o"), api_key=KEY, base_url="ftp://x"))
    assert isinstance(error, ProviderUnavailable)


def test_cancel_aborts_in_flight_request(make: Callable[[], Provider], fake_llm: FakeLLM) -> None:
    fake_llm.respond(hang())
    provider, cancel = make(), CancelToken()
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(provider.complete(CompletionRequest(SYSTEM, USER, timeout=30), cancel))
        except Exception as error:  # noqa: BLE001 - the test inspects it
            outcome.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    assert fake_llm.wait_for_requests(1)
    cancelled_at = time.monotonic()
    cancel.cancel()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert time.monotonic() - cancelled_at < 1.5
    assert isinstance(outcome[0], Cancelled)


def test_cancel_before_start_sends_nothing(fake_llm: FakeLLM) -> None:
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        FACTORIES["openai"](fake_llm.url, KEY).complete(REQUEST, cancel)
    assert fake_llm.requests == []


def test_post_json_returns_object_and_cleans_up(fake_llm: FakeLLM) -> None:
    cancel = CancelToken()
    data = post_json(
        f"{fake_llm.url}/api/chat",
        headers={},
        body={"model": "m"},
        timeout=5,
        cancel=cancel,
        provider_id="ollama:m",
    )
    assert data["message"]["content"] == DEFAULT_TEXT
    assert cancel._callbacks == []  # the abort hook was unregistered


def test_fake_server_stops_promptly_while_hanging() -> None:
    fake = FakeLLM().start()
    fake.respond(hang())
    provider = FACTORIES["ollama"](fake.url, None)
    with pytest.raises(ProviderTimeout):
        provider.complete(CompletionRequest(SYSTEM, USER, timeout=0.2))
    started = time.monotonic()
    fake.close()
    assert time.monotonic() - started < 1


def test_importing_the_package_does_not_import_httpx() -> None:
    code = (
        "import sys, jupyter_recap.pipeline.providers, jupyter_recap.pipeline.models;"
        "assert 'httpx' not in sys.modules, 'httpx imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
