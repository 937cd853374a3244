"""A dry run: exactly the request a recap would send, and to whom, sending nothing.

``%recap --dry-run`` and ``jupyter recap NOTEBOOK --dry-run`` print it, so a person can read what
leaves the machine before letting automatic recaps run for a month: the system prompt and the
user message after redaction, their size in characters and estimated tokens, and the model that
would get them (or that nothing would be sent, when the offline engine writes the recap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..record.transcript import Transcript
from ..stores.framing import NO_FRAMING, Framing
from ..textutil import printable
from .context import build_context
from .models import has_credentials
from .prices import estimate_tokens
from .prompt import SYSTEM_PROMPT, user_message
from .providers.base import OFFLINE

if TYPE_CHECKING:
    from ..settings import Recap


@dataclass(frozen=True)
class RequestPreview:
    """The request one recap would send now."""

    model: str | None
    """The model that would receive it; None when nothing would be sent."""
    why: str
    """How that model was chosen (the same line ``%recap status`` shows)."""
    system: str
    user: str

    @property
    def chars(self) -> int:
        return len(self.system) + len(self.user)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.system) + estimate_tokens(self.user)

    def summary(self) -> str:
        """One line: where the request would go and how big it is."""
        size = f"{self.chars:,} characters, about {self.tokens:,} tokens"
        if self.model is None:
            return f"dry run: nothing would be sent ({self.why}); the request would be {size}"
        return f"dry run: nothing was sent; {self.model} would get {size}"

    def render(self) -> str:
        """The whole request as a person reads it, inert (the transcript is anyone's text)."""
        parts = [
            self.summary(),
            f"model: {self.why}",
            f"--- system prompt ({len(self.system):,} characters) ---",
            self.system,
            f"--- user message ({len(self.user):,} characters) ---",
            self.user,
        ]
        return printable("\n".join(parts))

    def to_dict(self) -> dict[str, object]:
        return {
            "dry_run": True,
            "model": self.model,
            "why": self.why,
            "system": self.system,
            "user": self.user,
            "chars": self.chars,
            "tokens_estimate": self.tokens,
        }


def preview_request(
    transcript: Transcript,
    *,
    settings: Recap,
    env: Mapping[str, str],
    model: str | None = None,
    framing: Framing = NO_FRAMING,
    context: str | None = None,
) -> RequestPreview | None:
    """The request ``%recap`` (with ``model``) would send now, or None when there is nothing to
    recap yet. Raises ConfigError for a model id that cannot be used at all."""
    from .service import resolve

    if context is None:
        cap = int(settings.max_context_chars)
        context = build_context(transcript, max_chars=cap, extras=framing.extras, env=env)
    if not context:
        return None
    resolution = resolve(settings, override=model, active_model=transcript.active_model, env=env)
    # The same walk as a draft: the first candidate it would call, skipping those without
    # credentials; reaching the offline engine first means no call at all.
    target = next(
        (ref for ref in resolution.candidates if ref == OFFLINE or has_credentials(ref, env)),
        OFFLINE,
    )
    return RequestPreview(
        None if target == OFFLINE else target.id,
        resolution.why,
        SYSTEM_PROMPT,
        user_message(context),
    )
