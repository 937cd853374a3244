"""Remove secrets (credentials) and hidden reasoning from text bound for a model or a file.

What counts as a secret, and what of it is kept:

- well-known key shapes (OpenAI/Anthropic ``sk-…``, Stripe ``sk_live_…``, GitHub ``ghp_…``,
  GitLab ``glpat-…``, Slack ``xoxb-…``, AWS ``AKIA…``, Google ``AIza…`` / ``ya29.…``, Hugging
  Face ``hf_…``, npm ``npm_…``, PyPI ``pypi-…``, JWTs, …): the whole token goes;
- ``scheme://user:password@host`` URLs (databases, brokers, anything): the password goes, the
  scheme, user and host stay;
- PEM private-key blocks: everything after the ``BEGIN`` line goes, also when the ``END`` line
  is missing;
- labelled values — ``password=…``, ``Pwd=…;``, ``"api_key": "…"``, ``client_secret: …``,
  ``AccountKey=…``, ``?sig=…``, ``Authorization: Basic …``, ``Bearer …``, ``--token …``,
  ``<password>…</password>`` — in env files, JSON, YAML, connection strings, URLs and Python
  keyword arguments: the label stays, the value goes;
- Slack and Discord webhook URLs: the path after the host goes;
- the exact values of this process's secret-looking environment variables.

Ordinary notebook text survives: code that *computes* a secret (``token = tokenizer(x)``,
``password=os.environ["PW"]``, ``api_key=api_key``), ``None``/``True``-style values, type
annotations, and bare hex strings such as git SHAs, digests and UUIDs, which are identifiers a
recap needs ("fixed in 3f2a1b9") rather than credentials. Labels whose keyword is weak
(``sort_key``, ``signature``, ``Bearer`` in prose) are redacted only when the value looks random.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

REDACTED = "[redacted]"

# Characters that never occur inside the secret part of any shape below (except inside a
# quoted value, a private-key block or an XML element, which are redacted up to the end of the
# text when they do not close). A text cut at one of them therefore never splits a secret into
# a piece that matches and a piece that does not: see :meth:`Redactor.head`.
_DELIMITERS = " \t\n\r\"'<>`"
_VALUE = r"[^\s\"'`,;&\\<>]"  # an unquoted value: up to a delimiter, a separator or a backslash

# Keywords that make a label strong anywhere in it (``db_password``, ``clientSecret``).
_STRONG = (
    r"(?i:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key|"
    r"private[_\-]?key|accountkey|sharedaccesskey|credentials?)"
)

# Every pattern starts with a literal character, so that the regex engine skips ahead to where
# a match can start, and the whole is cheap on ordinary text: shapes marked by something rare
# (``://``, ``PRIVATE KEY``, ``authorization`` …) run only on a text that holds their mark;
# token shapes are one pattern; labelled values are found by their keyword in a lower-cased
# copy of the text.

# Marked shapes: (branch, its marks in lower case). Each branch is one named group
# (``m.lastgroup``); its ``*_head`` group is what the replacement keeps.
_MARKED = (
    # A PEM private key: everything after the BEGIN line, through END or to the end of text.
    (
        r"(?P<pem>(?P<pem_head>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
        r"(?s:.*?(?P<pem_end>-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)|.*))",
        ("private key",),
    ),
    # scheme://user:password@host: the password may hold '@' and ':', the last '@' ends it.
    (
        r"(?P<url>(?P<url_head>://[^\s:/?#\"'<>`\[\]]*:)[^\s/?#\"'<>`]+@)",
        ("://",),
    ),
    # Webhook URLs carry their secret in the path.
    (
        r"(?P<hook>(?P<hook_head>hooks\.slack\.com/(?:services|workflows|triggers)/|"
        r"discord(?:app)?\.com/api/webhooks/)[A-Za-z0-9_/\-]+)",
        ("hooks.slack", "discord"),
    ),
    # Authorization headers, whatever the scheme (Basic credentials can be short).
    (
        r"(?P<auth>(?P<auth_head>(?i:proxy-authorization|authorization)(?:\\?[\"'])?[ \t]*"
        r"[:=][ \t]*(?:\\?[\"'])?(?:(?i:basic|bearer|token|digest|negotiate|api-?key)[ \t]+)?)"
        + _VALUE
        + r"{3,})",
        ("authorization",),
    ),
    (
        r"(?P<bearer>(?P<bearer_head>(?:(?<!\w)|(?<=\\[ntr]))(?i:bearer)[ \t]+)"
        r"[A-Za-z0-9_\-.~+/]{8,}=*)",
        ("bearer",),
    ),
    (r"(?P<xml>(?P<xml_head><[\w:.\-]*" + _STRONG + r">)[^<]+(?=<|\Z))", ("<",)),
    # Command-line flags: --password hunter2, --api-key sk-… (the value is not the next flag).
    (r"(?P<flag>(?P<flag_head>--[\w\-]*" + _STRONG + r"[ \t]+)(?!-)" + _VALUE + r"+)", ("--",)),
    (
        r"(?P<curl>(?P<curl_head>-(?:(?<![\w\-].)|(?<=\\[ntr].))(?:u|-user)[ \t]+[^\s:\"'`]+:)"
        + _VALUE
        + "+)",
        ("-u",),
    ),
)


# Every pattern of this module is compiled on first use, not at import: ``%load_ext`` imports
# this module, and the first text to redact may come much later, or never.
@functools.cache
def _marked_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    return tuple((re.compile(branch), marks) for branch, marks in _MARKED)


def _replace_marked(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind == "url":
        return match.group("url_head") + REDACTED + "@"
    if kind == "bearer" and not _looks_random(match.group(0)[len(match.group("bearer_head")) :]):
        return match.group(0)  # "bearer authentication" in prose
    if kind == "pem":  # the END line stays, so that a second pass finds the same block
        end = match.group("pem_end")
        return match.group("pem_head") + " " + REDACTED + (" " + end if end else "")
    return match.group(f"{kind}_head") + REDACTED


# Token shapes. Every alternative starts with a literal character followed by ``_AFTER_WORD``,
# a look back at the character before it: a word boundary that does not hide the literal
# first character from the regex engine. An escaped line break or tab (``\n`` in JSON text)
# counts as a boundary too.
_AFTER_WORD = r"(?:(?<!\w.)|(?<=\\[ntr].))"
_TOKEN_SHAPES = (
    r"sk-[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, OpenRouter …: must look random (sk-learn-…)
    r"rk-[A-Za-z0-9_\-]{16,}",
    r"pk-[A-Za-z0-9_\-]{16,}",
    r"sk_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe
    r"rk_(?:live|test)_[A-Za-z0-9]{10,}",
    r"whsec_[A-Za-z0-9]{16,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-[A-Za-z0-9_\-]{16,}",  # GitLab
    r"xox[abposre]-[A-Za-z0-9\-]{10,}",  # Slack
    r"xapp-[A-Za-z0-9\-]{10,}",
    r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}",  # AWS access key ids
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API keys, OAuth tokens and client secrets
    r"ya29\.[0-9A-Za-z_\-]{20,}",
    r"GOCSPX-[A-Za-z0-9_\-]{20,}",
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"npm_[A-Za-z0-9]{30,}",
    r"pypi-[A-Za-z0-9_\-]{16,}",
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"dop_v1_[a-f0-9]{40,}",  # DigitalOcean
    r"dapi[0-9a-f]{32}",  # Databricks
    r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",  # Shopify
    r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*",  # JWTs (unsigned too)
)


@functools.cache
def _tokens() -> re.Pattern[str]:
    return re.compile("|".join(shape[0] + _AFTER_WORD + shape[1:] for shape in _TOKEN_SHAPES))


def _replace_token(match: re.Match[str]) -> str:
    token = match.group(0)
    if token[:3] in ("sk-", "rk-", "pk-") and not _looks_random(token[3:]):
        return token  # sk-learn-compatible-estimators
    return REDACTED


# Labelled values: a keyword that ends a label, a separator, then the value. Found in a
# lower-cased copy of the text; the checks that need case or context are in :func:`_is_label`.
@functools.cache
def _label() -> re.Pattern[str]:
    return re.compile(
        r"(?P<key>api[_\-]?key|access[_\-]?key|private[_\-]?key|accountkey|sharedaccesskey|"
        r"password|passwd|passphrase|secret|token|credentials?|signature|key|pwd|pass|pw|sig)"
        r"(?:\\?[\"'])?[ \t]*(?:=>|==?|:=|:)[ \t]*"
    )


@functools.cache
def _label_value() -> re.Pattern[str]:
    return re.compile(
        r"(?P<quote>\\?[\"'])(?P<quoted>[^\"'\n]+?)(?=\\?[\"']|\Z)|(?P<bare>" + _VALUE + "+)"
    )


_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "pw"})
_WEAK_WORDS = frozenset({"key", "sig", "signature"})


# Values that are not secrets but code or placeholders: ``os.environ[``, ``get_key()``,
# ``secrets.token_hex(32``, ``cfg.db.password``, ``None``, ``str`` (an annotation),
# ``<your-key>``, ``[redacted]``. An unquoted value is code only when all of it reads as code:
# a call or a subscript, or a dotted name that does not look random (``a9f3e1c0.Then`` is a
# key at the end of a sentence).
@functools.cache
def _call() -> re.Pattern[str]:
    return re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\([\w.,=]*\)?|\[)")


@functools.cache
def _dotted() -> re.Pattern[str]:
    return re.compile(r"(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*")


@functools.cache
def _variable() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z_]\w*")


_NOT_SECRET = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "str", "bytes", "int", "optional"}
    | {"secretstr", "any", "required", REDACTED, "***", "..."}
)


@functools.cache
def _label_reversed() -> re.Pattern[str]:
    return re.compile(r"[\w.\-]*")  # the label before a keyword, read backwards


def _looks_random(value: str) -> bool:
    """Whether ``value`` reads like a generated credential rather than a word or a name."""
    if len(value) < 8:
        return False
    alpha = any(c.isalpha() for c in value)
    if alpha and any(c.isdigit() for c in value):
        return True
    if len(value) < 16:
        return False
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed or (alpha and any(c in "+/=" for c in value))


def _is_label(text: str, start: int, key: str) -> str | None:
    """The whole label ending in the keyword ``key`` at ``start``, or None if it is no label.

    Weak keywords need a separator or a camel-case hump before them (``sort_key``,
    ``accessKey``, ``DB_PASS``, ``&sig=``), so that ``monkey`` or ``bypass`` are not labels.
    """
    before = text[max(0, start - 64) : start]
    label = _label_reversed().match(before[::-1]).group(0)[::-1]  # type: ignore[union-attr]
    if before[: len(before) - len(label)].endswith("/"):
        return None  # a path (/etc/passwd: No such file), not a label
    prev = before[-1:]
    if before[-2:] in ("\\n", "\\t", "\\r"):
        prev = " "  # an escaped line break or tab in JSON text: a boundary
    if key == "key":
        camel = text[start] == "K" and prev.islower()
        if not (camel or (prev in ("_", ".", "-") and before[-2:-1].isalnum())):
            return None
    elif key in ("pwd", "pass", "pw"):
        if prev.isalnum():
            return None
    elif key == "sig" and prev not in ("?", "&", ";"):
        return None
    return label + key


def _is_secret(key: str, label: str, value: str, quoted: bool) -> bool:
    """Whether the value after a label is to be redacted (see the module docstring)."""
    if not quoted:
        if value.lower() in _NOT_SECRET or _call().fullmatch(value):
            return False
        if _dotted().fullmatch(value) and not any(map(_looks_random, value.split("."))):
            return False
        if _variable().fullmatch(value) and value.lower().endswith(
            ("password", "passwd", "pwd", "pass", "token", "secret", "key", "credentials")
        ):
            return False  # password=password: a variable of the same name, not its value
    elif value.startswith("<") and value.endswith(">"):
        return False  # a placeholder (<your-key>) or a model's special token (<|endoftext|>)
    if key in _PASSWORD_WORDS:
        return bool(value)  # passwords can be short: Pwd=x7!;
    if key not in _WEAK_WORDS:
        return len(value) >= 8
    if any(word in label for word in ("secret", "private", "access", "api", "account")):
        return len(value) >= 8  # aws_secret_access_key, storage_account_key …
    return _looks_random(value)


def _lower(text: str) -> str:
    """``text`` in lower case, character for character (so that offsets stay valid)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters lower to two characters
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered


def _redact_labelled(text: str, lowered: str) -> str:
    out: list[str] = []
    done = 0
    for hint in _label().finditer(lowered):
        start = hint.start()
        if start < done:
            continue  # inside a value already redacted
        key = hint.group("key")
        label = _is_label(text, start, key)
        value = _label_value().match(text, hint.end()) if label is not None else None
        if label is None or value is None or text.startswith(REDACTED, value.start()):
            continue  # no label, no value, or one redacted already (by a store, say)
        if value.group("quoted") is not None:
            begin, end = value.span("quoted")
        else:  # the closing brackets of a call or a literal stay: f(password=[redacted])
            begin = value.start()
            end = begin + len(value.group("bare").rstrip(")]}"))
        if _is_secret(key, label.lower(), text[begin:end], value.group("quoted") is not None):
            out += (text[done:begin], REDACTED)
            done = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def redact_shapes(text: str) -> str:
    """``text`` with the secrets recognisable by their shape alone (no environment) replaced:
    for text about to be taken apart, where a piece of a secret (a line of a private key) would
    no longer look like one."""
    return _redact_shapes(text)


def _redact_shapes(text: str) -> str:
    lowered = _lower(text)
    original = text
    for pattern, marks in _marked_patterns():
        for mark in marks:
            if mark in lowered:
                text = pattern.sub(_replace_marked, text)
                break
    text = _tokens().sub(_replace_token, text)
    return _redact_labelled(text, lowered if text == original else _lower(text))


# Environment variables whose values must never leave the kernel even when they have no
# recognisable shape (a self-hosted gateway's password, say). ``PWD`` is the working directory.
@functools.cache
def _secret_env() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|(?:^|_)PASS(?:$|_)|_PWD$)"
    )


def _env_secrets(env: Mapping[str, str]) -> list[str]:
    values = {v for k, v in env.items() if _secret_env().search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


class Redactor:
    """Replaces credentials with ``[redacted]``; build one per context, call it per text.

    Covers the shapes listed in this module's docstring and the exact values of the
    secret-looking environment variables of ``env`` (default: this process's). Idempotent:
    redacting redacted text changes nothing.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env_values = _env_secrets(os.environ if env is None else env)

    def _env(self, text: str) -> str:
        for secret in self._env_values:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def __call__(self, text: str) -> str:
        if not text:
            return text
        return _redact_shapes(self._env(text))

    def head(self, text: str, size: int) -> tuple[str, bool]:
        """The first ``size`` characters of ``text`` or about that many, redacted; and whether
        it was cut.

        For callers that show only the start of a long text: the patterns run over a head
        instead of all of it. The cut is never inside a secret: it goes forward to the next
        delimiter (whitespace or a quote). Text without one there (Chinese or Japanese, a run
        of emoji, a minified blob) is redacted over :data:`CUT_MARGIN` characters past the cut
        and then cut: a secret across the cut is whole in what is redacted, and the edge of
        that window, where a secret may be cut in two, lies far past what is kept (see
        :func:`_cut_redacted`). Environment values, which may hold spaces, are replaced in the
        whole text first (a plain search).
        """
        text = self._env(text)
        if len(text) <= size:
            return (_redact_shapes(text) if text else text), False
        match = _to_delimiter().match(text, size, 2 * size)
        end = match.end() if match else size
        if end < len(text) and text[end] not in _DELIMITERS:
            return _cut_redacted(text, size)
        return _redact_shapes(text[:end]), end < len(text)


def _cut_redacted(text: str, size: int) -> tuple[str, bool]:
    """At most ``size`` characters of ``text`` (longer than that), redacted before the cut.

    Redacted over a window of two :data:`CUT_MARGIN` past the cut, the text keeps at most what
    lies a whole :data:`CUT_MARGIN` before the window's end: even when redactions shortened the
    window (a long token becomes ``[redacted]``), what is kept stops a margin short of its edge,
    where a secret cut in two by the window might no longer match its pattern. When redactions
    left less than that (a private key without its END line takes all after it), the head ends
    at the last delimiter instead.
    """
    window = min(len(text), size + 2 * CUT_MARGIN)
    redacted = _redact_shapes(text[:window])
    if window == len(text):
        return redacted[:size], len(redacted) > size
    keep = min(size, len(redacted) - CUT_MARGIN)
    if keep <= 0:
        keep = max(0, *(redacted.rfind(c, 0, size) for c in _DELIMITERS))
    return redacted[:keep], True


@functools.cache
def _to_delimiter() -> re.Pattern[str]:
    return re.compile(f"[^{re.escape(_DELIMITERS)}]*")


#: How far past a cut redaction looks before the cut is made: further than the longest secret
#: that is not redacted to the end of the text when it does not close (the PEM block of a
#: 4096-bit RSA key is about 3,300 characters).
CUT_MARGIN = 4096


def redact_ends(
    text: str, head: int, tail: int, env: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The first ``head`` and the last ``tail`` characters of ``text``, redacted before the cut.

    Cutting first would leave the piece of a secret cut in two that no pattern recognises
    (the tail of a token without its prefix); each end is redacted with :data:`CUT_MARGIN`
    characters beyond the cut, then cut.
    """
    clean = Redactor(env)
    first = clean(text[: head + CUT_MARGIN])[:head] if head > 0 else ""
    last = clean(text[-(tail + CUT_MARGIN) :])[-tail:] if tail > 0 else ""
    return first, last


@functools.cache
def _think() -> re.Pattern[str]:
    return re.compile(r"(?is)<(think|thinking|reasoning)>.*?(?:</\1>|\Z)")


def strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>`` style blocks (an unclosed one runs to the end)."""
    if "<" not in text:
        return text
    return _think().sub("", text)
