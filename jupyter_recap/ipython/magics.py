"""``%recap``: a recap now, on/off for automatic recaps, and status."""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_magic, magics_class

from ..errors import RecapError
from .statemagics import compact_memory_now
from .status import status_report

if TYPE_CHECKING:
    from .extension import RecapExtension

USAGE = (
    "usage: %recap [--model M] | status | on | off | save | sessions [--all] | resume ID"
    " | compact-memory [--model M]"
)


@magics_class
class RecapMagics(Magics):
    """The ``%recap`` line magic."""

    def __init__(self, shell: Any, *, extension: RecapExtension) -> None:
        super().__init__(shell)
        self.extension = extension

    @line_magic
    def recap(self, line: str = "") -> None:
        """Show a recap of this notebook's agent session now.

        %recap              draft one now with the configured engine
        %recap --model M    use model M for this one recap ("offline", "openai:gpt-4o-mini", …)
        %recap status       which engine would answer and why, and the counters
        %recap on | off     turn automatic recaps on or off for this kernel
        %recap save         write this session's record now
        %recap sessions     the last 15 sessions of this notebook (--all: of every notebook)
        %recap resume ID    continue a stored session (any unique id prefix) and recap it
        %recap compact-memory [--model M]
                            have a model merge the project notes nobody has recalled yet
                            (only past 60 notes with at least two never recalled)
        """
        try:
            words = shlex.split(line)
        except ValueError as error:
            print(f"recap: {error}; {USAGE}")
            return
        if not words or words[0].startswith("--model"):
            model, ok = _model_option(words)
            if ok:
                self._manual(model)
            else:
                print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")
        elif words[0] == "compact-memory":
            model, ok = _model_option(words[1:])
            if ok:
                compact_memory_now(self.extension, model)
            else:
                print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")
        elif words == ["status"]:
            print(status_report(self.extension))
        elif words in (["on"], ["off"]):
            self.extension.settings.auto = words[0] == "on"
            print(f"recap: automatic recaps {words[0]}")
        elif words == ["save"]:
            self._save()
        elif words in (["sessions"], ["sessions", "--all"]):
            self._sessions(all_notebooks=len(words) == 2)
        elif len(words) == 2 and words[0] == "resume":
            self._resume(words[1])
        else:
            print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")

    def _manual(self, model: str | None) -> None:
        ext = self.extension
        if model is not None and not model.strip():
            print(f"recap: --model needs a model id; {USAGE}")
            return
        result = ext.manual(model)
        recap = result.recap
        if recap is None:
            print(f"recap: no recap ({result.reason})")
        elif not ext.has_widgets:
            print(f"✦ recap · {recap.model}\n{recap.text}")

    def _save(self) -> None:
        writer = self.extension.writer
        if writer is None:
            print("recap: this session is not being recorded")
        elif writer.flush() or writer.writes:
            print(f"recap: session {writer.id[:8]} saved ({writer.record.entries} entries)")
        else:
            print("recap: nothing to save yet (a session is stored once it has an agent prompt)")

    def _sessions(self, *, all_notebooks: bool) -> None:
        from ..sessionlist import format_sessions
        from ..sessions import SessionStore

        ext = self.extension
        if ext.writer is not None:
            ext.writer.flush()  # list what is live too
        notebook = None if all_notebooks else ext.notebook
        summaries = SessionStore().list(notebook, limit=15)
        print(format_sessions(summaries, time.time()))

    def _resume(self, id_or_prefix: str) -> None:
        try:
            record = self.extension.resume_session(id_or_prefix)
        except RecapError as error:
            print(f"recap: {error}")
            return
        print(f"recap: resumed session {record.id[:8]}: {record.title}")
        self._manual(None)


def _model_option(words: list[str]) -> tuple[str | None, bool]:
    """``[]``, ``["--model", M]`` or ``["--model=M"]`` → (M or None, True); else (None, False)."""
    if not words:
        return None, True
    if words[0] == "--model" and len(words) == 2:
        return words[1], True
    if words[0].startswith("--model=") and len(words) == 1:
        return words[0].partition("=")[2], True
    return None, False
