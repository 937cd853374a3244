"""How many examples a property test runs: its number in the "ci" Hypothesis profile, a fifth
of it in "dev" (tests/conftest.py registers both; HYPOTHESIS_PROFILE picks one)."""

from __future__ import annotations

from hypothesis import settings

#: The examples a test that names no number runs in the "ci" profile.
CI_EXAMPLES = 100


def examples(count: int) -> int:
    """``count`` under the "ci" profile, scaled like the default number under the others."""
    return max(1, count * settings().max_examples // CI_EXAMPLES)
