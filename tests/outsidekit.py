"""A small fake of the server's side of the outside-source contract, for testing a source alone.

:class:`FakeSink` is an :class:`~jupyter_recap.outside.source.OutsideSink` that records what a
source did (its touches, the entries it sent kernels, the lines it published) and answers its
questions from plain dictionaries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from jupyter_recap.changes.touches import Touches
from jupyter_recap.outside.mcp import Touch
from jupyter_recap.wire import OutsideActivity, OutsideEntry

_T = TypeVar("_T")


class FakeSink:
    """What a source may do, recorded; the server's answers from ``kernels`` (notebook path →
    kernel ids running jupyter_recap), ``sessions`` (kernel id → notebook path), ``extensions``
    (enabled server extension → its apps) and ``settings`` (the web app's settings)."""

    def __init__(
        self,
        root: Path | str,
        *,
        kernels: Mapping[str, list[str]] | None = None,
        sessions: Mapping[str, str] | None = None,
        extensions: Mapping[str, Sequence[object]] | None = None,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        self._root = os.path.abspath(str(root))
        self.kernels = dict(kernels or {})
        self.sessions = dict(sessions or {})
        self.extensions = dict(extensions or {})
        self.settings = dict(settings or {})
        self.touches = Touches()
        """Every touch, as the server keeps them (what a change line is made from)."""
        self.touch_list: list[Touch] = []
        """Every touch, as told."""
        self.entries: list[tuple[str, list[OutsideEntry], bool]] = []
        """(kernel id, entries, latest cell) of every :meth:`add_entries`."""
        self.lines: dict[str, OutsideActivity] = {}

    @property
    def root_dir(self) -> str:
        return self._root

    def touched(
        self,
        path: str,
        who: str,
        at: float | None = None,
        *,
        edited: int = 0,
        ran: int = 0,
        failed: int = 0,
    ) -> None:
        self.touch_list.append(Touch(path, who, at, edited, ran, failed))
        when = time.time() if at is None else at  # as the server does
        self.touches.note(path, who, when, edited=edited, ran=ran, failed=failed)

    def add_entries(
        self, kernel_id: str, entries: list[OutsideEntry], *, latest_cell: bool = False
    ) -> None:
        self.entries.append((kernel_id, list(entries), latest_cell))

    def publish_lines(self, lines: Mapping[str, OutsideActivity]) -> None:
        self.lines = dict(lines)

    def kernels_of(self, path: str) -> list[str]:
        return list(self.kernels.get(path, []))

    async def notebook_of(self, kernel_id: str) -> str | None:
        return self.sessions.get(kernel_id)

    async def in_pool(self, function: Callable[[], _T]) -> _T:
        return function()

    def extension_enabled(self, name: str) -> bool:
        return name in self.extensions

    def extension_apps(self, name: str) -> Sequence[object]:
        return tuple(self.extensions.get(name, ()))

    def server_setting(self, key: str) -> object:
        return self.settings.get(key)
