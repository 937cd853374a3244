"""``%recap``: a recap now, on/off for automatic recaps, and status; registering the magics.

The extension's magics only take names nobody has yet: a name IPython or another loaded
extension already has (IPython's ``%recall``, jupyter-ai's ``%ai``) stays theirs.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from IPython.core.magic import Magics, line_magic, magics_class

from ..debuglog import get_logger
from ..errors import RecapError
from ..textutil import printable
from .statemagics import compact_memory_now

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .host import RecapHost

USAGE = (
    "usage: %recap [--model M] [--dry-run] | status | on | off | save | sessions [--all]"
    " | resume ID | compact-memory [--model M] | state | handoff [--print]"
)


@magics_class
class RecapMagics(Magics):
    """The ``%recap`` line magic."""

    def __init__(self, shell: InteractiveShell, *, host: RecapHost) -> None:
        super().__init__(shell)
        self.host = host
        """The loaded extension, as far as ``%recap`` drives it."""

    @line_magic
    def recap(self, line: str = "") -> None:
        """Show a recap of this notebook's agent session now.

        %recap              draft one now with the configured model
        %recap --model M    use model M for this one recap ("offline", "openai:gpt-4o-mini", …)
        %recap --dry-run    print the exact request a recap would send, and to which model;
                            send nothing (with --model M: the request M would get)
        %recap status       which model would answer and why, and the counters
        %recap on | off     turn automatic recaps on or off for this kernel
        %recap save         write this session's record now
        %recap sessions     the last 15 sessions of this notebook (--all: of every notebook)
        %recap resume ID    continue a stored session (any unique id prefix) and recap it
        %recap state        this session's state: task, decisions, constraints, open failures,
                            what changed, what waits, next
        %recap handoff      a new agent cell below this one, not run: the notebook's agent magic
                            and a prompt carrying that state on, ready to edit
                            (--print: print it instead; terminal IPython always prints it)
        %recap compact-memory [--model M]
                            have a model merge the project notes nobody has recalled yet
                            (only past 60 notes with at least two never recalled)
        """
        try:
            words = shlex.split(line)
        except ValueError as error:
            print(f"recap: {error}; {USAGE}")
            return
        dry_run = "--dry-run" in words
        if dry_run:
            words = [word for word in words if word != "--dry-run"]
        if not words or words[0].startswith("--model"):
            model, ok = _model_option(words)
            if not ok:
                print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")
            elif dry_run:
                self._dry_run(model)
            else:
                self._manual(model)
        elif dry_run:
            print(f"recap: --dry-run goes with %recap [--model M] only; {USAGE}")
        elif words[0] == "compact-memory":
            model, ok = _model_option(words[1:])
            if ok:
                compact_memory_now(self.host, model)
            else:
                print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")
        elif words == ["status"]:
            from .status import status_report  # here: only %recap status needs it

            print(status_report(self.host))
        elif words in (["on"], ["off"]):
            self.host.settings.auto = words[0] == "on"
            print(f"recap: automatic recaps {words[0]}")
        elif words == ["save"]:
            self._save()
        elif words == ["state"]:
            self._state()
        elif words in (["handoff"], ["handoff", "--print"]):
            self._handoff(printed=len(words) == 2)
        elif words in (["sessions"], ["sessions", "--all"]):
            self._sessions(all_notebooks=len(words) == 2)
        elif len(words) == 2 and words[0] == "resume":
            self._resume(words[1])
        else:
            print(f"recap: unknown arguments {line.strip()!r}; {USAGE}")

    def _manual(self, model: str | None) -> None:
        ext = self.host
        if model is not None and not model.strip():
            print(f"recap: --model needs a model id; {USAGE}")
            return
        result = ext.manual(model)
        recap = result.recap
        # The reason can quote a model server's error text, and the model id and the recap are
        # the model's own words: printed inert (a terminal would act on their escapes).
        if recap is None:
            print(printable(f"recap: no recap ({result.reason})"))
        elif not ext.has_widgets:
            engine = f"{recap.model} · {recap.note}" if recap.note else recap.model
            print(printable(f"✦ recap · {engine}\n{recap.text}"))

    def _dry_run(self, model: str | None) -> None:
        if model is not None and not model.strip():
            print(f"recap: --model needs a model id; {USAGE}")
            return
        try:
            preview = self.host.preview(model)
        except RecapError as error:  # a model id that cannot be used: one line
            print(printable(f"recap: {error}"))
            return
        if preview is None:
            print("recap: dry run: nothing to recap yet (no agent activity was recorded)")
        else:
            print(preview.render())

    def _state(self) -> None:
        from ..record.statetext import render_state  # here: only %recap state needs it

        # The session's text is anyone's: printed inert (render_state redacts it).
        print(printable(render_state(self.host.transcript.state)))

    def _handoff(self, *, printed: bool) -> None:
        try:
            source = self.host.handoff()
        except RecapError as error:  # nothing to hand off yet
            print(printable(f"recap: {error}"))
            return
        shell = self.shell
        if printed or shell is None or not self.host.has_widgets:
            # Terminal IPython has no cells to put it in (its next prompt would run it on
            # Enter): the text is printed, to copy. handoff() made it inert and redacted.
            print(source)
            return
        # How a kernel asks its front end for a new cell below the running one (the payload
        # JupyterLab, Notebook and nbclassic act on); the front end never runs it.
        shell.set_next_input(source, replace=False)
        # Said in this cell's own output: a front end that ignores the payload leaves no cell.
        print("recap: the handoff is in a new cell below, not run (--print shows it here)")

    def _save(self) -> None:
        writer = self.host.writer
        if writer is None:
            print("recap: this session is not being recorded")
            return
        saved = writer.flush()
        status = writer.status()
        short = status.session_id[:8]
        if saved:
            print(f"recap: session {short} saved ({status.on_disk} entries)")
        elif status.error is not None:
            waiting = f"; {status.pending} entries wait in memory" if status.pending else ""
            print(f"recap: session {short} NOT saved: {status.error}{waiting}")
        elif status.prompts == 0:
            print("recap: nothing to save yet (a session is stored once it has an agent prompt)")
        else:
            print(f"recap: session {short} saved ({status.on_disk} entries; already up to date)")

    def _sessions(self, *, all_notebooks: bool) -> None:
        from ..stores.listings import format_sessions
        from ..stores.sessions import SessionStore

        ext = self.host
        if ext.writer is not None:
            ext.writer.flush()  # list what is live too
        notebook = None if all_notebooks else ext.notebook
        if notebook is None and not all_notebooks:
            # No notebook name (terminal IPython, a kernel started by hand): listing every
            # notebook's sessions here would pass them off as this one's.
            print(
                "recap: this kernel does not know its notebook, so it cannot tell which "
                "sessions are its own; %recap sessions --all lists every notebook's"
            )
            return
        try:
            summaries = SessionStore().list(notebook)
        except RecapError as error:  # a refused store: say why, list nothing from it
            print(printable(f"recap: {error}"))  # it names paths, which hold anything
            return
        # Titles and recaps are anyone's text; in JupyterLab an SGR code in one would recolour
        # the rest of this stream output, in a terminal worse.
        print(printable(format_sessions(summaries, time.time())))

    def _resume(self, id_or_prefix: str) -> None:
        try:
            record = self.host.resume_session(id_or_prefix)
        except RecapError as error:
            print(f"recap: {error}")
            return
        writer = self.host.writer
        if writer is not None and writer.record.parent == record.id:
            print(
                f"recap: session {record.id[:8]} is open in another kernel; its story continues "
                f"here as new session {writer.id[:8]}"
            )
        else:
            print(f"recap: resumed session {record.id[:8]}: {printable(record.title)}")
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


# -- registration ----------------------------------------------------------------------------

_ESCAPES = {"line": "%", "cell": "%%"}


def register_free(shell: InteractiveShell, magics: Sequence[Magics]) -> list[str]:
    """Register ``magics`` under the names nobody in ``shell`` has yet; return those left alone.

    A name is taken when the shell's magics table holds it (IPython's own, loaded or declared
    lazily, another extension's, an alias) or IPython is told to load it lazily. Overwriting
    one would break whatever the person or the other extension uses it for, so it is left out
    of the instance before registering, and one line (stderr of the ``%load_ext`` cell, and the
    debug log) names it.
    """
    manager = shell.magics_manager
    lazy = set(manager.lazy_magics)
    left_alone: list[str] = []
    for instance in magics:
        for kind, escape in _ESCAPES.items():
            table = manager.magics[kind]
            ours = instance.magics[kind]  # this instance's own copy: safe to trim
            for name in [n for n in ours if n in table or n in lazy]:
                del ours[name]
                left_alone.append(escape + name)
        shell.register_magics(instance)
    if left_alone:
        names = ", ".join(left_alone)
        get_logger().warning("magics: not taking %s: already defined", names)
        print(
            f"jupyter_recap: not taking {names}: already defined here by IPython or another "
            "extension",
            file=sys.stderr,
        )
    return left_alone


def unregister(shell: InteractiveShell, magics: Sequence[Magics]) -> None:
    """Undo :func:`register_free`: remove each name only while it is still this instance's."""
    manager = shell.magics_manager
    for instance in magics:
        for kind in _ESCAPES:
            table = manager.magics[kind]
            for name, function in instance.magics[kind].items():
                if table.get(name) == function:
                    del table[name]
        if manager.registry.get(type(instance).__name__) is instance:
            del manager.registry[type(instance).__name__]
