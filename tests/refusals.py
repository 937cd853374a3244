"""Count the hostile requests the abuse tests send and see refused, for the README's figure.

Every check that a request was refused goes through :func:`refused`; the reliability suite's
conftest prints the count at the end of a run that made any ("hostile requests refused: 262
(403: 230, 404: 20, …)"), so the figure is read from a run, not written by hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

COUNTS: Counter[int] = Counter()


def refused(code: int, allowed: Collection[int], what: object) -> None:
    """Assert that a hostile request got one of the ``allowed`` refusals, and count it."""
    assert code in allowed, (what, code)
    COUNTS[code] += 1
