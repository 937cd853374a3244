"""A notebook's cells as the person last saw them: ids and hashes, nothing of their text.

What the server keeps per notebook is a :class:`Fingerprint`: for each cell, a hash of its id, a
hash of its source, its execution count and whether an output is an error, packed into
:data:`CELL_BYTES` bytes (500 cells: 12 KiB). No source, output or id is kept, so a fingerprint
says nothing of what someone wrote into a shared notebook; the cells' ids that a change line
links come from the notebook as it is when the line is made. The cells of a notebook just read
carry their text and error line too, for the moment they are needed: a change review keeps the
text apart, on the person's terms (:mod:`..stores.seentext`).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_CELLS = 10_000
"""Cells fingerprinted per notebook (the rest of a larger one is left out)."""
_CELL = struct.Struct("<8s8siB3x")
CELL_BYTES = _CELL.size
"""Bytes kept per cell: id hash, source hash, execution count, flags (padded to 24)."""
NO_COUNT = -1
_MAX_COUNT = 2**31 - 1
_NO_ID = bytes(8)
_ERROR = 1


@dataclass(frozen=True, slots=True)
class CellState:
    """One cell as a fingerprint keeps it (and, for the cells of now, its id)."""

    id_hash: bytes
    """8 bytes; all zero for a cell without an id (nbformat before 4.5)."""
    source_hash: bytes
    count: int
    """Its execution count, :data:`NO_COUNT` when it has none (a markdown cell, not run)."""
    failed: bool
    """An output of the cell is an error."""
    cell_id: str | None = None
    """The cell's id: known for the notebook as it is now, never kept in a fingerprint."""
    source: str | None = None
    """Its source text, for the cells of a notebook read now (what a review's diff shows and
    the kept last-seen text holds; never kept in a fingerprint)."""
    error: str | None = None
    """The first error output's line (``KeyError: 'region'``), for the cells of now."""


class Fingerprint:
    """The cells of a notebook at one moment, packed (see the module's docstring)."""

    __slots__ = ("_data",)

    def __init__(self, cells: Iterable[CellState] = ()) -> None:
        self._data = b"".join(
            _CELL.pack(
                c.id_hash, c.source_hash, min(c.count, _MAX_COUNT), _ERROR if c.failed else 0
            )
            for c in cells
        )

    def __len__(self) -> int:
        return len(self._data) // CELL_BYTES

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fingerprint) and other._data == self._data

    def __hash__(self) -> int:
        return hash(self._data)

    @property
    def nbytes(self) -> int:
        """The bytes this fingerprint keeps."""
        return len(self._data)

    def cells(self) -> list[CellState]:
        return [
            CellState(id_hash, source_hash, count, bool(flags & _ERROR))
            for id_hash, source_hash, count, flags in _CELL.iter_unpack(self._data)
        ]


def _pack(cell: CellState) -> bytes:
    flags = _ERROR if cell.failed else 0
    return _CELL.pack(cell.id_hash, cell.source_hash, min(cell.count, _MAX_COUNT), flags)


def notebook_cells(notebook: Mapping[str, Any]) -> list[CellState]:
    """The cells of a notebook's JSON (its ``cells``), with their ids; odd cells count as empty."""
    raw = notebook.get("cells")
    cells = raw if isinstance(raw, list) else []
    return [_cell(cell) for cell in cells[:MAX_CELLS] if isinstance(cell, dict)]


def _cell(cell: Mapping[str, Any]) -> CellState:
    cell_id = cell.get("id")
    cell_id = cell_id if isinstance(cell_id, str) and cell_id else None
    source = cell.get("source")
    text = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
    count = cell.get("execution_count")
    outputs = cell.get("outputs")
    errors = (
        [o for o in outputs if isinstance(o, dict) and o.get("output_type") == "error"]
        if isinstance(outputs, list)
        else []
    )
    text = text if isinstance(text, str) else ""
    return CellState(
        id_hash=_hash(cell_id) if cell_id is not None else _NO_ID,
        # The cell type is part of what the person sees: a cell turned into markdown changed.
        source_hash=_hash(f"{cell.get('cell_type')}\0{text}"),
        count=count if isinstance(count, int) and not isinstance(count, bool) else NO_COUNT,
        failed=bool(errors),
        cell_id=cell_id,
        source=text,
        error=_error_line(errors[0]) if errors else None,
    )


def _error_line(output: Mapping[str, Any]) -> str:
    """``ename: evalue`` of an error output (either may be missing or odd in a written file)."""
    name, value = output.get("ename"), output.get("evalue")
    name = name if isinstance(name, str) else "Error"
    return f"{name}: {value}" if isinstance(value, str) and value else name


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
