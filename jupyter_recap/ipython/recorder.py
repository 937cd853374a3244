"""Turn cell executions into transcript entries (``pre_run_cell`` / ``post_run_cell``).

An agent cell (its magic is in ``Recap.agent_magics``) is one agent turn: the cell body is the
prompt, its answer is the reply (what it returned or displayed, else what it printed: see
:func:`~jupyter_recap.record.outputs.agent_reply`), and the way it ended is the outcome — also
when the magic reports a failure without raising, as jupyter-ai does. Other cells become short
activity entries. ``%recap`` cells are never recorded.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..capture.runs import CellMark, RunHub
from ..debuglog import get_logger
from ..focus.report import CellCounts
from ..record.transcript import Outcome, Transcript, describe_error
from ..settings import Recap
from ..textutil import duration, first_line, shorten
from .shell import Shell

# What only a cell with a magic, or an agent cell, needs is imported there, on the first such
# cell: `%load_ext` then does not pay for it (its dataclasses alone take about 3 ms to make).
if TYPE_CHECKING:
    from ..record.agentcells import AgentCell
    from ..record.outputs import Reply
    from .outputtap import OutputTap

# The settings the recorder keeps plain copies of.
_SETTINGS = ["agent_magics", "record_code_cells", "long_cell_seconds"]


# Plain classes, not dataclasses: making a dataclass compiles its methods, about 0.5 ms each
# at `%load_ext`, and these two are simple.
class CellEvents:
    """Callbacks the trigger schedule hangs on the recorder (turns come from the transcript)."""

    def __init__(self) -> None:
        self.on_input: list[Callable[[], None]] = []
        """A recorded cell starts: the person is here."""
        self.on_cell_end: list[Callable[[], None]] = []
        """An ordinary (non-agent) cell finished."""


class _Run:
    """The cell running now, as :meth:`Recorder.pre_run_cell` saw it."""

    __slots__ = ("agent", "cell_id", "mark", "source", "started", "tap")

    def __init__(
        self,
        source: str,
        cell_id: str | None,
        agent: AgentCell | None,
        tap: OutputTap | None,
        mark: CellMark | None,
        started: float,
    ) -> None:
        self.source = source
        self.cell_id = cell_id
        self.agent = agent
        self.tap = tap
        self.mark = mark
        self.started = started


class Recorder:
    """Records this shell's cells into ``transcript``; register with :meth:`attach`."""

    def __init__(
        self, shell: Shell, transcript: Transcript, settings: Recap, hub: RunHub | None = None
    ) -> None:
        self.shell = shell
        self.hub = hub
        """Where captured agent runs learn which cell they belong to (None: no capture)."""
        self.ai_lines: Callable[[], bool] = lambda: False
        """Whether jupyter-ai's ``%ai`` line magic counts as an agent turn (its source is on)."""
        self.transcript = transcript
        self.settings = settings
        self.events = CellEvents()
        self.cells = CellCounts()
        """Which cell ran as which ``In[n]`` (for cell links in recaps and the agents panel)."""
        self.agent_cell: AgentCell | None = None
        """The latest agent cell magic run here (``%%ai …``; not a ``%ai`` line), the latest
        whose turn did not error once there is one: a handoff cell uses the same magic."""
        self._run: _Run | None = None
        # Settings are read on every cell; traitlets lookups are slow enough to show up in the
        # per-cell overhead, so keep plain copies in step with the traits.
        self._agent_magics = tuple(settings.agent_magics)
        self._record_code = bool(settings.record_code_cells)
        self._long_cell = float(settings.long_cell_seconds)
        self._attached = False

    def _settings_changed(self, change: Any) -> None:
        self._agent_magics = tuple(self.settings.agent_magics)
        self._record_code = bool(self.settings.record_code_cells)
        self._long_cell = float(self.settings.long_cell_seconds)

    def attach(self) -> None:
        """Register the IPython event hooks (once)."""
        if self._attached:
            return
        self._attached = True
        self.settings.observe(self._settings_changed, names=_SETTINGS)
        self._settings_changed(None)
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)

    def detach(self) -> None:
        """Unregister the hooks and undo any tap still in place (safe to call twice)."""
        if not self._attached:
            return
        self._attached = False
        self.settings.unobserve(self._settings_changed, names=_SETTINGS)
        for name, callback in (
            ("pre_run_cell", self.pre_run_cell),
            ("post_run_cell", self.post_run_cell),
        ):
            with contextlib.suppress(ValueError):  # already gone
                self.shell.events.unregister(name, callback)
        if self._run is not None and self._run.tap is not None:
            self._run.tap.stop()
        if self._run is not None and self.hub is not None:
            self.hub.cell_ended(self._run.mark, None)
        self._run = None

    # -- hooks -----------------------------------------------------------------------------

    def pre_run_cell(self, info: Any) -> None:
        """Start of a cell: note it, and tee the outputs of an agent cell."""
        # This and post_run_cell run around every cell: the common path (an ordinary cell)
        # is kept to a few attribute reads and one append, without extra calls.
        self._run = None
        try:
            raw = info.raw_cell or ""
            if info.silent or not info.store_history:
                return  # frontends' internal executions (completion, inspectors, widgets)
            # Most cells hold no magic at all; only those with a "%" need parsing.
            agent = None
            if "%" in raw:
                from ..record.agentcells import is_recap_only_cell, parse_agent_cell, parse_ai_line

                if is_recap_only_cell(raw):
                    return
                agent = parse_agent_cell(raw, self._agent_magics)
                if agent is None and self.ai_lines():
                    agent = parse_ai_line(raw)
            elif not raw or raw.isspace():
                return
            for callback in self.events.on_input:
                callback()
            tap = None
            if agent is not None:
                from .outputtap import OutputTap

                tap = OutputTap(self.shell)
                tap.start()
                model = agent.model or self._default_agent_model()
                prompt = agent.body or self._line_prompt(agent)
                self.transcript.user(prompt, model=model, cell_id=info.cell_id)
            mark = None
            if self.hub is not None:
                mark = self.hub.cell_started(info.cell_id, owned=agent is not None)
            self._run = _Run(raw, info.cell_id, agent, tap, mark, time.monotonic())
        except Exception:  # noqa: BLE001 - recording must never break a cell
            get_logger().exception("recorder failed before a cell")
            self._run = None

    def post_run_cell(self, result: Any) -> None:
        """End of a cell: write its entries."""
        run, self._run = self._run, None
        if run is None:
            return
        try:
            error = result.error_before_exec or result.error_in_exec
            # Runs captured from the cell wrote their own turns (a failed one waited for this
            # moment to learn how the cell ended); the cell's source would only repeat them.
            captured = 0
            if self.hub is not None and run.mark is not None:
                captured = self.hub.cell_ended(run.mark, error)
            if run.agent is None:
                if self._record_code and not captured:
                    self.transcript.code(
                        run.source,
                        error=describe_error(error) if error is not None else None,
                        count=result.execution_count,
                        cell_id=run.cell_id,
                    )
                for callback in self.events.on_cell_end:
                    callback()
            else:
                if run.tap is not None:
                    run.tap.stop()
                self._turn_ended(run, result)
            self.cells.note(run.cell_id, result.execution_count)
            seconds = time.monotonic() - run.started
            if seconds >= self._long_cell:
                self._long_cell_ran(run, result, seconds, error)
        except Exception:  # noqa: BLE001 - recording must never break a cell
            get_logger().exception("recorder failed after a cell")

    def _long_cell_ran(self, run: _Run, result: Any, seconds: float, error: Any) -> None:
        """Note how long a long cell ran and how it ended: news for someone coming back."""
        count = result.execution_count
        label = f"In[{count}]" if count is not None else "A cell"
        head = shorten(first_line(run.source), 60)
        if isinstance(error, KeyboardInterrupt):
            ending = "was interrupted"
        elif error is not None:
            ending = f"failed ({describe_error(error)})"
        else:
            ending = "finished"
        where = f"{label} ({head})" if head else label
        text = f"{where} ran for {duration(seconds)} and {ending}."
        self.transcript.event(text, cell_id=run.cell_id)

    def _turn_ended(self, run: _Run, result: Any) -> None:
        """An agent cell finished: its reply and how the turn ended."""
        error = result.error_before_exec or result.error_in_exec
        reply = self._reply(run, result)
        if reply.text:
            self.transcript.assistant(reply.text, cell_id=run.cell_id)
        outcome: Outcome = "ok"
        detail: str | None = None
        if isinstance(error, KeyboardInterrupt):
            outcome = "aborted"
        elif error is not None:
            outcome, detail = "errored", describe_error(error)
        elif reply.failure is not None:
            # jupyter-ai returned or printed its failure instead of raising (a missing key, an
            # unknown model, "%ai fix" with nothing to fix): the turn failed all the same.
            outcome, detail = "errored", reply.failure
        self.transcript.outcome(outcome, detail, cell_id=run.cell_id, count=result.execution_count)
        if run.source.lstrip().startswith("%%") and (outcome != "errored" or not self.agent_cell):
            self.agent_cell = run.agent
        if run.agent is not None and run.agent.magic == "ai" and self.hub is not None:
            self.hub.count("jupyter-ai")

    # -- helpers ---------------------------------------------------------------------------

    def _line_prompt(self, agent: AgentCell) -> str:
        """What a ``%ai`` line asks (``%ai error``: about jupyter-ai's latest stored error)."""
        from ..capture.jupyter_ai import latest_error
        from ..record.agentcells import ai_line_prompt

        count = getattr(self.shell, "execution_count", 0)
        return ai_line_prompt(agent, latest_error(getattr(self.shell, "user_ns", {}), count))

    def _reply(self, run: _Run, result: Any) -> Reply:
        from ..record.outputs import Reply, Shown, agent_reply

        tap = run.tap
        if tap is not None and tap.next_input:
            return Reply(tap.next_input)  # -f code: the answer went into the next cell
        results = tap.displays.texts() if tap is not None else []
        value = getattr(result, "result", None)
        if value is not None:
            results.append(self._value_text(value))
        if tap is None:
            return agent_reply(Shown(tuple(results)))
        return agent_reply(Shown(tuple(results), tap.stdout.text(), tap.stderr.text()))

    def _value_text(self, value: Any) -> str:
        """The readable text of the cell's value (a returned string as itself, not its repr)."""
        if isinstance(value, str):
            return value
        try:
            data, _ = self.shell.display_formatter.format(value)
        except Exception:  # noqa: BLE001 - a failing repr must not lose the turn
            return ""  # nothing readable: what the cell printed is the reply then
        from ..record.outputs import bundle_text

        return bundle_text(data)

    def _default_agent_model(self) -> str | None:
        """The model jupyter-ai uses when a cell names none (its configured default)."""
        registry = getattr(getattr(self.shell, "magics_manager", None), "registry", {})
        magics = registry.get("AiMagics") if isinstance(registry, dict) else None
        for name in ("initial_language_model", "default_language_model"):
            value = getattr(magics, name, None)
            if isinstance(value, str) and value:
                return value
        return None
