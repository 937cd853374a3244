"""One recap pipeline for every trigger: context → fingerprint → model → extraction.

``draft_recap`` is what the magics, the CLI, the server route and the automatic triggers call. It
never raises: every failure becomes ``RecapResult(recap=None, reason=...)`` and a debug-log line.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..debuglog import get_logger
from ..errors import Cancelled, ConfigError, ProviderError, ProviderTimeout
from ..record.transcript import Transcript, current
from .context import build_context, fingerprint
from .framing import NO_FRAMING, Framing
from .offline import offline_recap
from .prompt import SYSTEM_PROMPT, extract_recap, user_message
from .providers.base import (
    OFFLINE,
    CancelToken,
    Completion,
    CompletionRequest,
    ModelRef,
    Provider,
)

if TYPE_CHECKING:
    from ..settings import Recap
    from .models import Resolution

ProviderFactory = Callable[[ModelRef, Mapping[str, str]], Provider]


@dataclass(frozen=True)
class WrittenRecap:
    """A recap ready to show: ``text`` (plain, ≤ ~400 chars) and the ``model`` that wrote it.

    Not to be confused with :class:`jupyter_recap.settings.Recap`, the settings (``c.Recap``):
    ``jupyter_recap.Recap`` stays an alias of this class for code written against 0.1.
    """

    text: str
    model: str
    reason: str = "manual"
    """The trigger that asked for it: manual, away, post_turn, idle, resume, cli, http."""
    fingerprint: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    created: float = field(default_factory=time.time)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class RecapResult:
    """The outcome of one draft: a recap, or None and the one-line reason why not."""

    recap: WrittenRecap | None
    reason: str
    model: str | None = None
    fingerprint: str = ""
    context_chars: int = 0


@dataclass
class RecapStats:
    """Model-call counters shown by ``%recap status``."""

    calls: int = 0
    failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    on_tokens: Callable[[int, int], None] | None = field(default=None, repr=False, compare=False)
    """Told of every model call's tokens (the session record keeps a running count)."""

    def add(self, **deltas: int) -> None:
        """Add to counters from any thread."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)
        if self.on_tokens is not None and ("tokens_in" in deltas or "tokens_out" in deltas):
            self.on_tokens(deltas.get("tokens_in", 0), deltas.get("tokens_out", 0))


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


def call_model(
    ref: ModelRef,
    request: CompletionRequest,
    *,
    env: Mapping[str, str],
    stats: RecapStats,
    factory: ProviderFactory,
    cancel: CancelToken,
) -> Completion:
    """One model call with its bookkeeping: counted as a call, a failure counted (a cancel is
    none), the tokens added. The provider's exception goes on to the caller."""
    stats.add(calls=1)
    try:
        completion = factory(ref, env).complete(request, cancel)
    except Cancelled:
        raise
    except Exception:
        stats.add(failures=1)
        raise
    stats.add(tokens_in=completion.tokens_in, tokens_out=completion.tokens_out)
    return completion


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
) -> RecapResult:
    """Draft a recap of ``transcript`` (default: this kernel's). Never raises.

    ``model`` overrides every setting for this call (``%recap --model M``). ``framing`` adds the
    task list and memory notes (:mod:`jupyter_recap.pipeline.framing`); without it there are none.
    ``context`` is the text already built for this transcript and framing (the kernel builds it
    once per change and fingerprints it); without it the context is built here.
    """
    log = get_logger()
    try:
        return _draft(
            current() if transcript is None else transcript,
            model=model,
            settings=settings if settings is not None else _default_settings(),
            trigger=trigger,
            cancel=cancel or CancelToken(),
            framing=framing or NO_FRAMING,
            env=os.environ if env is None else env,
            stats=stats if stats is not None else RecapStats(),
            factory=provider_factory or default_provider_factory,
            context=context,
        )
    except Exception as error:
        log.exception("recap (%s) failed unexpectedly", trigger)
        return RecapResult(None, f"internal error: {type(error).__name__}: {error}")


def _draft(
    transcript: Transcript,
    *,
    model: str | None,
    settings: Recap,
    trigger: str,
    cancel: CancelToken,
    framing: Framing,
    env: Mapping[str, str],
    stats: RecapStats,
    factory: ProviderFactory,
    context: str | None,
) -> RecapResult:
    from .models import has_credentials, missing_credentials

    log = get_logger()
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

    deadline = time.monotonic() + float(settings.timeout_seconds)
    reason = "no model was available"
    tried: str | None = None
    for ref in resolution.candidates:
        tried = ref.id
        if cancel.cancelled:
            return RecapResult(None, "cancelled", tried, digest, len(context))
        if ref == OFFLINE:
            text = offline_recap(transcript, open_task=framing.open_task, progress=framing.progress)
            if text is None:
                return RecapResult(None, "nothing to recap yet", tried, digest, len(context))
            recap = WrittenRecap(text, OFFLINE.id, trigger, digest)
            return RecapResult(recap, "ok", tried, digest, len(context))
        if not has_credentials(ref, env):
            # Only an explicitly named model gets here; a call would just be refused.
            reason = missing_credentials(ref)
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            reason = f"no answer within {settings.timeout_seconds:g} s"
            break
        request = CompletionRequest(SYSTEM_PROMPT, user_message(context), timeout=remaining)
        try:
            completion = call_model(
                ref, request, env=env, stats=stats, factory=factory, cancel=cancel
            )
        except Cancelled:
            return RecapResult(None, "cancelled", tried, digest, len(context))
        except ProviderTimeout:
            # The provider saw only what was left of the budget; report the setting.
            reason = f"{ref.id}: no answer within {settings.timeout_seconds:g} s"
            log.warning("recap (%s) via %s timed out", trigger, ref.id)
            continue
        except (ProviderError, ConfigError) as error:
            reason = f"{ref.id}: {error}"
            log.warning("recap (%s) via %s failed: %s", trigger, ref.id, error)
            continue
        text = extract_recap(completion.text)
        if text is None:
            log.warning("recap (%s) via %s: answer had no <recap> tag", trigger, ref.id)
            return RecapResult(
                None, f"{ref.id} answered without a recap", tried, digest, len(context)
            )
        recap = WrittenRecap(
            text, ref.id, trigger, digest, completion.tokens_in, completion.tokens_out
        )
        return RecapResult(recap, "ok", tried, digest, len(context))
    return RecapResult(None, reason, tried, digest, len(context))


def generate_recap(
    transcript: Transcript | None = None, *, model: str | None = None, **options: object
) -> WrittenRecap | None:
    """A recap of ``transcript`` (default: this kernel's), or None. Never raises.

    ``model`` is ``"offline"``, ``"provider:model"`` or None for the configured choice. Other
    keyword options are those of :func:`draft_recap`.
    """
    result = draft_recap(transcript, model=model, **options)  # type: ignore[arg-type]
    return result.recap
