"""What the three wire formats share: one JSON POST, then text, stop reason and token counts."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...errors import ProviderBadResponse
from .base import CancelToken, Completion, CompletionRequest, ModelRef
from .transport import post_json


class Answer(NamedTuple):
    """The parts of a provider's JSON answer we use; ``text`` is None when there is none."""

    text: str | None
    stop: str | None
    tokens_in: int
    tokens_out: int


class JSONChatProvider:
    """Base of the HTTP providers: subclasses say where to POST, what to send, how to read."""

    #: The answer field that explains an empty answer, named in the error message.
    stop_field = "stop_reason"

    def __init__(self, ref: ModelRef) -> None:
        self._ref = ref

    @property
    def ref(self) -> ModelRef:
        """Which provider and model this is."""
        return self._ref

    def endpoint(self) -> str:
        """The URL to POST to."""
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        """Request headers (credentials only when there are some)."""
        return {"content-type": "application/json"}

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        raise NotImplementedError

    def parse(self, data: dict[str, Any]) -> Answer:
        """Read the answer out of the JSON object the server sent."""
        raise NotImplementedError

    def complete(self, request: CompletionRequest, cancel: CancelToken | None = None) -> Completion:
        """Send ``request`` and return the answer; a wordless answer is ProviderBadResponse."""
        data = post_json(
            self.endpoint(),
            headers=self.headers(),
            body=self.request_body(request),
            timeout=request.timeout,
            cancel=cancel,
            provider_id=self._ref.id,
        )
        answer = self.parse(data)
        if answer.text is None:
            why = f" ({self.stop_field} {answer.stop})" if answer.stop else ""
            raise ProviderBadResponse(
                f"{self._ref.provider} answer has no text{why}", provider=self._ref.id
            )
        return Completion(answer.text.strip(), answer.tokens_in, answer.tokens_out, answer.stop)


class KeyedProvider(JSONChatProvider):
    """A hosted API: a base URL (``default_base_url`` unless given) and an optional key."""

    default_base_url = ""

    def __init__(self, ref: ModelRef, *, api_key: str | None, base_url: str = "") -> None:
        super().__init__(ref)
        self._api_key = api_key or None
        self._base_url = (base_url or self.default_base_url).rstrip("/")


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (servers omit or mangle fields)."""
    return value if isinstance(value, dict) else {}


def as_str(value: object) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def token_count(value: object) -> int:
    """A token count from a usage block; anything missing or odd counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def text_or_none(value: object) -> str | None:
    """``value`` if it is a string with some non-blank text, else None."""
    return value if isinstance(value, str) and value.strip() else None
