"""Shared by the capture tests: one fake LLM server per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakellm import FakeLLM


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    """A running fake LLM server shared by a module's kernel (tests queue their answers)."""
    with FakeLLM() as server:
        yield server
