"""jupyter-ai's ``%ai`` line magic (v2 and the v3 magic commands) in a real kernel."""

from __future__ import annotations

from typing import Any

import pytest
from capturekit import agent_kernel, entries, peek, recap_request, run, status
from fakellm import FakeLLM, answer

pytestmark = pytest.mark.timeout(240)

EXPLANATION = "The name df2 was never defined: the cell above assigns df."


def last_turn(kc: Any) -> list[dict[str, Any]]:
    """The entries of the latest agent turn, from its prompt on."""
    found = entries(kc)
    start = max(i for i, e in enumerate(found) if e["kind"] == "user")
    return found[start:]


@pytest.fixture(scope="module")
def v2() -> Any:
    with FakeLLM() as fake, agent_kernel(fake, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magics")
        run(kc, "%load_ext jupyter_recap")
        yield kc, fake


def test_ai_error_is_a_turn_with_the_error_as_prompt_and_the_reply(v2: Any) -> None:
    kc, fake = v2
    run(kc, "df = [1, 2]\nprint(df2)", expect_error=True)
    fake.respond(answer(EXPLANATION))
    shown = run(kc, "%ai error openai-chat:gpt-4o-mini")
    assert any(EXPLANATION in str(m["content"]) for m in shown)  # jupyter-ai's output as before
    turn = last_turn(kc)
    assert turn[0]["kind"] == "user" and turn[0]["name"] == "openai-chat:gpt-4o-mini"
    assert turn[0]["text"].startswith("Explain the following error")
    assert "NameError" in turn[0]["text"] and "df2" in turn[0]["text"]
    assert [e["kind"] for e in turn[1:]] == ["assistant", "outcome"]
    assert EXPLANATION in turn[1]["text"] and turn[2]["outcome"] == "ok"
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == (
        "openai-chat:gpt-4o-mini"
    )
    sent = recap_request(kc, fake)
    assert "NameError" in sent and "df2 was never defined" in sent
    assert "jupyter-ai 2.31" in status(kc) and "1 turn recorded" in status(kc)


def test_a_model_prompt_on_the_line_is_a_failed_turn_not_a_lost_one(v2: Any) -> None:
    kc, _ = v2
    run(kc, "%ai openai-chat:gpt-4o-mini explain joins", expect_error=True)
    turn = last_turn(kc)
    assert turn[0]["text"] == "explain joins"
    assert turn[0]["name"] == "openai-chat:gpt-4o-mini"
    # jupyter-ai 2.x refuses a model prompt on the line ("No such command"): a failed turn
    assert turn[-1]["outcome"] == "errored" and "No such command" in turn[-1]["error"]


def test_management_subcommands_stay_ordinary_cells(v2: Any) -> None:
    kc, _ = v2
    before = len([e for e in entries(kc) if e["kind"] == "user"])
    run(kc, "%ai list openai-chat")
    after = entries(kc)
    assert len([e for e in after if e["kind"] == "user"]) == before
    assert after[-1]["kind"] == "code" and after[-1]["text"] == "%ai list openai-chat"


def test_capture_off_leaves_ai_lines_ordinary() -> None:
    with FakeLLM() as fake, agent_kernel(fake, {"JUPYTER_RECAP_CAPTURE": "0"}, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magics")
        run(kc, "%load_ext jupyter_recap")
        run(kc, "print(missing)", expect_error=True)
        run(kc, "%ai error openai-chat:gpt-4o-mini")
        assert not [e for e in entries(kc) if e["kind"] == "user"]
        assert "capture:     off" in status(kc)


def test_v3_fix_is_a_turn() -> None:
    with FakeLLM() as fake, agent_kernel(fake, load=False) as kc:
        run(kc, "%load_ext jupyter_ai_magic_commands")
        run(kc, "%load_ext jupyter_recap")
        run(kc, "rows = [1]\nrows[3]", expect_error=True)
        fake.respond(answer("rows has one item; index 3 is out of range. Use rows[0]."))
        run(kc, "%ai fix openai/gpt-4o-mini")
        turn = last_turn(kc)
        assert turn[0]["text"].startswith("Explain the following error and propose a fix")
        assert "IndexError" in turn[0]["text"]
        assert turn[0]["name"] == "openai/gpt-4o-mini"
        assert any("index 3 is out of range" in e.get("text", "") for e in turn[1:])
        assert turn[-1]["outcome"] == "ok"
        assert "jupyter-ai" in status(kc)
