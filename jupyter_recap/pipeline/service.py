"""One recap pipeline for every trigger: context → fingerprint → model → extraction.

``draft_recap`` is what the magics, the CLI, the server route and the automatic triggers call. It
never raises: every failure becomes ``RecapResult(recap=None, reason=...)`` and a debug-log line.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..debuglog import get_logger
from ..errors import (
    Cancelled,
    ConfigError,
    ProviderBadResponse,
    ProviderError,
    ProviderTimeout,
    RecapError,
)
from ..record.transcript import Transcript, current
from ..redact import Redactor
from ..stores.framing import NO_FRAMING, Framing
from .context import build_context, fingerprint
from .grounding import ungrounded
from .offline import offline_recap
from .prices import call_cost, estimate_tokens
from .prompt import SYSTEM_PROMPT, extract_recap, user_message
from .providers.base import (
    OFFLINE,
    CancelToken,
    Completion,
    CompletionRequest,
    ModelRef,
    Provider,
)

# Re-exported: they were defined here, and callers import them from here.
from .results import RecapResult as RecapResult
from .results import RecapStats as RecapStats
from .results import WrittenRecap as WrittenRecap

if TYPE_CHECKING:
    from ..settings import Recap
    from ..stores.usage import Ticket, UsageLedger
    from .models import Resolution

ProviderFactory = Callable[[ModelRef, Mapping[str, str]], Provider]


def _default_settings() -> Recap:
    from ..settings import Recap

    return Recap()


def default_provider_factory(ref: ModelRef, env: Mapping[str, str]) -> Provider:
    from .models import make_provider

    return make_provider(ref, env)


def resolve(
    settings: Recap,
    *,
    override: str | None,
    active_model: str | None,
    env: Mapping[str, str],
) -> Resolution:
    """The writers to try, in order, for these settings (recaps and memory compaction alike);
    ConfigError for a model id that cannot be used at all."""
    from .models import resolve_models

    return resolve_models(
        str(settings.model),
        override=override,
        fast_model=str(settings.fast_model),
        active_model=active_model,
        env=env,
    )


#: The triggers of automatic recaps: the ones the daily budget and ``Recap.auto_hosted`` govern.
AUTOMATIC_TRIGGERS = frozenset({"away", "post_turn", "idle", "resume"})


class BudgetReached(Exception):
    """An automatic call was not made: today's budget of automatic calls is spent, or could
    not be counted; ``str(error)`` says which, for the banner's header."""


#: Why automatic recaps are written offline while the usage ledger cannot count them.
UNCOUNTED = "daily budget not counted: see %recap status"


@dataclass(frozen=True)
class Spending:
    """How model calls are counted and capped: the person's usage ledger (None: not counted),
    whether the call is automatic, the daily budget (which holds for automatic calls only),
    and price overrides."""

    ledger: UsageLedger | None = None
    automatic: bool = False
    budget: int | None = None
    prices: Mapping[str, Sequence[float]] = field(default_factory=dict)

    def start(self, ref: ModelRef) -> Ticket | None:
        """Count a call starting; BudgetReached when an automatic one may not be made.

        A ledger that cannot be written stops automatic calls (a budget that cannot be counted
        promises nothing about money) and never a call the person asked for (it is logged)."""
        budget = self.budget if self.automatic else None
        if budget is not None and budget <= 0:
            raise BudgetReached(_spent(budget))
        if self.ledger is None:
            return None
        try:
            ticket = self.ledger.start(ref.id, automatic=self.automatic, budget=budget)
        except RecapError as error:
            get_logger().warning("usage: not counted (%s)", error)
            if budget is not None:
                raise BudgetReached(UNCOUNTED) from None
            return None
        if ticket is None:
            raise BudgetReached(_spent(budget))
        return ticket

    def finish(
        self,
        ticket: Ticket | None,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        estimated: bool = False,
        cost: float | None = None,
        failed: bool = False,
    ) -> None:
        """Count what a started call spent (nothing is known of a failed one's tokens)."""
        if self.ledger is None or ticket is None:
            return
        try:
            self.ledger.finish(
                ticket,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                estimated=estimated,
                cost=cost,
                failed=failed,
            )
        except RecapError as error:
            get_logger().warning("usage: a call's tokens were not counted (%s)", error)


def _spent(budget: int | None) -> str:
    return f"daily budget of {budget} calls reached" if budget else "daily budget 0"


def call_model(
    ref: ModelRef,
    request: CompletionRequest,
    *,
    env: Mapping[str, str],
    stats: RecapStats,
    factory: ProviderFactory,
    cancel: CancelToken,
    spending: Spending | None = None,
) -> Completion:
    """One model call with its bookkeeping: counted as a call (and in the person's usage
    ledger, where BudgetReached stops an automatic call before it is made), a failure counted
    (a cancel is none), the tokens and the estimated cost added. Tokens a provider does not
    report are estimated from the text. The provider's exception goes on to the caller."""
    spending = spending or Spending()
    ticket = spending.start(ref)
    stats.add(calls=1)
    try:
        completion = factory(ref, env).complete(request, cancel)
    except BaseException as error:
        if not isinstance(error, Cancelled):
            stats.add(failures=1)
        spending.finish(ticket, failed=True)
        raise
    tokens_in, tokens_out = completion.tokens_in, completion.tokens_out
    estimated = not (tokens_in or tokens_out)
    if estimated:
        tokens_in = estimate_tokens(request.system) + estimate_tokens(request.user)
        tokens_out = estimate_tokens(completion.text)
    from .models import is_local

    # A model served on this machine costs no vendor's list price, whatever its name.
    cost = call_cost(ref.id, tokens_in, tokens_out, spending.prices, local=is_local(ref, env))
    stats.add(tokens_in=tokens_in, tokens_out=tokens_out)
    stats.add(**({"cost": cost} if cost is not None else {"unpriced": 1}))
    spending.finish(
        ticket, tokens_in=tokens_in, tokens_out=tokens_out, estimated=estimated, cost=cost
    )
    return dataclasses.replace(completion, tokens_in=tokens_in, tokens_out=tokens_out)


@dataclass(frozen=True)
class ModelCall:
    """What a model call needs besides its request; recaps and memory compaction alike."""

    settings: Recap
    env: Mapping[str, str]
    stats: RecapStats
    factory: ProviderFactory
    cancel: CancelToken
    usage: UsageLedger | None = None
    """The person's usage ledger, where calls are counted (None: not counted)."""
    automatic: bool = False
    """A call nobody asked for (an automatic recap): held to ``Recap.daily_budget`` and, for a
    hosted model, to ``Recap.auto_hosted``."""

    @property
    def spending(self) -> Spending:
        settings = self.settings
        budget = int(settings.daily_budget)
        return Spending(self.usage, self.automatic, budget, dict(settings.prices))


@dataclass(frozen=True)
class Answer:
    """How asking the candidates in turn ended: a ``completion``, or none and why not."""

    completion: Completion | None
    ref: ModelRef | None
    """The model that answered; without an answer, the last one tried (None: there was none)."""
    reason: str = ""
    """Why no model answered (the last candidate's failure)."""
    held: str = ""
    """Why an automatic call was not made (``Recap.auto_hosted``, the daily budget)."""
    offline: bool = False
    """The offline engine came next in the resolution, or the last model tried does not exist:
    the caller's own fallback is due."""
    cancelled: bool = False
    missing: str = ""
    """The last model tried does not exist ("model openai:x was not found"; models.py)."""
    unusable: str = ""
    """The last model tried answered, but with nothing that can be read (no text, not the
    wire's format): the call was made, so the caller's fallback is due, saying this."""


def ask_in_turn(
    candidates: Sequence[ModelRef], request: CompletionRequest, call: ModelCall, *, label: str
) -> Answer:
    """Ask ``candidates`` in order until one answers ``request``; a model's failure never raises.

    The rules every model call follows: a model without credentials is skipped (only a model
    named explicitly gets this far); an automatic call skips hosted models unless
    ``Recap.auto_hosted``; ``Recap.timeout_seconds`` holds for the whole walk, each call getting
    what is left of it; a call the daily budget stops ends the walk (``held`` says why); a
    provider error or timeout moves on to the next candidate; a cancel ends the walk; a walk
    whose last model does not exist ends as if the offline engine were next (``missing``), and
    so does a walk whose last model answered with nothing readable (``unusable``). The walk
    stops at the offline engine, which is not a model call: what to write instead (or whether
    to refuse) is the caller's, as is reading the answer. ``label`` starts the log lines.
    """
    from .models import has_credentials, is_local, missing_credentials, note_missing

    log = get_logger()
    env, settings = call.env, call.settings
    spending = call.spending
    deadline = time.monotonic() + float(settings.timeout_seconds)
    reason = "no model was available"
    held = ""
    missing = ""
    unusable = ""
    ref: ModelRef | None = None
    for ref in candidates:
        if call.cancel.cancelled:
            return Answer(None, ref, "cancelled", held, cancelled=True)
        if ref == OFFLINE:
            return Answer(None, ref, reason, held, offline=True, unusable=unusable)
        if not has_credentials(ref, env):
            reason = missing_credentials(ref)  # a call would just be refused
            continue
        if call.automatic and not settings.auto_hosted and not is_local(ref, env):
            held = "hosted models only when asked (Recap.auto_hosted)"
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            reason = f"no answer within {settings.timeout_seconds:g} s"
            break
        try:
            completion = call_model(
                ref,
                dataclasses.replace(request, timeout=remaining),
                env=env,
                stats=call.stats,
                factory=call.factory,
                cancel=call.cancel,
                spending=spending,
            )
        except BudgetReached as stop:
            held = str(stop)
            break
        except Cancelled:
            return Answer(None, ref, "cancelled", held, cancelled=True)
        except ProviderTimeout:
            # The provider saw only what was left of the budget; report the setting.
            reason = f"{ref.id}: no answer within {settings.timeout_seconds:g} s"
            log.warning("%s via %s timed out", label, ref.id)
            missing = unusable = ""
            continue
        except (ProviderError, ConfigError) as error:
            reason = f"{ref.id}: {error}"
            log.warning("%s via %s failed: %s", label, ref.id, error)
            missing = note_missing(ref, env, error)  # remembered: resolutions skip it a while
            # An answer came, with nothing in it to read ("answer has no text").
            unusable = (
                f"{ref.id}'s answer was unusable: {error}"
                if isinstance(error, ProviderBadResponse)
                else ""
            )
            continue
        return Answer(completion, ref)
    return Answer(
        None, ref, reason, held, offline=bool(missing), missing=missing, unusable=unusable
    )


def hosted_notice(model: str) -> str:
    """The one-time announcement that automatic recaps now go to a hosted ``model``."""
    return (
        f"Automatic recaps send this notebook's recent transcript (redacted) to {model}. "
        "To stop: %recap off (or c.Recap.auto = False); JUPYTER_RECAP_AUTO_HOSTED=0 keeps "
        "them on local models."
    )


def draft_recap(
    transcript: Transcript | None = None,
    *,
    model: str | None = None,
    settings: Recap | None = None,
    trigger: str = "manual",
    cancel: CancelToken | None = None,
    framing: Framing | None = None,
    env: Mapping[str, str] | None = None,
    stats: RecapStats | None = None,
    provider_factory: ProviderFactory | None = None,
    context: str | None = None,
    usage: UsageLedger | None = None,
) -> RecapResult:
    """Draft a recap of ``transcript`` (default: this kernel's). Never raises.

    ``model`` overrides every setting for this call (``%recap --model M``). ``framing`` adds the
    task list and memory notes (:mod:`jupyter_recap.stores.framing`); without it there are none.
    ``context`` is the text already built for this transcript and framing (the kernel builds it
    once per change and fingerprints it); without it the context is built here. ``usage`` is
    the person's ledger: model calls are counted there, and automatic ones (the triggers in
    :data:`AUTOMATIC_TRIGGERS`) are held to ``Recap.daily_budget`` across kernels; without it
    only a budget of 0 holds.
    """
    log = get_logger()
    try:
        call = ModelCall(
            settings if settings is not None else _default_settings(),
            os.environ if env is None else env,
            stats if stats is not None else RecapStats(),
            provider_factory or default_provider_factory,
            cancel or CancelToken(),
            usage,
            automatic=trigger in AUTOMATIC_TRIGGERS,
        )
        return _draft(
            current() if transcript is None else transcript,
            model=model,
            trigger=trigger,
            framing=framing or NO_FRAMING,
            context=context,
            call=call,
        )
    except Exception as error:
        log.exception("recap (%s) failed unexpectedly", trigger)
        return RecapResult(None, f"internal error: {type(error).__name__}: {error}")


def _draft(
    transcript: Transcript,
    *,
    model: str | None,
    trigger: str,
    framing: Framing,
    context: str | None,
    call: ModelCall,
) -> RecapResult:
    from .models import is_local

    log = get_logger()
    settings, env = call.settings, call.env
    if context is None:
        cap = int(settings.max_context_chars)
        context = build_context(transcript, max_chars=cap, extras=framing.extras, env=env)
    if not context:
        return RecapResult(None, "nothing to recap yet: no agent activity was recorded")
    digest = fingerprint(context)
    try:
        resolution = resolve(
            settings, override=model, active_model=transcript.active_model, env=env
        )
    except ConfigError as error:
        return RecapResult(None, str(error), fingerprint=digest, context_chars=len(context))
    log.debug("recap (%s): %s; %d context chars", trigger, resolution.why, len(context))

    request = CompletionRequest(SYSTEM_PROMPT, user_message(context))
    answer = ask_in_turn(resolution.candidates, request, call, label=f"recap ({trigger})")
    tried = answer.ref.id if answer.ref is not None else None
    if answer.cancelled:
        return RecapResult(None, "cancelled", tried, digest, len(context))
    if answer.completion is None or answer.ref is None:
        if not (answer.offline or answer.held or answer.unusable):
            return RecapResult(None, answer.reason, tried, digest, len(context))
        # The offline engine: next in line, instead of a call that was not made, or in place
        # of an answer with nothing to read in it (the note says why, next to the engine's
        # name in the banner).
        if answer.held:
            log.info("recap (%s): %s; written offline", trigger, answer.held)
        note = answer.held or answer.missing or answer.unusable or resolution.note
        return _offline(transcript, framing, trigger, digest, len(context), note)

    ref, completion = answer.ref, answer.completion
    text = extract_recap(completion.text)
    if text is None:
        # The call was made (and counted, maybe paid for), but its answer cannot be shown:
        # no <recap> tag, nothing at all, or only reasoning. Dropping the draft would leave
        # an automatic recap with no banner and no word; the offline recap takes its place,
        # and the note beside the engine says what became of the model's answer.
        empty = not completion.text.strip()
        unusable = f"{ref.id} gave an empty answer" if empty else f"{ref.id}'s answer had no recap"
        log.warning("recap (%s): %s; written offline", trigger, unusable)
        fallback = _offline(transcript, framing, trigger, digest, len(context), unusable)
        if fallback.recap is None:
            return RecapResult(None, unusable, tried, digest, len(context))
        return fallback
    invented = ungrounded(text, context)
    if invented:
        # A name the session does not hold (a file, a number, an error, a cell): the person
        # would go looking for something that is not there. The offline recap instead, saying
        # why; the rejected text stays in the debug log.
        redact = Redactor(env)
        why = f"{ref.id}'s recap named {redact(invented[0])}, which the session does not hold"
        log.warning("recap (%s): %s; written offline", trigger, why)
        log.debug("recap (%s): rejected model recap: %s", trigger, redact(text))
        fallback = _offline(transcript, framing, trigger, digest, len(context), why)
        if fallback.recap is None:
            return RecapResult(None, why, tried, digest, len(context))
        return fallback
    hosted = not is_local(ref, env)
    recap = WrittenRecap(
        # The model may write a secret itself (quoting a URL it inferred, a key it made up):
        # redacted here, every place the recap is shown or saved gets it clean.
        Redactor(env)(text),
        ref.id,
        trigger,
        digest,
        completion.tokens_in,
        completion.tokens_out,
        notice=hosted_notice(ref.id) if call.automatic and hosted else "",
    )
    return RecapResult(recap, "ok", tried, digest, len(context))


def _offline(
    transcript: Transcript,
    framing: Framing,
    trigger: str,
    digest: str,
    context_chars: int,
    note: str,
) -> RecapResult:
    """The offline engine's recap, ``note`` saying why no model wrote it."""
    text = offline_recap(
        transcript,
        open_task=framing.open_task,
        progress=framing.progress,
        waiting=framing.waiting,
    )
    if text is None:
        return RecapResult(None, "nothing to recap yet", OFFLINE.id, digest, context_chars)
    recap = WrittenRecap(text, OFFLINE.id, trigger, digest, note=note)
    return RecapResult(recap, "ok", OFFLINE.id, digest, context_chars)


def generate_recap(
    transcript: Transcript | None = None, *, model: str | None = None, **options: object
) -> WrittenRecap | None:
    """A recap of ``transcript`` (default: this kernel's), or None. Never raises.

    ``model`` is ``"offline"``, ``"provider:model"`` or None for the configured choice. Other
    keyword options are those of :func:`draft_recap`.
    """
    result = draft_recap(transcript, model=model, **options)  # type: ignore[arg-type]
    return result.recap
