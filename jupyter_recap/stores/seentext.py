"""The text of the cells a person last saw in a notebook, kept while their review needs it.

A change review shows a changed cell's source as the person last saw it against the source
now. The change tracker keeps only fingerprints in memory (hashes, no text), so the text is
kept here, in the private store (``seen/`` under it, the store's trust rules: a folder only the
person can write, files read only when they are the person's own regular files):

- one file per notebook (named by a hash of its path), each text under the source hash the
  fingerprint knows the cell by, written whole and atomically (a new file renamed over the old);
- at most :data:`MAX_NOTEBOOK_BYTES` a notebook: a larger one keeps nothing (its review has
  marks without diffs, and says so);
- at most :data:`MAX_TOTAL_BYTES` in all: the notebooks whose text was least recently used go;
- dropped once the notebook's review is settled (every mark reviewed, no deleted cell listed).

Nothing here imports IPython, tornado or ipywidgets.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from ..errors import StoreWriteError
from ..wire import strict_json
from . import privatefs
from .sessionfiles import ensure_dir, store_dir

FOLDER = "seen"
MAX_NOTEBOOK_BYTES = 4 << 20
"""Kept text of one notebook (its file's size)."""
MAX_TOTAL_BYTES = 64 << 20
"""Kept text of all notebooks together."""
WHAT = "the folder of last-seen cell texts"


class SeenTexts:
    """The kept texts under one store (the person's, unless a test gives another)."""

    def __init__(self, store: Path | None = None) -> None:
        self._store = store

    def keep(self, path: str, texts: Mapping[bytes, str]) -> bool:
        """Keep ``texts`` (source hash → text) for notebook ``path`` in place of what was kept;
        False, and nothing kept for it, when they are over :data:`MAX_NOTEBOOK_BYTES`.

        StoreError (a subclass) when the store is not the person's or cannot be written.
        """
        folder = self._folder()
        target = folder / file_name(path)
        data = strict_json({"path": path, "texts": {k.hex(): v for k, v in texts.items()}})
        body = data.encode("utf-8", "surrogatepass")
        if len(body) > MAX_NOTEBOOK_BYTES:
            _remove(target)
            return False
        temporary = folder / f".{target.name}.{secrets.token_hex(6)}"
        try:
            fd = privatefs.create_exclusive(temporary)
            try:
                view = memoryview(body)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temporary, target)
        except OSError as error:
            _remove(temporary)
            raise StoreWriteError(f"cannot keep cell texts in {WHAT}: {error.strerror}") from None
        self._bound(folder, target)
        return True

    def texts(self, path: str) -> dict[bytes, str] | None:
        """What is kept for ``path`` (None: nothing, or a file the store's rules refuse)."""
        folder = self._folder()
        file = folder / file_name(path)
        try:
            raw = privatefs.read_bytes(file)
        except (privatefs.IgnoredFile, OSError):
            return None
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            if data.get("path") != path:
                return None  # a hash shared by two paths: not this notebook's
            kept = {bytes.fromhex(key): text for key, text in data["texts"].items()}
        except (ValueError, TypeError, AttributeError, KeyError):
            return None  # not a file this module wrote whole: as if nothing were kept
        if not all(isinstance(text, str) for text in kept.values()):
            return None
        with contextlib.suppress(OSError):
            os.utime(file, follow_symlinks=False)  # recently used: the last to go
        return kept

    def drop(self, path: str) -> None:
        """Forget what is kept for ``path``."""
        _remove(self._folder() / file_name(path))

    def _folder(self) -> Path:
        root = ensure_dir(self._store if self._store is not None else store_dir())
        return privatefs.ensure_subdir(root / FOLDER, what=WHAT)

    @staticmethod
    def _bound(folder: Path, written: Path) -> None:
        """Remove the least recently used notebooks' texts past :data:`MAX_TOTAL_BYTES`."""
        files: list[tuple[int, int, Path]] = []
        for entry in os.scandir(folder):
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                files.append((info.st_mtime_ns, info.st_size, Path(entry.path)))
        total = sum(size for _, size, _ in files)
        for _, size, file in sorted(files):
            if total <= MAX_TOTAL_BYTES:
                break
            if file != written:
                _remove(file)
                total -= size


def file_name(path: str) -> str:
    """The file that keeps the texts of notebook ``path`` (in the folder :data:`FOLDER`)."""
    digest = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=16)
    return f"{digest.hexdigest()}.json"


def _remove(file: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(file)
