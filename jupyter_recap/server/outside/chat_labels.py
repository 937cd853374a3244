"""How the person knows a notebook's cells, for the lines of what a chat's agent did there."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from ... import untrusted
from ...errors import RefusedFile


class CellLabels:
    """How the person knows a notebook's cells: ``In[7]`` for a cell that ran, ``cell 3`` for
    one that did not.

    Asked on the server's loop (while a chat's lines are made), it only looks in its cache and
    notes the notebooks it was asked about; :meth:`refresh`, on a thread of the pool, reads
    those whose file changed (a streaming reply asks on every read of its chat) the one safe
    way (:mod:`...untrusted`), so a notebook that is a FIFO, huge or nested too deep never
    blocks the loop: it has no labels. The cache is shared by the two, under a lock.
    """

    MAX_NOTEBOOKS = 64
    MAX_BYTES = 32 << 20

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self._cache: OrderedDict[str, tuple[tuple[int, int], dict[str, str]]] = OrderedDict()
        self._asked: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, notebook: str, cell_id: str) -> str | None:
        with self._lock:
            if len(self._asked) < self.MAX_NOTEBOOKS:
                self._asked.add(notebook)
            cached = self._cache.get(notebook)
            return cached[1].get(cell_id) if cached is not None else None

    def unread(self) -> bool:
        """Whether a notebook asked about since :meth:`asked` has no labels read yet."""
        with self._lock:
            return any(notebook not in self._cache for notebook in self._asked)

    def asked(self) -> list[str]:
        """The notebooks asked about since the last call (to :meth:`refresh` them)."""
        with self._lock:
            asked, self._asked = sorted(self._asked), set()
        return asked

    def refresh(self, notebooks: list[str]) -> bool:
        """Read again those of ``notebooks`` whose file changed (in a thread); whether any
        label changed."""
        changed = False
        for notebook in notebooks:
            path = self.root / notebook
            with self._lock:
                cached = self._cache.get(notebook)
            try:
                info = path.stat()
            except OSError:
                labels, stamp = {}, (0, 0)
            else:
                stamp = (info.st_mtime_ns, info.st_size)
                if cached is not None and cached[0] == stamp:
                    with self._lock:
                        if notebook in self._cache:
                            self._cache.move_to_end(notebook)  # the least recently asked go
                    continue
                labels = self._read(path)
            with self._lock:
                changed = changed or cached is None or cached[1] != labels
                self._cache.pop(notebook, None)
                self._cache[notebook] = (stamp, labels)
                while len(self._cache) > self.MAX_NOTEBOOKS:
                    self._cache.popitem(last=False)
        return changed

    @classmethod
    def _read(cls, path: Path) -> dict[str, str]:
        try:
            _, data = untrusted.load_json(path, cap=cls.MAX_BYTES)
        except (OSError, RefusedFile):
            return {}
        cells = data.get("cells", []) if isinstance(data, dict) else []
        labels: dict[str, str] = {}
        for index, cell in enumerate(cells if isinstance(cells, list) else []):
            if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
                continue
            count = cell.get("execution_count")
            ran = isinstance(count, int) and not isinstance(count, bool)
            labels[cell["id"]] = f"In[{count}]" if ran else f"cell {index + 1}"
        return labels
