"""One formatter for a project's memory notes: ``%notes`` and ``jupyter recap --notes``.

::

    3 notes for /home/me/loader (1 recalled at least once)
     hits  kind      note
        2  gotcha    the loader drops rows with a BOM
        0  command   pytest -x tests/test_loader.py

Pure string work, like :mod:`jupyter_recap.sessionlist`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .memory import Entry
from .textutil import printable

HEADER = " hits  kind      note"


def format_notes(entries: Sequence[Entry], project: Path | str, *, empty: str = "") -> str:
    """The notes, oldest first, with their hit counts; ``empty`` when there are none."""
    # Notes are written by agents (model output) and the project path by anyone: made inert.
    if not entries:
        return printable(empty or f"No notes yet for {project}.")
    recalled = sum(entry.hits > 0 for entry in entries)
    place = printable(str(project))
    lines = [f"{len(entries)} notes for {place} ({recalled} recalled at least once)", HEADER]
    lines += [f"{entry.hits:>5}  {entry.kind:<9} {printable(entry.text)}" for entry in entries]
    return "\n".join(lines)
