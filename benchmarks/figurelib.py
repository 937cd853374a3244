"""Hand the figures a benchmark prints to ``benchmarks/figures.py``, beside its own tables.

A benchmark calls :func:`figure` next to the line that prints a figure the README quotes. When
the environment variable ``JUPYTER_RECAP_FIGURES`` names a file, each call appends one JSON line
to it; otherwise the call does nothing, so a benchmark run by hand prints exactly what it did.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ENV = "JUPYTER_RECAP_FIGURES"


def figure(
    key: str,
    value: float | str,
    *,
    unit: str,
    label: str,
    target: str | None = None,
    met: bool | None = None,
) -> None:
    """Record one figure: ``key`` names it (unique within the script), ``value`` is shown as
    given (numbers with thousands separators, so round them to the places they mean), ``unit``
    follows it, ``label`` says what was measured and under which settings, ``target`` is the
    goal as text and ``met`` whether this run met it (None: no target, or none with a
    threshold)."""
    path = os.environ.get(ENV)
    if not path:
        return
    record: dict[str, Any] = {
        "script": Path(sys.argv[0]).name,
        "key": key,
        "value": value,
        "unit": unit,
        "label": label,
        "target": target,
        "met": met,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
