"""The GenAI semantic conventions, decoded: the messages and attributes of one span.

What :mod:`.genai_tracker` reads from a span, without any state of its own. Message content is
read from ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON on the span, or
structured on a ``gen_ai.client.inference.operation.details`` log event), the older
``gen_ai.prompt`` / ``gen_ai.completion`` attributes (also indexed, ``gen_ai.prompt.0.content``)
and the older per-message events (``gen_ai.user.message``, ``gen_ai.choice`` …) on the span or
as log records. The span attributes read here are the model (``gen_ai.provider.name`` /
``gen_ai.system`` and ``gen_ai.request.model``), the agent's name and the error a span ended
with. Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Log / span event names that carry message content.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LEGACY_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "choice",
}


# -- messages ---------------------------------------------------------------------------------


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: Any


@dataclass
class ToolResult:
    id: str
    name: str
    result: Any


@dataclass
class Message:
    """One message of a conversation, reduced to what a transcript needs."""

    role: str
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)

    def key(self) -> tuple[Any, ...]:
        """What makes two messages the same for continuation checks."""
        return (
            self.role,
            self.text.strip(),
            tuple(call.id or call.name for call in self.calls),
            tuple(result.id for result in self.results),
        )


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            with contextlib.suppress(ValueError):
                return json.loads(text)
    return value


def _text_of(content: Any) -> str:
    """The text of an OpenAI-style ``content`` (a string or a list of parts)."""
    content = _loads(content)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        for key in ("text", "content"):
            if isinstance(content.get(key), str):
                return str(content[key])
        return ""
    if isinstance(content, (list, tuple)):
        texts = [_text_of(part) for part in content]
        return "\n".join(text for text in texts if text)
    return str(content)


def _tool_call(data: Mapping[str, Any]) -> ToolCall:
    function = data.get("function")
    if isinstance(function, Mapping):  # OpenAI: {"id", "function": {"name", "arguments"}}
        return ToolCall(
            str(data.get("id") or ""), str(function.get("name") or ""), function.get("arguments")
        )
    arguments = data.get("arguments", data.get("input", data.get("args")))
    return ToolCall(str(data.get("id") or ""), str(data.get("name") or ""), arguments)


def message(data: Any, role: str | None = None) -> Message | None:
    """One message in any of the shapes GenAI instrumentations write."""
    data = _loads(data)
    if isinstance(data, str):
        return Message(role or "user", data)
    if not isinstance(data, Mapping):
        return None
    if role == "choice" or isinstance(data.get("message"), Mapping):
        inner = data.get("message")
        data = inner if isinstance(inner, Mapping) else data
        role = "assistant"
    found = Message(str(data.get("role") or role or "user"))
    parts = data.get("parts")
    if isinstance(parts, (list, tuple)):  # the current conventions
        texts = []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content") or ""))
            elif kind == "tool_call":
                found.calls.append(_tool_call(part))
            elif kind == "tool_call_response":
                result = part.get("response", part.get("result"))
                found.results.append(
                    ToolResult(str(part.get("id") or ""), str(part.get("name") or ""), result)
                )
        found.text = "\n".join(text for text in texts if text)
        return found
    # OpenAI-style messages and the older per-message events
    found.text = _text_of(data.get("content"))
    calls = _loads(data.get("tool_calls"))
    if isinstance(calls, (list, tuple)):
        found.calls = [_tool_call(call) for call in calls if isinstance(call, Mapping)]
    if found.role == "tool":
        call_id = str(data.get("tool_call_id") or data.get("id") or "")
        found.results.append(ToolResult(call_id, str(data.get("name") or ""), found.text))
        found.text = ""
    return found


def messages(value: Any) -> list[Message]:
    """A list of messages from a ``gen_ai.*.messages`` value (JSON text or structured)."""
    value = _loads(value)
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, str):
        return [Message("user", value)]
    if not isinstance(value, (list, tuple)):
        return []
    found = (message(item) for item in value)
    return [item for item in found if item is not None]


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
    """``gen_ai.prompt.0.role`` / ``.content`` / ``.tool_calls.0.name`` … style attributes."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        parts = key[len(prefix) + 1 :].split(".")
        if not parts[0].isdigit():
            continue
        row = rows.setdefault(int(parts[0]), {})
        if len(parts) == 2:
            row[parts[1]] = value
        elif len(parts) == 4 and parts[1] == "tool_calls" and parts[2].isdigit():
            call = row.setdefault("_calls", {}).setdefault(int(parts[2]), {})
            call[parts[3]] = value
    found = []
    for index in sorted(rows):
        row = rows[index]
        calls = row.pop("_calls", {})
        item = message(row, "assistant" if prefix.endswith("completion") else None)
        if item is None:
            continue
        item.calls.extend(_tool_call(calls[i]) for i in sorted(calls))
        found.append(item)
    return found


@dataclass
class Content:
    """The messages one model span saw, from wherever the instrumentation put them."""

    input: list[Message] = field(default_factory=list)
    output: list[Message] = field(default_factory=list)

    def add_attributes(self, attributes: Mapping[str, Any], *, inputs: bool = True) -> None:
        """Read the messages from span attributes (``inputs=False``: the answer only)."""
        if inputs and not self.input:
            for key in ("gen_ai.input.messages", "gen_ai.prompt"):
                if key in attributes:
                    self.input = messages(attributes[key])
                    break
            else:
                self.input = _indexed(attributes, "gen_ai.prompt")
        if not self.output:
            for key in ("gen_ai.output.messages", "gen_ai.completion"):
                if key in attributes:
                    self.output = [_as_assistant(item) for item in messages(attributes[key])]
                    break
            else:
                self.output = _indexed(attributes, "gen_ai.completion")

    def add_event(self, name: str, attributes: Mapping[str, Any], body: Any = None) -> None:
        """A span event or log record (structured details, or one legacy message)."""
        if name == DETAILS_EVENT:
            self.add_attributes(attributes)
        elif name == "gen_ai.content.prompt" and not self.input:
            self.input = messages(attributes.get("gen_ai.prompt"))
        elif name == "gen_ai.content.completion" and not self.output:
            self.output = [_as_assistant(m) for m in messages(attributes.get("gen_ai.completion"))]
        elif name in LEGACY_EVENTS:
            role = LEGACY_EVENTS[name]
            data = body if body is not None else dict(attributes)
            if isinstance(data, Mapping) and "content" not in data and "message" not in data:
                for key in ("gen_ai.event.content", "event.content"):
                    if key in data:
                        data = _loads(data[key])
                        break
            item = message(data, role)
            if item is None:
                return
            if role == "choice":
                self.output.append(_as_assistant(item))
            else:
                self.input.append(item)

    @property
    def prompt(self) -> str:
        """The text of the last user message sent."""
        for item in reversed(self.input):
            if item.role == "user" and item.text.strip():
                return item.text
        return ""

    @property
    def reply(self) -> str:
        return "\n".join(item.text for item in self.output if item.text.strip())

    @property
    def calls(self) -> list[ToolCall]:
        return [call for item in self.output for call in item.calls]


def _as_assistant(item: Message) -> Message:
    if item.role in ("user", "choice"):
        item.role = "assistant"
    return item


# -- span attributes ------------------------------------------------------------------------


def model_id(attributes: Mapping[str, Any], model: Any = None, *, bare: bool = True) -> str | None:
    """``provider:model`` in our form (``openai:gpt-4o-mini``), if the span names a model."""
    name = (
        model or attributes.get("gen_ai.request.model") or attributes.get("gen_ai.response.model")
    )
    if not name:
        return None
    name = str(name)
    provider = str(
        attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system") or ""
    ).lower()
    if not provider:
        return name if bare else None  # an agent span's hint: its model calls will tell
    if ":" in name and not name.startswith("http"):
        return name
    if "openai" in provider:  # openai, azure.ai.openai: an OpenAI-compatible client
        provider = "openai"
    elif "anthropic" in provider:
        provider = "anthropic"
    return f"{provider}:{name}"


def span_error(span: Any) -> str | None:
    """The error a span ended with (its exception event, else its error status), or None."""
    status = getattr(span, "status", None)
    failed = getattr(getattr(status, "status_code", None), "name", "") == "ERROR"
    for event in getattr(span, "events", ()) or ():
        if getattr(event, "name", "") == "exception":
            attributes = getattr(event, "attributes", None) or {}
            kind = str(attributes.get("exception.type") or "Exception").rsplit(".", 1)[-1]
            text = str(attributes.get("exception.message") or "").strip()
            return f"{kind}: {text.splitlines()[0]}" if text else kind
    if failed:
        description = str(getattr(status, "description", None) or "").strip()
        return description or "failed"
    return None


def agent_name(attributes: Mapping[str, Any]) -> str | None:
    """The agent a span names (``gen_ai.agent.name``), cut to 200 characters."""
    name = attributes.get("gen_ai.agent.name") or attributes.get("agent_name")
    return str(name)[:200] if name else None


# -- conversations resent whole -------------------------------------------------------------


def new_messages(previous: str | None, current: Any) -> str | None:
    """The messages ``current`` adds after ``previous`` (both JSON lists as text), as a JSON
    list; None when ``current`` does not start with ``previous``'s messages."""
    if not isinstance(previous, str) or not isinstance(current, str):
        return None
    head = previous.rstrip()
    if not head.endswith("]") or len(current) <= len(head):
        return None
    head = head[:-1].rstrip()
    if head == "[" or not current.startswith(head):
        return None
    rest = current[len(head) :].lstrip()
    return "[" + rest[1:] if rest.startswith(",") else None
