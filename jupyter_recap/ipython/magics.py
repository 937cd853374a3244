"""``%recap``: a recap now, on/off for automatic recaps, and status."""

from __future__ import annotations

import os
import shlex
import time
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_magic, magics_class

from ..debuglog import log_path
from ..errors import ConfigError, RecapError

if TYPE_CHECKING:
    from .extension import RecapExtension

USAGE = "usage: %recap [--model M] | status | on | off | save | sessions [--all] | resume ID"


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
        """
        try:
            words = shlex.split(line)
        except ValueError as error:
            print(f"recap: {error}; {USAGE}")
            return
        if not words:
            self._manual(None)
        elif words[0] == "--model" and len(words) == 2:
            self._manual(words[1])
        elif words[0].startswith("--model=") and len(words) == 1:
            self._manual(words[0].partition("=")[2])
        elif words == ["status"]:
            print(self._status())
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

    def _status(self) -> str:
        from ..models import resolve_models

        ext = self.extension
        settings = ext.settings
        try:
            why = resolve_models(
                settings.model,
                fast_model=settings.fast_model,
                active_model=ext.transcript.active_model,
                env=os.environ,
            ).why
        except ConfigError as error:
            why = f"unusable setting: {error}"
        stats = ext.stats
        auto = "on" if settings.auto else "off"
        lines = [
            f"model:       {why}",
            f"automatic:   {auto} (away {settings.away_seconds:g} s, after a turn "
            f"{settings.post_turn_seconds:g} s, idle fallback {settings.idle_seconds:g} s)",
            *ext.status_lines(),
            f"transcript:  {len(ext.transcript)} entries, "
            f"{ext.transcript.completed_turns} agent turns",
            f"calls:       {stats.calls} made, {ext.engine.counters.saved_by_dedupe} saved by "
            f"dedupe, {stats.failures} failed; tokens {stats.tokens_in} in / "
            f"{stats.tokens_out} out",
        ]
        if ext.last_recap is not None:
            age = int(time.time() - ext.last_recap.created)
            lines.append(f"last recap:  {age} s ago via {ext.last_recap.model}")
        elif ext.last_result is not None:
            lines.append(f"last try:    no recap ({ext.last_result.reason})")
        path = log_path()
        lines.append(f"debug log:   {path if path is not None else 'off'}")
        return "\n".join(lines)
