"""Remove secrets (API keys, bearer tokens) and hidden reasoning from text bound for a model."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

REDACTED = "[redacted]"

# Shapes of credentials that commonly end up in agent transcripts (pasted keys, printed headers,
# env dumps). Each pattern keeps its label and drops only the secret part.
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?:sk|rk|pk)-(?:ant-|proj-|or-v1-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{5,}"),
)
_LABELLED = re.compile(
    r"(?i)(\bbearer\s+|\bauthorization\s*[:=]\s*(?:bearer\s+|token\s+|basic\s+)?|"
    r"\b[\w\-]*(?:api[_\-]?key|secret|token|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
    r"([^\s\"',;]{8,})"
)
_THINK = re.compile(r"(?is)<(think|thinking|reasoning)>.*?(?:</\1>|\Z)")

# Environment variables whose values must never leave the kernel even when they have no
# recognisable shape (a self-hosted gateway's password, say).
_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")


def _env_secrets(env: Mapping[str, str]) -> list[str]:
    values = {v for k, v in env.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


class Redactor:
    """Replaces credentials with ``[redacted]``; build one per context, call it per text.

    Covers well-known key shapes, ``Bearer …`` / ``api_key=…`` style assignments, and the exact
    values of secret-looking environment variables of this process.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env_values = _env_secrets(os.environ if env is None else env)

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for secret in self._env_values:
            if secret in text:
                text = text.replace(secret, REDACTED)
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(REDACTED, text)
        return _LABELLED.sub(lambda m: m.group(1) + REDACTED, text)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """Replace credentials in ``text`` with ``[redacted]`` (see :class:`Redactor`)."""
    return Redactor(env)(text)


def strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>`` style blocks (an unclosed one runs to the end)."""
    if "<" not in text:
        return text
    return _THINK.sub("", text)
