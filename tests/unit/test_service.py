"""generate_recap / draft_recap end to end against the local fake LLM server."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fakellm import FakeLLM, answer, hang, status

import jupyter_recap as jr
from jupyter_recap.pipeline.providers.base import CancelToken
from jupyter_recap.pipeline.service import RecapStats, draft_recap
from jupyter_recap.settings import Recap


def session(model: str = "openai-chat:gpt-4o-mini") -> jr.Transcript:
    t = jr.Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?", model=model)
    t.tool_call("read_file", {"path": "invoices.ts"})
    t.tool_result("read_file", "export const invoices = ...")
    t.assistant("Line 142 references customers_v1. Next: repoint it to customers_v2.")
    t.outcome("ok")
    return t


def openai_env(fake: FakeLLM, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake.url + "/v1",
        "OPENAI_API_KEY": "sk-test-key-0123456789",
        **extra,
    }


def test_offline_by_default_with_no_credentials() -> None:
    recap = jr.generate_recap(session(), env={})
    assert recap is not None
    assert recap.model == "offline"
    assert "invoices.ts" in recap.text and "Next: Repoint it to customers_v2." in recap.text


def test_active_model_answers_through_its_provider(fake_llm: FakeLLM) -> None:
    stats = RecapStats()
    result = draft_recap(session(), env=openai_env(fake_llm), stats=stats)
    assert result.recap is not None
    assert result.recap.text == "You are fixing the flaky CSV loader. Next: rerun the tests."
    assert result.recap.model == "openai:gpt-4o-mini"
    (request,) = fake_llm.requests
    body = request.body
    assert body["model"] == "gpt-4o-mini"
    assert "tools" not in body and body["max_tokens"] == 256
    assert body["messages"][0]["role"] == "system"
    assert "invoices.ts" in body["messages"][1]["content"]
    assert (stats.calls, stats.tokens_in, stats.tokens_out) == (1, 321, 24)


def test_anthropic_active_model(fake_llm: FakeLLM) -> None:
    env = {"ANTHROPIC_BASE_URL": fake_llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}
    recap = jr.generate_recap(session("anthropic-chat:claude-haiku-4-5"), env=env)
    assert recap is not None and recap.model == "anthropic:claude-haiku-4-5"
    assert fake_llm.requests[0].path == "/v1/messages"


def test_fast_model_is_tried_first_then_the_active_one(fake_llm: FakeLLM) -> None:
    fake_llm.respond(status(500), answer())
    settings = Recap(fast_model="openai:gpt-4o-mini")
    result = draft_recap(session("openai-chat:gpt-4o"), settings=settings, env=openai_env(fake_llm))
    assert [r.body["model"] for r in fake_llm.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert result.recap is not None and result.recap.model == "openai:gpt-4o"


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (status(401), "401"),
        (status(429), "429"),
        (status(500), "500"),
    ],
)
def test_failures_become_none_with_a_reason(fake_llm: FakeLLM, behaviour: Any, reason: str) -> None:
    fake_llm.respond(behaviour)
    result = draft_recap(session(), env=openai_env(fake_llm))
    assert result.recap is None
    assert reason in result.reason and "\n" not in result.reason
    assert "sk-test-key" not in result.reason


def test_timeout_backstop(fake_llm: FakeLLM) -> None:
    fake_llm.respond(hang())
    settings = Recap(timeout_seconds=0.5)
    started = time.monotonic()
    result = draft_recap(session(), settings=settings, env=openai_env(fake_llm))
    assert result.recap is None and "0.5" in result.reason
    assert time.monotonic() - started < 3


def test_cancel_aborts_the_request(fake_llm: FakeLLM) -> None:
    fake_llm.respond(hang())
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.monotonic()
    result = draft_recap(session(), env=openai_env(fake_llm), cancel=cancel)
    assert result.recap is None and result.reason == "cancelled"
    assert time.monotonic() - started < 2


def test_explicit_model_without_credentials_makes_no_call() -> None:
    result = draft_recap(session(), model="anthropic:claude-haiku-4-5", env={})
    assert result.recap is None
    assert result.reason == (
        "anthropic:claude-haiku-4-5 has no credentials: set ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL"
    )


def test_bad_model_id_is_a_reason_not_an_exception() -> None:
    result = draft_recap(session(), model="bedrock:titan", env={})
    assert result.recap is None and "bedrock" in result.reason


def test_empty_transcript() -> None:
    assert jr.generate_recap(jr.Transcript(), env={}) is None
    assert "nothing to recap" in draft_recap(jr.Transcript(), env={}).reason


def test_internal_errors_never_escape(monkeypatch: Any, isolated_env: Any) -> None:
    import jupyter_recap.pipeline.service as service

    def explode(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("bug")

    monkeypatch.setattr(service, "build_context", explode)
    result = draft_recap(session(), env={})
    assert result.recap is None and result.reason == "internal error: RuntimeError: bug"
    assert "[jupyter_recap]" in isolated_env.read_text()  # the debug log has the traceback


def test_model_setting_and_environment_override(monkeypatch: Any) -> None:
    monkeypatch.setenv("JUPYTER_RECAP_MODEL", "offline")
    assert Recap().model == "offline"
    recap = jr.generate_recap(session(), env={"OPENAI_API_KEY": "sk-unused-0123456789abc"})
    assert recap is not None and recap.model == "offline"


def test_redacted_context_is_what_the_model_receives(fake_llm: FakeLLM) -> None:
    t = session()
    t.user("the key is sk-proj-abcdefghijklmnopqrstuvwxyz123456, use it")
    draft_recap(t, env=openai_env(fake_llm))
    sent = fake_llm.requests[0].body["messages"][1]["content"]
    assert "abcdefghijklmnop" not in sent and "[redacted]" in sent
