"""``%recap compact-memory``: a model merges the project notes nobody has recalled yet.

The safety rules live in :meth:`MemoryStore.compact`: notes recalled at least once are never
sent and stay verbatim, and a reply that does not parse leaves the file as it was. This module
only chooses the model (the same resolution as a recap, minus the offline engine, which cannot
merge prose) and asks it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from .errors import ConfigError
from .memory import CompactResult, Entry, MemoryStore
from .models import has_credentials, missing_credentials, resolve_models
from .providers.base import OFFLINE, CancelToken, CompletionRequest
from .service import ProviderFactory, RecapStats, default_provider_factory
from .settings import Recap as RecapSettings

MERGE_MAX_TOKENS = 8192

MERGE_SYSTEM = """\
You tidy the notes an AI coding agent keeps about one software project. Each note has a kind:
fact (how something is), decision (what was chosen and why), gotcha (a trap to avoid) or
command (an invocation that works).

Merge notes that say the same thing or belong together, and drop a note when a later one
(notes are listed oldest first) contradicts or supersedes it. Keep every distinct piece of
knowledge. Each note you return must be one self-contained line of at most 400 characters that
still makes sense with no conversation around it, and keeps one of the four kinds.

Reply with only a JSON array of objects with the keys "kind" and "text", fewer than you were
given, and nothing else."""


def _day(when: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when))


def merge_request(notes: list[Entry]) -> str:
    """The user message: the notes as a JSON array, oldest first, with the day each was written."""
    items = [
        {
            "kind": n.kind,
            "text": n.text,
            "written": time.strftime("%Y-%m-%d", time.gmtime(n.created)),
        }
        for n in notes
    ]
    return "Notes to merge:\n" + json.dumps(items, ensure_ascii=False, indent=1)


def compact_memory(
    store: MemoryStore,
    *,
    settings: RecapSettings | None = None,
    model: str | None = None,
    active_model: str | None = None,
    env: Mapping[str, str] | None = None,
    stats: RecapStats | None = None,
    cancel: CancelToken | None = None,
    provider_factory: ProviderFactory | None = None,
) -> CompactResult:
    """Compact ``store`` with a model; the result's ``message`` says what happened.

    ``model`` overrides the setting for this call. Raises ConfigError for a model id that
    cannot be used at all; every other failure leaves the store untouched and is reported in
    the result.
    """
    settings = settings if settings is not None else RecapSettings()
    env = os.environ if env is None else env
    stats = stats if stats is not None else RecapStats()
    factory = provider_factory or default_provider_factory
    resolution = resolve_models(
        str(settings.model),
        override=model,
        fast_model=str(settings.fast_model),
        active_model=active_model,
        env=env,
    )
    candidates = [ref for ref in resolution.candidates if ref != OFFLINE]

    def merge(notes: list[Entry]) -> str:
        if not candidates:
            raise ConfigError(
                "compaction needs a model and only the offline engine is configured: "
                "set Recap.model or pass --model provider:model"
            )
        ref = candidates[0]
        if not has_credentials(ref, env):
            raise ConfigError(missing_credentials(ref))
        request = CompletionRequest(
            MERGE_SYSTEM,
            merge_request(notes),
            max_tokens=MERGE_MAX_TOKENS,
            timeout=float(settings.timeout_seconds),
        )
        stats.add(calls=1)
        try:
            completion = factory(ref, env).complete(request, cancel or CancelToken())
        except Exception:
            stats.add(failures=1)
            raise
        stats.add(tokens_in=completion.tokens_in, tokens_out=completion.tokens_out)
        return completion.text

    return store.compact(merge)
