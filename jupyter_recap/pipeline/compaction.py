"""``%recap compact-memory``: a model merges the project notes nobody has recalled yet.

Two rules make it safe. Notes recalled at least once are never sent to the model and stay word
for word. A reply that does not parse, has a bad item or holds more notes than it was sent
leaves the file as it was. And it is a deliberate, stated no-op unless the memory holds more
than :data:`COMPACT_MIN` notes, at least two of them never recalled. The models are the ones a
recap would try, asked in turn by the same rules (:func:`.service.ask_in_turn`), minus the
offline engine, which cannot merge prose.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import Cancelled, ConfigError, RecapError
from ..redact import Redactor
from ..settings import Recap
from ..stores.memory import MAX_ENTRIES, Entry, MemoryStore, check_kind, check_text, normalise
from ..stores.usage import UsageLedger
from .providers.base import OFFLINE, CancelToken, CompletionRequest
from .service import (
    ModelCall,
    ProviderFactory,
    RecapStats,
    ask_in_turn,
    default_provider_factory,
    resolve,
)

COMPACT_MIN = 60
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


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did: ``changed`` is False for a no-op or a refusal."""

    changed: bool
    message: str
    before: int = 0
    after: int = 0


def compact_notes(store: MemoryStore, merge: Callable[[list[Entry]], str]) -> CompactResult:
    """Merge the never-recalled notes of ``store`` with ``merge`` (a model call).

    ``merge`` gets copies of the unused notes only and returns JSON text of a list of
    ``{"kind", "text"}``. It runs without the store's lock, so other kernels keep writing;
    their notes are kept.
    """
    if store.disabled:
        return CompactResult(False, "memory is turned off")
    current = store.entries()
    unused = [e for e in current if e.hits == 0]
    n = len(current)
    if n <= COMPACT_MIN:
        why = f"nothing to compact: {n} notes (compaction starts past {COMPACT_MIN})"
        return CompactResult(False, why, n, n)
    if len(unused) < 2:
        why = "nothing to compact: fewer than two notes were never recalled"
        return CompactResult(False, why, n, n)
    try:
        merged = _parse_merge(merge([dataclasses.replace(e) for e in unused]), len(unused))
    except (ValueError, RecapError) as error:  # an unusable reply, or the model failed
        return CompactResult(False, f"memory unchanged: {error}", n, n)
    sent = {(e.kind, e.text, e.created) for e in unused}
    result = CompactResult(False, "memory unchanged: the merge would exceed the limit", n, n)

    def apply(entries: list[Entry]) -> list[Entry] | None:
        nonlocal result
        kept = [e for e in entries if e.hits > 0 or (e.kind, e.text, e.created) not in sent]
        seen = {normalise(e.text) for e in kept}
        now = time.time()
        for kind, text in merged:
            if normalise(text) not in seen:
                seen.add(normalise(text))
                kept.append(Entry(kind, text, now))
        if len(kept) > MAX_ENTRIES:
            return None
        message = f"compacted {len(entries)} notes into {len(kept)}"
        result = CompactResult(True, message, len(entries), len(kept))
        return kept

    store.modify(apply)
    return result


def _parse_merge(reply: str, limit: int) -> list[tuple[str, str]]:
    """The ``(kind, text)`` pairs of a merge reply; ValueError (InputError) when it is unusable."""
    text = str(reply).strip()
    fenced = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        items = json.loads(text)
    except ValueError:
        raise ValueError("the reply is not JSON") from None
    if not isinstance(items, list) or not items:
        raise ValueError("the reply is not a non-empty list of notes")
    if len(items) > limit:
        raise ValueError(f"the reply has {len(items)} notes, more than the {limit} sent")
    pairs = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("a note in the reply is not an object")
        pairs.append((check_kind(item.get("kind")), check_text(item.get("text"))))
    return pairs


def _day(when: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when))


def merge_request(notes: list[Entry], clean: Redactor | None = None) -> str:
    """The user message: the notes as a JSON array, oldest first, with the day each was written.

    Each note's text is redacted with ``clean`` (default: a :class:`Redactor` of this process's
    environment), like everything else sent to a model: a note kept from before notes were
    redacted on writing, or holding the value of a key set since, must not reach it.
    """
    clean = clean if clean is not None else Redactor()
    items = [
        {
            "kind": n.kind,
            "text": clean(n.text),
            "written": time.strftime("%Y-%m-%d", time.gmtime(n.created)),
        }
        for n in notes
    ]
    return "Notes to merge:\n" + json.dumps(items, ensure_ascii=False, indent=1)


def compact_memory(
    store: MemoryStore,
    *,
    settings: Recap | None = None,
    model: str | None = None,
    active_model: str | None = None,
    env: Mapping[str, str] | None = None,
    stats: RecapStats | None = None,
    cancel: CancelToken | None = None,
    provider_factory: ProviderFactory | None = None,
    usage: UsageLedger | None = None,
) -> CompactResult:
    """Compact ``store`` with a model; the result's ``message`` says what happened.

    ``model`` overrides the setting for this call; the call is counted in ``usage`` (the
    person's ledger), as a call the person asked for. Raises ConfigError for a model id that
    cannot be used at all; every other failure leaves the store untouched and is reported in
    the result.
    """
    settings = settings if settings is not None else Recap()
    env = os.environ if env is None else env
    # Never automatic: the person asked for it, so neither the daily budget nor
    # Recap.auto_hosted holds (the call is still counted in ``usage``).
    call = ModelCall(
        settings,
        env,
        stats if stats is not None else RecapStats(),
        provider_factory or default_provider_factory,
        cancel or CancelToken(),
        usage,
    )
    resolution = resolve(settings, override=model, active_model=active_model, env=env)
    # Unlike a recap, compaction has no offline fallback: the offline engine cannot merge
    # prose, so it is no candidate, and with no model left the merge is refused.
    candidates = [ref for ref in resolution.candidates if ref != OFFLINE]

    def merge(notes: list[Entry]) -> str:
        if not candidates:
            raise ConfigError(
                "compaction needs a model and only the offline engine is configured: "
                "set Recap.model or pass --model provider:model"
            )
        request = CompletionRequest(
            MERGE_SYSTEM, merge_request(notes, Redactor(env)), max_tokens=MERGE_MAX_TOKENS
        )
        answer = ask_in_turn(candidates, request, call, label="memory compaction")
        if answer.cancelled:
            raise Cancelled(answer.reason)
        if answer.completion is None:
            raise RecapError(answer.held or answer.reason)
        return answer.completion.text

    return compact_notes(store, merge)
