"""``%recap status``: which engine would answer and why, the triggers, the stored state."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ..debuglog import log_path
from ..errors import ConfigError, RecapError
from ..stores.tasks import context_line
from ..textutil import format_cost, printable

if TYPE_CHECKING:
    from .host import KernelView


def status_report(ext: KernelView) -> str:
    """Every line of ``%recap status``."""
    from ..pipeline.models import resolve_models

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
        *_engine_lines(ext),
        f"transcript:  {len(ext.transcript)} entries, {ext.transcript.completed_turns} agent turns",
        f"capture:     {_capture_line(ext)}",
        f"tasks:       {context_line(ext.state.tasks, 200) or 'no task list'}",
        f"memory:      {_memory_line(ext)}",
        f"calls:       {stats.calls} made, {ext.schedule.counters.saved_by_dedupe} saved by "
        f"dedupe, {stats.failures} failed; tokens {stats.tokens_in} in / "
        f"{stats.tokens_out} out; {_cost(stats.cost, stats.unpriced)} (this kernel)",
        *_usage_lines(ext),
    ]
    if ext.last_recap is not None:
        age = int(time.time() - ext.last_recap.created)
        lines.append(f"last recap:  {age} s ago via {ext.last_recap.model}")
    elif ext.last_result is not None:
        lines.append(f"last try:    no recap ({ext.last_result.reason})")
    path = log_path()
    lines.append(f"debug log:   {path if path is not None else 'off'}")
    # Model ids, failure reasons (a server's error text), task text and paths are anyone's
    # text: the report is printed, so it is made inert as a whole.
    return printable("\n".join(lines))


def _cost(usd: float, unpriced: int) -> str:
    """An estimated cost, saying how many calls it leaves out for want of a price."""
    text = f"cost {format_cost(usd)}"
    return f"{text} (+ {unpriced} calls without a known price)" if unpriced else text


def _usage_lines(ext: KernelView) -> list[str]:
    """Today's spending across the person's kernels, and what the daily budget leaves."""
    settings = ext.settings
    budget = int(settings.daily_budget)
    hosted = "" if settings.auto_hosted else "; hosted models only when asked"
    # What cannot be counted is said, never shown as calls left: the budget is about money.
    problem = ext.usage.problem()
    if problem is not None:
        return [
            f"today:       unknown ({problem})",
            f"budget:      not counted, so automatic recaps are written offline until it can be "
            f"(Recap.daily_budget = {budget}); %recap still calls the model",
        ]
    try:
        today = ext.usage.today()
    except RecapError as error:  # a refused store: the kernel's own counters still stand
        return [f"today:       unknown ({error})"]
    lines = [
        f"today:       {today.calls} calls ({today.automatic} automatic), tokens "
        f"{today.tokens_in} in / {today.tokens_out} out; {_cost(today.cost, today.unpriced)} "
        "(all your kernels)",
        f"budget:      {max(budget - today.automatic, 0)} of {budget} automatic calls left "
        f"today (Recap.daily_budget){hosted}",
    ]
    for warning in ext.usage.take_warnings():
        lines.append(f"usage:       {warning}")
    return lines


def _capture_line(ext: KernelView) -> str:
    lines = ext.capture.lines()
    if not ext.settings.capture:
        return "off (Recap.capture = [] or JUPYTER_RECAP_CAPTURE=0)"
    if not lines:
        return "no supported agent framework installed"
    # One source per line, aligned under the first: several frameworks are often installed.
    return "\n             ".join(lines)


def _memory_line(ext: KernelView) -> str:
    state = ext.state
    if not state.memory_enabled:
        return "off (Recap.memory = False or JUPYTER_RECAP_MEMORY=0)"
    store = state.memory
    try:
        count = len(store.entries())
    except (OSError, RecapError) as error:  # a refused store (UnsafeStoreError) is a RecapError
        return f"not used: {error}"
    return f"{count} notes for {store.project_dir} (in {store.path})"


def _engine_lines(ext: KernelView) -> list[str]:
    state = ext.schedule.status()
    now = time.monotonic()
    if state["focused"] is None:
        focus = "not reported yet (idle fallback armed after a turn)"
    else:
        since = now - (state["focus_changed_at"] or now)
        focus = f"{'here' if state['focused'] else 'away'} for {since:.0f} s"
    deadline = state["next_deadline"]
    timer = f"in {max(deadline - now, 0):.1f} s" if deadline is not None else "none armed"
    counters = ext.schedule.counters
    last = "none yet"
    if counters.last_shown_at is not None:
        last = f"{now - counters.last_shown_at:.0f} s ago ({counters.last_reason})"
    feed = ext.feed
    if feed is None and ext.feed_problem is not None:
        server = f"no focus feed: {ext.feed_problem}"
    elif feed is None:
        server = "no focus feed (no jupyter_recap server started this kernel)"
    elif feed.connected:
        server = f"focus feed connected to {feed.server.url} (found via {feed.server.how})"
    else:
        why = feed.stopped_because or feed.last_error or "connecting"
        server = f"focus feed to {feed.server.url} not connected: {why}"
    writer = ext.writer
    session = (
        "not recorded"
        if writer is None
        else (
            f"{writer.id[:8]} ({writer.record.turns} prompts, {writer.writes} writes) "
            f"in {writer.store.root}"
        )
    )
    if ext.store_problem is not None:
        session += f"; stored sessions not used: {ext.store_problem}"
    elif writer is not None and writer.error is not None:
        session += f"; the latest write failed: {writer.error} (retrying)"
    return [
        f"session:     {session}",
        f"focus:       {focus}; source: {ext.focus_source}",
        f"server:      {server}",
        f"schedule:    next timer {timer}; pending {state['pending']}; "
        f"in flight: {state['in_flight'] or 'nothing'}; "
        f"turn running: {state['turn_running']}"
        + ("; a CLI agent's turn: no stop yet" if state.get("outside_turn") else ""),
        f"last shown:  {last}",
        f"drafts:      {counters.drafts_started} started, {counters.saved_by_dedupe} "
        f"saved by dedupe, {counters.skipped_no_activity} skipped (no agent turn yet), "
        f"{counters.discarded_stale} discarded as stale, {counters.cancelled} cancelled",
    ]
