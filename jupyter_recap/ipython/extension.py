"""The IPython extension: one :class:`RecapExtension` per shell, wiring the core to the kernel."""

from __future__ import annotations

import threading
from typing import Any

from ..debuglog import get_logger
from ..providers.base import CancelToken
from ..service import Recap, RecapResult, RecapStats, draft_recap
from ..settings import Recap as RecapSettings
from ..transcript import Transcript, current
from .recorder import Recorder

_instances: dict[int, RecapExtension] = {}
_instances_lock = threading.Lock()


class RecapExtension:
    """Everything the extension adds to one shell, and how to take it all away again."""

    def __init__(self, shell: Any, transcript: Transcript | None = None) -> None:
        from .magics import RecapMagics

        self.shell = shell
        self.settings = RecapSettings(parent=shell)
        self.transcript = transcript if transcript is not None else current()
        self.stats = RecapStats()
        self.last_recap: Recap | None = None
        self.last_result: RecapResult | None = None
        self.recorder = Recorder(shell, self.transcript, self.settings)
        self.magics = RecapMagics(shell, extension=self)
        self._banner: Any = None
        self._draft_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------

    def attach(self) -> None:
        """Register the configurable, the hooks and the magics."""
        if self.settings not in self.shell.configurables:
            self.shell.configurables.append(self.settings)
        self.recorder.attach()
        self.shell.register_magics(self.magics)

    def detach(self) -> None:
        """Undo :meth:`attach` and close the banner."""
        self.recorder.detach()
        manager = self.shell.magics_manager
        for name in self.magics.magics.get("line", {}):
            manager.magics["line"].pop(name, None)
        manager.registry.pop(type(self.magics).__name__, None)
        for configurable in (self.settings, self.magics):
            while configurable in self.shell.configurables:
                self.shell.configurables.remove(configurable)
        if self._banner is not None:
            self._banner.close()
            self._banner = None

    # -- the banner ------------------------------------------------------------------------

    @property
    def has_widgets(self) -> bool:
        """True in a kernel (a frontend can render widgets), False in terminal IPython."""
        return getattr(self.shell, "kernel", None) is not None

    @property
    def banner(self) -> Any:
        """The kernel's one banner widget, created on first use."""
        if self._banner is None:
            from ..banner import RecapBanner

            self._banner = RecapBanner()
        return self._banner

    # -- drafting --------------------------------------------------------------------------

    def draft(
        self,
        *,
        model: str | None = None,
        trigger: str = "manual",
        cancel: CancelToken | None = None,
    ) -> RecapResult:
        """Draft a recap off the main thread and wait for it; Ctrl-C / interrupt cancels it."""
        cancel = cancel or CancelToken()
        box: list[RecapResult] = []

        def work() -> None:
            box.append(
                draft_recap(
                    self.transcript,
                    model=model,
                    settings=self.settings,
                    trigger=trigger,
                    cancel=cancel,
                    stats=self.stats,
                )
            )

        with self._draft_lock:
            worker = threading.Thread(target=work, name="jupyter-recap-draft", daemon=True)
            worker.start()
            try:
                while worker.is_alive():
                    worker.join(0.05)
            except KeyboardInterrupt:
                cancel.cancel()
                worker.join(2.0)
                return RecapResult(None, "cancelled")
        result = box[0] if box else RecapResult(None, "the draft did not finish")
        self.last_result = result
        if result.recap is not None:
            self.last_recap = result.recap
            self.transcript.recap(result.recap.text, model=result.recap.model)
        return result


def load(shell: Any) -> RecapExtension:
    """Load into ``shell``; a second load returns the existing extension unchanged."""
    with _instances_lock:
        existing = _instances.get(id(shell))
        if existing is not None:
            return existing
        extension = RecapExtension(shell)
        extension.attach()
        _instances[id(shell)] = extension
    get_logger().info("extension loaded (%d entries in the transcript)", len(extension.transcript))
    return extension


def unload(shell: Any) -> None:
    """Remove everything :func:`load` added to ``shell``."""
    with _instances_lock:
        extension = _instances.pop(id(shell), None)
    if extension is not None:
        extension.detach()
        get_logger().info("extension unloaded")


def extension_for(shell: Any) -> RecapExtension | None:
    """The loaded extension of ``shell``, if any."""
    return _instances.get(id(shell))
