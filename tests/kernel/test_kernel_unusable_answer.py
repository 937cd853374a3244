"""An automatic recap whose model answered without a recap, in a real kernel observed the way a
frontend sees it (IOPub): the banner shows the offline recap, its header says why, and the call
is counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakellm import FakeLLM, answer
from kernelutil import SETUP, banner_id, execute, running_kernel, stream_text, wait_for_shown

pytestmark = pytest.mark.timeout(120)

MODEL = "openai:gpt-4o-mini"


@pytest.fixture
def provider_kernel(tmp_path: Any, fake_llm: FakeLLM) -> Iterator[tuple[Any, str | None]]:
    env = {
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "JUPYTER_RECAP_MODEL": MODEL,
        "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log"),
    }
    with running_kernel(env) as kc:
        yield kc, banner_id(execute(kc, SETUP))


def test_an_untagged_answer_shows_the_offline_recap_with_a_note(
    provider_kernel: tuple[Any, str | None], fake_llm: FakeLLM
) -> None:
    kc, comm_id = provider_kernel
    fake_llm.respond(answer("Sure! They are fixing the FK, and should rerun the loader next."))
    execute(kc, "%config Recap.idle_seconds = 1")
    execute(kc, "agent.script.append(lambda p: print('Next: rerun the loader.'))")
    execute(kc, "%%agent\nfix the flaky CSV loader")
    state, _ = wait_for_shown(kc, comm_id, 15)
    assert state["reason"] == "idle"
    assert state["model"] == f"offline · {MODEL}'s answer had no recap"
    assert state["text"].startswith("Task: Fix the flaky CSV loader.")
    assert "Next: Rerun the loader." in state["text"] and "Sure!" not in state["text"]
    assert len(fake_llm.requests) == 1
    status = stream_text(execute(kc, "%recap status"))
    assert "calls:       1 made" in status, status
