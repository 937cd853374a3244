"""Which model writes a recap: model ids, credentials, the choice itself, and the provider.

Model ids come from people and from jupyter-ai, so several spellings are accepted:
``provider:model`` (jupyter-ai 2), ``provider/model`` (jupyter-ai 3 / LiteLLM), jupyter-ai 2's
aliases, ``offline`` and bare model names whose provider is obvious (``gpt-4o``, ``claude-…``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigError, ProviderHTTPError
from .providers.anthropic import DEFAULT_BASE_URL as ANTHROPIC_BASE_URL
from .providers.anthropic import AnthropicProvider
from .providers.base import OFFLINE, ModelRef, Provider
from .providers.ollama import DEFAULT_HOST as OLLAMA_HOST
from .providers.ollama import OllamaProvider
from .providers.openai import DEFAULT_BASE_URL as OPENAI_BASE_URL
from .providers.openai import OpenAIProvider

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

#: Provider ids as jupyter-ai and LiteLLM spell them → the provider we speak to.
PROVIDER_IDS: dict[str, str] = {
    "openai": "openai",
    "openai-chat": "openai",
    "openai-chat-custom": "openai",
    "anthropic": "anthropic",
    "anthropic-chat": "anthropic",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "openrouter": "openrouter",  # OpenAI wire format, its own URL and key (see make_provider)
}

#: jupyter-ai 2's model aliases.
ALIASES: dict[str, ModelRef] = {
    "chatgpt": ModelRef("openai", "gpt-3.5-turbo"),
    "gpt4": ModelRef("openai", "gpt-4"),
    "gpt3": ModelRef("openai", "text-davinci-003"),
}

#: Bare model-name prefixes whose provider is unambiguous.
_BARE_PREFIXES = (
    (("gpt-", "o1", "o3", "o4", "chatgpt"), "openai"),
    (("claude",), "anthropic"),
)

_SUPPORTED = "openai, anthropic, ollama, openrouter or offline"


def parse_model_id(text: str) -> ModelRef:
    """Parse a model id in any accepted spelling; raise ConfigError if it cannot be used."""
    spelled = text.strip()
    if not spelled:
        raise ConfigError("empty model id: use provider:model, e.g. openai:gpt-4o-mini")
    lowered = spelled.lower()
    if lowered == "offline":
        return OFFLINE
    if lowered in ALIASES:
        return ALIASES[lowered]
    # Split on whichever separator comes first: "ollama/llama3.2:3b" and
    # "openrouter:anthropic/claude-3.5-sonnet" both keep the rest as the model name.
    cut = min((i for i in (spelled.find(":"), spelled.find("/")) if i >= 0), default=-1)
    if cut < 0:
        for prefixes, guessed in _BARE_PREFIXES:
            if lowered.startswith(prefixes):
                return ModelRef(guessed, spelled)
        raise ConfigError(
            f"cannot tell the provider of model {spelled!r}: write provider:model "
            f"({_SUPPORTED}), e.g. ollama:{spelled}"
        )
    prefix, model = spelled[:cut].strip().lower(), spelled[cut + 1 :].strip()
    provider = PROVIDER_IDS.get(prefix)
    if provider is None:
        raise ConfigError(
            f"model provider {prefix!r} of {spelled!r} is not supported: use {_SUPPORTED}"
        )
    if not model:
        raise ConfigError(f"model id {spelled!r} names no model after {prefix!r}")
    return ModelRef(provider, model)


#: Environment variables that make a provider usable; a base URL alone means a local server.
_CREDENTIAL_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openrouter": ("OPENROUTER_API_KEY",),
}


def credential_source(ref: ModelRef, env: Mapping[str, str]) -> str | None:
    """What makes ``ref`` usable (e.g. "OPENAI_API_KEY set"), or None if nothing does."""
    if ref.provider in ("offline", "ollama"):
        return "no key needed"
    for name in _CREDENTIAL_ENV.get(ref.provider, ()):
        if env.get(name, "").strip():
            return f"{name} set"
    return None


def missing_credentials(ref: ModelRef) -> str:
    """A one-line reason naming the variables that would make ``ref`` usable."""
    names = " or ".join(_CREDENTIAL_ENV.get(ref.provider, ())) or "credentials"
    return f"{ref.id} has no credentials: set {names}"


def has_credentials(ref: ModelRef, env: Mapping[str, str]) -> bool:
    """True if ``ref`` can be called with what ``env`` holds (Ollama and offline need nothing)."""
    return credential_source(ref, env) is not None


@dataclass(frozen=True)
class Resolution:
    """The models to try, in order, and one human line saying why."""

    candidates: tuple[ModelRef, ...]
    why: str
    note: str = ""
    """Why a model the person named was passed over because it does not exist ("model
    openai:gpt-4o-mnii was not found"): said beside a recap the offline engine writes instead."""


# -- models a provider does not have ---------------------------------------------------------

#: How long a model its provider said it does not have is skipped without asking again: recaps
#: do not knock on the same door each time, and a model pulled meanwhile (``ollama pull``) or
#: a deployment set up meanwhile is tried again before long.
MISSING_FOR_SECONDS = 600.0

#: What providers say, besides the model's name, when a request names a model they do not have:
#: OpenAI "The model `x` does not exist…" (404, ``model_not_found``), Ollama "model "x" not
#: found, try pulling it first" (404), OpenRouter "x is not a valid model ID" (400); Anthropic
#: answers 404 ``not_found_error`` with the message "model: x", whose 404 and name are enough.
_NOT_FOUND_WORDS = ("does not exist", "not found", "not a valid model", "unknown model", "no such")


def model_not_found(ref: ModelRef, error: BaseException) -> bool:
    """Whether ``error``, from a call to ``ref``, is its provider saying it has no such model.

    Only an answer that names the model counts: a 404 of a base URL that points nowhere (no
    route) is a setup problem for every model, and says so in its own error. The name is looked
    for by its first 40 characters, which the error keeps however it is cut.
    """
    if not isinstance(error, ProviderHTTPError) or error.status not in (400, 404):
        return False
    said = str(error).lower()
    if ref.model[:40].lower() not in said:
        return False
    return error.status == 404 or any(words in said for words in _NOT_FOUND_WORDS)


class MissingModels:
    """The models providers answered they do not have, by model and endpoint (the same name may
    exist on another server), each remembered for :data:`MISSING_FOR_SECONDS`. Thread-safe:
    drafts run on worker threads while ``%recap status`` reads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._found: dict[tuple[str, str], tuple[float, str]] = {}

    def add(self, ref: ModelRef, env: Mapping[str, str], error: BaseException) -> None:
        """Remember that ``ref`` answered ``error`` (its provider has no such model)."""
        with self._lock:
            self._found[(ref.id, _where(ref, env))] = (self._clock(), str(error))

    def get(self, ref: ModelRef, env: Mapping[str, str]) -> str | None:
        """What the provider said when it did not have ``ref``, if that was lately."""
        key = (ref.id, _where(ref, env))
        with self._lock:
            found = self._found.get(key)
            if found is None:
                return None
            if self._clock() - found[0] > MISSING_FOR_SECONDS:
                del self._found[key]
                return None
            return found[1]

    def clear(self) -> None:
        with self._lock:
            self._found.clear()


#: This process's record (a kernel's, for its recaps and ``%recap status``).
MISSING = MissingModels()


def missing_note(ref: ModelRef) -> str:
    """The line said beside an offline recap written because ``ref`` does not exist."""
    return f"model {ref.id} was not found"


def note_missing(
    ref: ModelRef, env: Mapping[str, str], error: BaseException, missing: MissingModels = MISSING
) -> str:
    """After a call to ``ref`` failed with ``error``: when the provider has no such model,
    remember it (recaps skip it for a while) and return :func:`missing_note`; else ``""``."""
    if not model_not_found(ref, error):
        return ""
    missing.add(ref, env, error)
    return missing_note(ref)


def _where(ref: ModelRef, env: Mapping[str, str]) -> str:
    try:
        return endpoint(ref, env)
    except (ConfigError, ValueError):
        return ""


def resolve_models(
    setting: str,
    *,
    override: str | None = None,
    fast_model: str = "",
    active_model: str | None = None,
    env: Mapping[str, str],
    missing: MissingModels = MISSING,
) -> Resolution:
    """Choose the models for one recap.

    An ``override`` (``%recap --model``) wins alone, then a ``setting`` other than "auto"; both
    raise ConfigError when unusable, since a person typed them. In "auto", ``fast_model`` and then
    ``active_model`` (the latest agent cell's) are candidates if they have credentials; a bad id
    there is only skipped, since a ``%%ai`` cell on an unsupported provider must not break
    recaps. With no candidate left, the offline engine.

    A model its provider lately said it does not have (``missing``: a mistyped ``%%ai`` model,
    say) is skipped too, the setting's as well, and the resolution's ``note`` says so; only a
    ``--model`` the person just typed is asked again.
    """
    if override is not None and override.strip():
        ref = parse_model_id(override)
        return Resolution((ref,), f"asked for this recap (--model): {ref.id}")
    if setting.strip() and setting.strip().lower() != "auto":
        ref = parse_model_id(setting)
        named = f"model setting {ref.id} (Recap.model / JUPYTER_RECAP_MODEL)"
        said = missing.get(ref, env) if ref != OFFLINE else None
        if said is not None:
            why = f"{named} skipped: not found ({said}); offline engine"
            return Resolution((OFFLINE,), why, missing_note(ref))
        return Resolution((ref,), named)

    chosen: list[ModelRef] = []
    reasons: list[str] = []
    skipped: list[str] = []
    notes: list[str] = []
    for label, raw in (("fast model", fast_model), ("active model", active_model or "")):
        if not raw.strip():
            continue
        try:
            ref = parse_model_id(raw)
        except ConfigError as error:
            # the part before the advice is enough in a one-line "why"
            skipped.append(f"{label} skipped: {str(error).split(': ', 1)[0]}")
            continue
        if ref == OFFLINE:  # asking for offline by name ends the search
            if not chosen:
                return Resolution((OFFLINE,), f"{label} is the offline engine")
            break
        if ref in chosen:
            continue
        source = credential_source(ref, env)
        if source is None:
            skipped.append(f"{label} {ref.id} skipped: no credentials")
            continue
        said = missing.get(ref, env)
        if said is not None:
            skipped.append(f"{label} {ref.id} skipped: not found ({said})")
            notes.append(missing_note(ref))
            continue
        chosen.append(ref)
        reasons.append(f"{label} {ref.id} ({source})")
    note = "; ".join(notes)
    if chosen:
        aside = f" ({'; '.join(skipped)})" if skipped else ""
        return Resolution(tuple(chosen), ", then ".join(reasons) + aside, note)
    if not skipped:
        return Resolution((OFFLINE,), "no agent model seen yet: offline engine")
    lacking = "usable model" if notes else "model with credentials"
    return Resolution((OFFLINE,), f"no {lacking}: offline engine ({'; '.join(skipped)})", note)


def endpoint(ref: ModelRef, env: Mapping[str, str]) -> str:
    """The base URL a call to ``ref`` goes to, with URLs from ``env`` (ConfigError for a
    provider we do not speak to; ValueError for the offline engine, which has none)."""

    def get(name: str) -> str:
        return env.get(name, "").strip()

    if ref.provider == "offline":
        raise ValueError("the offline engine is not an HTTP provider")
    if ref.provider == "openai":
        return get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    if ref.provider == "openrouter":
        return get("OPENROUTER_BASE_URL") or OPENROUTER_BASE_URL
    if ref.provider == "anthropic":
        return get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
    if ref.provider == "ollama":
        return get("OLLAMA_HOST") or OLLAMA_HOST
    raise ConfigError(f"model provider {ref.provider!r} is not supported: use {_SUPPORTED}")


_LOOPBACK = ("localhost", "::1", "0.0.0.0")


def is_local(ref: ModelRef, env: Mapping[str, str]) -> bool:
    """Whether a recap written by ``ref`` stays on this machine: the offline engine, or a model
    server on a loopback address (a local Ollama, an OpenAI-compatible server on localhost)."""
    if ref == OFFLINE:
        return True
    try:
        url = endpoint(ref, env)
    except (ConfigError, ValueError):
        return False
    host = urlsplit(url if "://" in url else f"http://{url}").hostname or ""
    return host in _LOOPBACK or host.endswith(".localhost") or host.startswith("127.")


def make_provider(ref: ModelRef, env: Mapping[str, str]) -> Provider:
    """Build the provider for ``ref`` with keys and URLs from ``env``.

    The offline engine is not a provider (it lives elsewhere), so OFFLINE raises ValueError.
    """
    url = endpoint(ref, env)
    if ref.provider == "ollama":
        return OllamaProvider(ref, host=url)
    if ref.provider == "anthropic":
        key = env.get("ANTHROPIC_API_KEY", "").strip()
        return AnthropicProvider(ref, api_key=key or None, base_url=url)
    # OpenAI and OpenRouter speak the same wire format, each with its own key.
    name = "OPENROUTER_API_KEY" if ref.provider == "openrouter" else "OPENAI_API_KEY"
    return OpenAIProvider(ref, api_key=env.get(name, "").strip() or None, base_url=url)
