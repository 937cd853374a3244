"""No secret a person pastes reaches the model: every common kind, anywhere in any text.

An attack found that most kinds of secret people really paste — database URLs with their
password, AWS secret keys, private-key blocks, connection-string passwords, Stripe, GitLab and
Azure keys — went to the model untouched, and that a secret straddling the point where the
context builder cut a long text reached it nearly whole (as did one straddling the cut of a long
entry when it was recorded). ``%recap compact-memory`` sent notes unredacted. Each kind has an
example below, and the properties generate secrets of every kind, embed them in arbitrary text
(JSON-quoted or not) and check that no piece of one survives, from the redactor alone and from
``build_context`` with the secret at any offset around either cut.

"Survives" means: some 8-character run of the secret's secret part is in the output, and that
run is not in the text around the secret (it could not have come from anywhere else).
Generated secrets contain letters and digits (and passwords a symbol) as generated credentials
do: an all-letter value after a weak label (``sort_key``, ``Bearer`` in prose) is taken for a
word on purpose.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
from fakellm import FakeLLM
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_recap as jr
from jupyter_recap.pipeline.compaction import compact_memory
from jupyter_recap.pipeline.context import (
    ERROR_CHARS,
    FRAMING_HEADER,
    RECENT_HEADER,
    TEXT_CHARS,
    TOOL_RESULT_CHARS,
    build_context,
)
from jupyter_recap.pipeline.context import OMITTED as OMITTED_LINE
from jupyter_recap.pipeline.offline import offline_recap
from jupyter_recap.record.transcript import MAX_ENTRY_CHARS
from jupyter_recap.redact import REDACTED, Redactor
from jupyter_recap.stores.memory import MemoryStore

NO_ENV: dict[str, str] = {}
RUN = 8

# -- one example per kind --------------------------------------------------------------------

# (kind, text, the secret part, what must be kept)
EXAMPLES = [
    (
        "postgresql url",
        "postgresql://admin:pw@db.internal/app",
        ":pw@",
        "postgresql://admin:",
    ),
    (
        "postgres url",
        "DATABASE_URL=postgres://app:S3cr3t!x@10.0.0.5:5432/billing",
        "S3cr3t",
        "@10.0.0.5:5432/billing",
    ),
    (
        "mysql url",
        "mysql://root:hunter2@localhost:3306/shop",
        "hunter2",
        "mysql://root:",
    ),
    (
        "mongodb+srv url",
        "mongodb+srv://etl:Pa55word@cluster0.ab1cd.mongodb.net/db",
        "Pa55word",
        "mongodb+srv://etl:",
    ),
    (
        "redis url without user",
        "redis://:hunter2@cache:6379/0",
        "hunter2",
        "redis://:",
    ),
    (
        "amqp url",
        "amqp://guest:guestpass@rabbit:5672/",
        "guestpass",
        "@rabbit:5672/",
    ),
    (
        "any scheme, '@' in the password",
        "sftp://deploy:p@ss:w0rd@files.example.org/in",
        "p@ss:w0rd",
        "@files.example.org/in",
    ),
    (
        "aws_secret_access_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
        "aws_secret_access_key = ",
    ),
    (
        "AWS_SECRET_ACCESS_KEY=",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "K7MDENG",
        "AWS_SECRET_ACCESS_KEY=",
    ),
    (
        "PEM private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE "
        "KEY-----\nthen",
        "MIIEowIBAAKCAQEA",
        "BEGIN RSA PRIVATE KEY",
    ),
    (
        "PEM private key, END cut off",
        "key.pem:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nBG5vbmUAAAA",
        "b3BlbnNzaC1rZXkt",
        "BEGIN OPENSSH PRIVATE KEY",
    ),
    (
        "ODBC Pwd=",
        "Server=tcp:sql1,1433;Database=crm;Uid=sa;Pwd=x7!;Encrypt=yes",
        "x7!",
        "Uid=sa;Pwd=",
    ),
    (
        "Password= in ADO string",
        "Data Source=db;User ID=app;Password=abc;",
        "abc;",
        "User ID=app;Password=",
    ),
    (
        "passwd:",
        "passwd: s3cr",
        "s3cr",
        "passwd:",
    ),
    (
        "Stripe sk_live",
        "stripe.api_key = 'sk_live_51H8xYzAbCdEfGhIjKlMn0pQ'",
        "51H8xYzAbCdE",
        "stripe.api_key",
    ),
    (
        "Stripe rk_live",
        "rk_live_51H8abcdefghij1234567890",
        "51H8abcdefghij",
        "",
    ),
    (
        "Stripe sk_test",
        "using sk_test_4eC39HqLyjWDarjtT1zdp7dc for now",
        "4eC39HqLyjWD",
        "for now",
    ),
    (
        "GitLab glpat",
        "git clone https://oauth2:glpat-Xy12abcDEF34ghiJK567@gitlab.com/g/p.git",
        "Xy12abcDEF34",
        "@gitlab.com/g/p.git",
    ),
    (
        "Azure AccountKey",
        "DefaultEndpointsProtocol=https;AccountName=acct;"
        "AccountKey=Zm9vYmFy+/YmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
        "YmF6cXV4MTIz",
        "AccountName=acct;AccountKey=",
    ),
    (
        "Azure SharedAccessKey",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=abcDEF123ghiJKL456mno=",
        "abcDEF123ghi",
        "SharedAccessKeyName=Root",
    ),
    (
        "Azure SAS sig=",
        "https://acct.blob.core.windows.net/c/a.csv?sv=2022-11-02&sp=r&sig=q0Zx%2Bk8aZpL3mN7%2FeW1"
        "%3D",
        "q0Zx%2Bk8aZpL3",
        "sv=2022-11-02&sp=r&sig=",
    ),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/T0AB12CDE/B0FG34HIJ/aBcDeFgHiJkLmNoPqRsTuVwX",
        "aBcDeFgHiJkL",
        "hooks.slack.com/services/",
    ),
    (
        "Slack bot token",
        "SLACK=xoxb-123456789012-abcdefABCDEF",
        "123456789012",
        "",
    ),
    (
        "Google OAuth ya29",
        "access token ya29.a0AfH6SMBx1y2z3AbCdEfGhIjKlMnOp",
        "AfH6SMBx1y2z",
        "access token",
    ),
    (
        "Google API key",
        "key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "SyA1b2C3d4E5",
        "",
    ),
    (
        "npm token",
        "//registry/:_authToken=npm_abcdEFGH1234ijklMNOP5678qrstUVWX90yz",
        "abcdEFGH1234",
        "",
    ),
    (
        "PyPI token",
        "TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LWFiY2Q",
        "AgEIcHlwaS5v",
        "TWINE_PASSWORD=",
    ),
    (
        "JWT",
        "cookie: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "dozjgNryP4J3",
        "cookie:",
    ),
    (
        "Authorization: Basic",
        "curl -H 'Authorization: Basic YWRtaW46aHVudGVyMg==' api",
        "YWRtaW46aHVu",
        "Authorization: Basic",
    ),
    (
        "Bearer token",
        "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "9f8e7d6c5b4a",
        "Bearer",
    ),
    (
        "GitHub token",
        "token = 'ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'",
        "AbCdEfGhIjKl",
        "token =",
    ),
    (
        "OpenAI key",
        "OpenAI(api_key='sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t')",
        "Ab3dEf6hIj9k",
        "OpenAI(api_key=",
    ),
    (
        "AWS access key id",
        "AKIAIOSFODNN7EXAMPLE is the id",
        "IOSFODNN7EXA",
        "is the id",
    ),
    (
        "Hugging Face token",
        "login(hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456)",
        "AbCdEfGhIjKl",
        "login(",
    ),
    (
        "JSON *_secret",
        '{"client_secret": "Xq9-w8Ev7_rT6yU5iO4p", "client_id": "app"}',
        "Xq9-w8Ev7_rT",
        '"client_id": "app"',
    ),
    (
        "YAML *_token",
        "refresh_token: 1//0gAbCdEfGhIjKlMnOp",
        "0gAbCdEfGhIj",
        "refresh_token:",
    ),
    (
        "env *_key",
        "export STRIPE_KEY=abc123DEF456ghi789",
        "abc123DEF456",
        "export STRIPE_KEY=",
    ),
    (
        "Python kwarg",
        "psycopg.connect(host=h, user='app', password='hunter2 !')",
        "hunter2",
        "user='app'",
    ),
    (
        "camelCase key",
        "const cfg = { accessKey: 'AbCd1234EfGh5678' }",
        "AbCd1234EfGh",
        "accessKey:",
    ),
    (
        "query ?access_token=",
        "GET /api?access_token=abc123def456ghi789&page=2",
        "abc123def456",
        "&page=2",
    ),
    (
        "XML element",
        "<password>correct horse battery</password>",
        "correct horse",
        "<password>",
    ),
    (
        "CLI flag",
        "mlflow server --password s3cr3t-Value --port 5000",
        "s3cr3t-Value",
        "--port 5000",
    ),
    (
        "curl -u",
        "curl -u admin:Adm1n!Pass https://ci.local/api",
        "Adm1n!Pass",
        "curl -u admin:",
    ),
]


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_each_kind_is_redacted(kind: str, text: str, secret: str, kept: str) -> None:
    out = Redactor(NO_ENV)(text)
    assert secret not in out, out
    assert REDACTED in out and kept in out, out


# Ordinary notebook text: code, tracebacks, prose with identifiers. Hex strings such as git
# SHAs, digests and UUIDs are kept: a recap needs them ("fixed in 3f2a1b9"), and a bare hex
# string has no credential shape.
ORDINARY = [
    "df = pd.read_csv('data/raw/invoices.csv', parse_dates=['created_at'])",
    "df.groupby('region')['amount'].sum().sort_values(ascending=False, key=lambda s: s.abs())",
    "Traceback (most recent call last):\n  File \"<ipython-input-3>\", line 1\nKeyError: 'region'",
    "Fixed in commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a; see PR #42.",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "run_id = 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d'",
    "tokenizer.pad_token = tokenizer.eos_token",
    "inputs = tokenizer(text, max_new_tokens=256, pad_token='<|endoftext|>')",
    "token = tokenizer(text, return_tensors='pt')",
    "password = os.environ['DB_PASSWORD']",
    "api_key = userdata.get('OPENAI_API_KEY')",
    "secret_key = secrets.token_hex(32)",
    "def connect(user: str, password: str = None) -> Connection:",
    "conn = connect(user=user, password=password)",
    "pip install scikit-learn sk-learn-compatible-estimators",
    "The API uses bearer authentication over https://api.example.com/v1/items",
    "sort_key = 'created_at'",
    "cat: /etc/passwd: No such file or directory",
    "See http://localhost:8888/lab/tree/notebooks/analysis.ipynb for the plots.",
    "usage: train.py [--epochs N] [--token-budget N]",
    "monkey = 'abc123def456'; bypass = 'x'",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_survives(text: str) -> None:
    assert Redactor(NO_ENV)(text) == text


def test_the_exact_value_of_a_secret_looking_environment_variable_is_redacted() -> None:
    # No shape gives these away: only the environment does (a gateway's passphrase, a DB
    # password in DB_PASS). PWD is the working directory, not a password.
    env = {
        "MY_GATEWAY_TOKEN": "correct horse battery staple",
        "DB_PASS": "Winter2024",
        "PWD": "/home/ada/project",
    }
    clean = Redactor(env)
    out = clean("ran with correct horse battery staple and Winter2024 in /home/ada/project")
    assert "horse" not in out and "Winter2024" not in out
    assert "/home/ada/project" in out


def test_a_secret_straddling_the_cut_never_reaches_the_model() -> None:
    # The attack: whitespace before a token so that the raw cut falls inside it, too early
    # for the token's pattern to match, while the collapsed text puts the token at the start
    # of what is sent. The first 20 of its 40 characters used to reach the model.
    token = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    t = jr.Transcript()
    t.user(" " * (2 * TEXT_CHARS + 200 - 20) + token + " then more words")
    text = build_context(t, env=NO_ENV)
    assert not _leaked([token], text, "")
    assert "…" in text  # the model is told the prompt was cut


def test_a_secret_cut_where_a_long_entry_is_clipped_never_reaches_the_model() -> None:
    # A long entry keeps its head and tail when it is recorded. Cut there, the token's tail
    # had lost its prefix and with it its shape: 30 of its 40 characters reached the model.
    token = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    tail = (MAX_ENTRY_CHARS - 40) - (MAX_ENTRY_CHARS - 40) // 2
    t = jr.Transcript()
    t.user(" " * 5000 + token + " y" * ((tail - 30) // 2))
    assert not _leaked([token], build_context(t, env=NO_ENV), "")


def test_redaction_is_idempotent_on_the_examples() -> None:
    # The session and memory stores redact what they write; the context builder redacts it
    # again. A second pass must change nothing.
    for _, text, _, _ in EXAMPLES:
        once = Redactor(NO_ENV)(text)
        assert Redactor(NO_ENV)(once) == once


# -- properties --------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
SYMBOLS = "!#$%*+-@^~"
URL_PASSWORD = ALNUM + "!$%*+-@^~.:=_"  # not / ? # (they end the authority), no quotes
PASSWORD = ALNUM + SYMBOLS + ".:=?/_"  # unquoted: no , ; & quotes, brackets or backslash


@dataclass
class Sample:
    """A text holding a secret, the secret parts in it, and the environment it needs."""

    text: str
    secrets: list[str]
    env: dict[str, str] = field(default_factory=dict)


@st.composite
def credential(draw: st.DrawFn, alphabet: str, size: tuple[int, int], symbol: bool = False) -> str:
    """A generated credential: letters and digits (and a symbol) somewhere in it."""
    chars = list(draw(st.text(alphabet, min_size=size[0], max_size=size[1])))
    letters = [c for c in alphabet if c.isalpha()]
    needed = [draw(st.sampled_from(letters)), draw(st.sampled_from(string.digits))]
    if symbol:
        needed.append(draw(st.sampled_from(SYMBOLS)))
    for char in needed:
        chars.insert(draw(st.integers(0, len(chars))), char)
    return "".join(chars)


def one_of(draw: st.DrawFn, *options: str) -> str:
    return draw(st.sampled_from(options))


@st.composite
def db_url(draw: st.DrawFn) -> Sample:
    scheme = one_of(draw, "postgresql", "postgres", "mysql", "mongodb+srv", "redis", "amqp", "sftp")
    user = "" if scheme == "redis" else draw(st.text(ALNUM, min_size=1, max_size=10))
    password = draw(credential(URL_PASSWORD, (8, 30)))
    return Sample(f"{scheme}://{user}:{password}@db.internal:5432/app", [password])


@st.composite
def aws_secret(draw: st.DrawFn) -> Sample:
    secret = draw(credential(B64, (38, 38)))
    shape = one_of(
        draw,
        "aws_secret_access_key = {}",
        "AWS_SECRET_ACCESS_KEY={}",
        '"aws_secret_access_key": "{}"',
        "aws_secret_access_key: {}",
    )
    return Sample(shape.format(secret), [secret])


@st.composite
def pem(draw: st.DrawFn) -> Sample:
    kind = one_of(draw, "RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED ")
    lines = draw(st.lists(credential(B64, (20, 62)), min_size=1, max_size=5))
    end = f"\n-----END {kind}PRIVATE KEY-----" if draw(st.booleans()) else ""
    body = "\n".join(lines)
    return Sample(f"-----BEGIN {kind}PRIVATE KEY-----\n{body}{end}", lines)


@st.composite
def password(draw: st.DrawFn) -> Sample:
    label = one_of(
        draw, "password", "Password", "PASSWORD", "passwd", "pwd", "Pwd", "DB_PASSWORD",
        "db_pass", "passphrase", "admin-password",
    )  # fmt: skip
    sep = one_of(draw, "=", ": ", " = ", ":", " => ", "==")
    quote = one_of(draw, "", '"', "'")
    alphabet = PASSWORD + (" " if quote else "")
    value = draw(credential(alphabet, (6, 30), symbol=True))
    shape = one_of(draw, "{}", "Server=db;Uid=sa;{};Encrypt=yes", '{{"{}"}}')
    if shape == '{{"{}"}}':
        label, sep, quote = label + '"', ": ", '"'
    return Sample(shape.format(f"{label}{sep}{quote}{value}{quote}"), [value])


@st.composite
def labelled(draw: st.DrawFn) -> Sample:
    label = one_of(
        draw, "client_secret", "api_token", "refresh_token", "SERVICE_API_KEY", "stripe_key",
        "encryption_key", "accessKey", "apiKey", "x-api-key", "secret", "AccountKey",
        "SharedAccessKey", "private_key", "credentials",
    )  # fmt: skip
    value = draw(credential(B64URL + "+/=", (14, 48)))
    shape = one_of(
        draw, '"{l}": "{v}"', "{l}: {v}", "{l}={v}", "{l}='{v}'", '{l} = "{v}"', "{l}: '{v}'",
        "Endpoint=x;{l}={v};EntityPath=q",
    )  # fmt: skip
    return Sample(shape.format(l=label, v=value), [value])


@st.composite
def prefixed(draw: st.DrawFn) -> Sample:
    prefix, alphabet, size = draw(
        st.sampled_from(
            [
                ("sk_live_", ALNUM, (24, 60)),
                ("rk_live_", ALNUM, (24, 60)),
                ("sk_test_", ALNUM, (24, 60)),
                ("glpat-", B64URL, (20, 20)),
                ("ghp_", ALNUM, (36, 36)),
                ("github_pat_", ALNUM + "_", (60, 80)),
                ("xoxb-", ALNUM + "-", (30, 50)),
                ("ya29.", B64URL, (40, 120)),
                ("AIza", B64URL, (35, 35)),
                ("npm_", ALNUM, (36, 36)),
                ("pypi-AgEIcHlwaS5vcmc", B64URL, (40, 90)),
                ("hf_", ALNUM, (34, 34)),
                ("sk-proj-", B64URL, (40, 100)),
                ("sk-ant-api03-", B64URL, (80, 95)),
                ("AKIA", string.ascii_uppercase + string.digits, (14, 14)),
            ]
        )
    )
    token = prefix + draw(credential(alphabet, size))
    return Sample(token, [token])


@st.composite
def azure(draw: st.DrawFn) -> Sample:
    key = draw(credential(B64, (40, 86))) + "=="
    if draw(st.booleans()):
        text = (
            "DefaultEndpointsProtocol=https;AccountName=acct;"
            f"AccountKey={key};EndpointSuffix=core.windows.net"
        )
        return Sample(text, [key])
    sig = draw(credential(ALNUM + "%", (38, 60))) + "%3D"
    return Sample(f"https://acct.blob.core.windows.net/c/b.csv?sv=2022-11-02&sig={sig}&sp=r", [sig])


@st.composite
def webhook(draw: st.DrawFn) -> Sample:
    path = "/".join(draw(credential(ALNUM, (9, 24))) for _ in range(3))
    host = one_of(draw, "https://hooks.slack.com/services/", "https://discord.com/api/webhooks/")
    return Sample(host + path, [path])


@st.composite
def jwt(draw: st.DrawFn) -> Sample:
    parts = [draw(credential(B64URL, (12, 60))) for _ in range(3)]
    token = f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}"
    return Sample(token, [token])


@st.composite
def header(draw: st.DrawFn) -> Sample:
    value = draw(credential(B64URL, (16, 60)))
    shape = one_of(
        draw, "Authorization: Basic {}==", "Authorization: Bearer {}", "Bearer {}",
        '"Authorization": "token {}"', "-H 'Proxy-Authorization: Basic {}'",
    )  # fmt: skip
    return Sample(shape.format(value), [value])


@st.composite
def command_line(draw: st.DrawFn) -> Sample:
    value = draw(credential(PASSWORD, (8, 30), symbol=True))
    if value.startswith("-"):
        value = "p" + value  # after a flag, "-…" is the next flag (to the program, too)
    shape = one_of(
        draw, "--password {}", "--api-key {}", "--token={}", "curl -u admin:{} https://x",
        "<password>{}</password>", "<client_secret>{}</client_secret>",
    )  # fmt: skip
    return Sample(shape.format(value), [value])


@st.composite
def env_value(draw: st.DrawFn) -> Sample:
    name = one_of(draw, "MY_GATEWAY_TOKEN", "DB_PASS", "SERVICE_SECRET", "PROXY_PASSWORD")
    value = draw(credential(ALNUM + SYMBOLS + " .,;:/", (8, 40)))
    return Sample(value, [value], {name: value})


KINDS = {
    "db url": db_url(),
    "aws secret": aws_secret(),
    "pem": pem(),
    "password": password(),
    "labelled": labelled(),
    "token shape": prefixed(),
    "azure": azure(),
    "webhook": webhook(),
    "jwt": jwt(),
    "header": header(),
    "command line": command_line(),
    "environment": env_value(),
}

SURROUNDING = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
BEFORE = st.sampled_from([" ", "\n", "\t", "(", "[", "{", ", ", "; ", "> ", "`", "'", '"', ": "])
AFTER = st.sampled_from([" ", "\n", ")", "]", "}", ",", ";", ".", "'", '"', "`", "\t", "<"])


@st.composite
def embedded(draw: st.DrawFn, kind: st.SearchStrategy[Sample]) -> tuple[str, Sample, str]:
    """(text, sample, surrounding): the sample in arbitrary text, maybe JSON-quoted."""
    sample = draw(kind)
    before = draw(SURROUNDING) + draw(BEFORE)
    after = draw(AFTER) + draw(SURROUNDING)
    text = before + sample.text + after
    surrounding = before + _blank(sample) + after
    if draw(st.booleans()):
        text, surrounding = json.dumps(text), json.dumps(surrounding)
    return text, sample, surrounding


def _blank(sample: Sample) -> str:
    text = sample.text
    for secret in sample.secrets:
        text = text.replace(secret, "\0")
    return text


def _leaked(secrets: list[str], output: str, surrounding: str) -> list[str]:
    runs = {s[i : i + RUN] for s in secrets for i in range(len(s) - RUN + 1)}
    context = surrounding + REDACTED
    return sorted(r for r in runs if r in output and r not in context)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_no_generated_secret_survives_the_redactor(kind: str, data: st.DataObject) -> None:
    text, sample, surrounding = data.draw(embedded(KINDS[kind]))
    out = Redactor(sample.env)(text)
    assert not _leaked(sample.secrets, out, surrounding), out
    assert Redactor(sample.env)(out) == out  # idempotent: the stores redact before we do


# Entry kinds, each with its text cap: the builder redacts a head of 2 × cap + 200 characters.
ENTRY_KINDS = {
    "user": TEXT_CHARS,
    "assistant": TEXT_CHARS,
    "tool_result": TOOL_RESULT_CHARS,
    "code error": ERROR_CHARS,
}
# Fillers around the secret: whitespace collapses to nothing (so text from past the raw cut
# lands early in what is sent); a long run without whitespace or quotes makes the cut go back.
FILLERS = st.sampled_from([" ", "\n", " \n\t ", "word ", "x", "a,b;"])
# Where a text is cut: the head the context builder redacts (2 × cap + 200 characters), and
# the head and the tail a long entry keeps when it is recorded (``transcript.clip``).
CUTS = st.sampled_from(["context head", "recorded head", "recorded tail"])
KEEP = MAX_ENTRY_CHARS - 40  # what clip keeps of a longer text: half head, half tail


# A quarter of the profile's examples for each of the 48 pairs of secret and entry kind (1,200
# in all at CI strength): each pair draws from three cuts and six fillers, so every cut is still
# drawn about a hundred times per entry kind; 100 a pair took a twentieth of the suite's CPU.
@pytest.mark.parametrize("entry_kind", ENTRY_KINDS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=max(5, settings().max_examples // 4))
@given(data=st.data())
def test_no_generated_secret_survives_build_context_at_any_offset(
    kind: str, entry_kind: str, data: st.DataObject
) -> None:
    text, sample, surrounding = data.draw(embedded(KINDS[kind]))
    size = len(text)
    cut = data.draw(CUTS)
    if cut == "context head":  # short enough not to be clipped when recorded
        head = 2 * ENTRY_KINDS[entry_kind] + 200
        before = data.draw(st.integers(max(0, head - size - 2), head + 2))
        after = max(0, min(2 * head, MAX_ENTRY_CHARS - before - size))
    elif cut == "recorded head":
        before = data.draw(st.integers(max(0, KEEP // 2 - size - 2), KEEP // 2 + 2))
        after = MAX_ENTRY_CHARS
    else:
        tail = KEEP - KEEP // 2
        before = MAX_ENTRY_CHARS
        after = data.draw(st.integers(max(0, tail - size - 2), tail + 2))
    pattern = data.draw(FILLERS)
    filler = pattern * (MAX_ENTRY_CHARS // len(pattern) + 1)
    body = filler[:before] + text + filler[:after]
    t = jr.Transcript()
    with mock.patch.dict(os.environ, sample.env):  # the kernel's own keys, when it records
        if entry_kind == "user":
            t.user(body)
        else:
            t.user("go on")
            if entry_kind == "assistant":
                t.assistant(body)
            elif entry_kind == "tool_result":
                t.tool_call("run", {"cmd": "cat .env"})
                t.tool_result("run", body)
            else:
                t.code("connect()", error=body)
    out = build_context(t, env=sample.env)
    # The builder's own words ("Recent activity …") are not a leak when a secret spells them.
    own = f"{FRAMING_HEADER} {RECENT_HEADER} {OMITTED_LINE}"
    assert not _leaked(sample.secrets, out, filler + surrounding + own), out
    # The offline engine quotes the same entries (errors by their telling line, steps, asks).
    with mock.patch.dict(os.environ, sample.env):
        recap = offline_recap(t) or ""
    # (It ends its sentences: a period after the surrounding text is its own, not a leak.)
    ends = f"{surrounding}. {surrounding}… "
    assert not _leaked(sample.secrets, recap, filler + ends), recap


# -- %recap compact-memory ---------------------------------------------------------------------


def test_compact_memory_sends_notes_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A note holding the value of a key set later, and notes kept from before notes were
    # redacted on writing, are on disk as they were typed; the merge request must not carry
    # them to the model.
    project = tmp_path / "project"
    project.mkdir()
    store = MemoryStore(project)
    for i in range(61):
        store.remember("fact", f"note number {i}")
    store.remember("command", "the gateway passphrase is tr0ub4dor and 3 more words")
    merged = json.dumps([{"kind": "fact", "text": "notes 0 to 60 say the same"}])
    with FakeLLM(text=merged) as fake:
        monkeypatch.setenv("GATEWAY_SECRET", "tr0ub4dor and 3 more words")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
        result = compact_memory(store, model="openai:gpt-4o-mini")
    (request,) = fake.requests
    sent = json.dumps(request.body)
    assert "tr0ub4dor" not in sent and "more words" not in sent
    assert "the gateway passphrase is [redacted]" in sent
    assert result.changed  # the merge itself still works


# -- the rules at their edges (what mutation testing found untested) ---------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A weak "key" whose label says credential: 8 characters are a secret, 7 are not.
        ("storage_account_key=abcdefgh", "storage_account_key=[redacted]"),
        ("storage_account_key=abcdefg", "storage_account_key=abcdefg"),
        ("aws_secret_key=abcdefgh", "aws_secret_key=[redacted]"),
        ("gpg_private_key=abcdefgh", "gpg_private_key=[redacted]"),
        ("s3_access_key=abcdefgh", "s3_access_key=[redacted]"),
        ("openai_api_key=abcdefgh", "openai_api_key=[redacted]"),
        ("sort_key=abcdefgh", "sort_key=abcdefgh"),
        # A strong label: 8 characters likewise.
        ("token=abcdefgh", "token=[redacted]"),
        ("token=abcdefg", "token=abcdefg"),
        # A variable named like a credential is code, not the credential; other names are not.
        ("password=db_passwd", "password=db_passwd"),
        ("password=user_pwd", "password=user_pwd"),
        ("password=db_pass", "password=db_pass"),
        ("password=api_token", "password=api_token"),
        ("password=client_secret", "password=client_secret"),
        ("password=api_key", "password=api_key"),
        ("password=aws_credentials", "password=aws_credentials"),
        ("password=my_account", "password=[redacted]"),
        ("token=cfg.db.token", "token=cfg.db.token"),
        ("token=a9f3e1c0.Then", "token=[redacted]"),
        # Random-looking, for weak labels: letters and digits from 8 characters, mixed case or
        # base64 punctuation from 16.
        ("sort_key=ab12cd34", "sort_key=[redacted]"),
        ("sort_key=ab12cd3", "sort_key=ab12cd3"),
        ("sort_key=AbcdefghIjklmnop", "sort_key=[redacted]"),
        ("sort_key=AbcdefghIjklmno", "sort_key=AbcdefghIjklmno"),
        ("sort_key=abcdefghijklmno+", "sort_key=[redacted]"),
        # An escaped line break, tab or return in JSON text ends the word before a label.
        ('{"log": "ok\\npass=x7!pq"}', '{"log": "ok\\npass=[redacted]"}'),
        ('{"log": "ok\\tpass=x7!pq"}', '{"log": "ok\\tpass=[redacted]"}'),
        ('{"log": "ok\\rpass=x7!pq"}', '{"log": "ok\\rpass=[redacted]"}'),
        # Weak keywords need a hump or a separator after a word; short password words a
        # boundary; sig a query separator.
        ("connectionKey=ab12cd34ef", "connectionKey=[redacted]"),
        ("db.key=ab12cd34ef", "db.key=[redacted]"),
        ("db-key=ab12cd34ef", "db-key=[redacted]"),
        ("monkey=ab12cd34ef", "monkey=ab12cd34ef"),
        ("db_pwd=x7", "db_pwd=[redacted]"),
        ("pw=x7", "pw=[redacted]"),
        ("bypass=x7", "bypass=x7"),
        ("/etc/passwd: No such file", "/etc/passwd: No such file"),
        ("?x=1&sig=ab12cd34ef", "?x=1&sig=[redacted]"),
        ("c?sig=ab12cd34ef&sv=1", "c?sig=[redacted]&sv=1"),
        ("a;sig=ab12cd34ef", "a;sig=[redacted]"),
        ("mysig=ab12cd34ef", "mysig=ab12cd34ef"),
        # A placeholder is whole: <…>, not one bracket.
        ('api_key="<your-key>"', 'api_key="<your-key>"'),
        ('api_key="<your-key"', 'api_key="[redacted]"'),
        ('api_key="your-key>"', 'api_key="[redacted]"'),
        # sk-, rk-, pk- tokens: random ones go, words (a package's name) stay.
        ("sk-learn-compatible-estimators", "sk-learn-compatible-estimators"),
        ("rk-learn-compatible-estimators", "rk-learn-compatible-estimators"),
        ("pk-learn-compatible-estimators", "pk-learn-compatible-estimators"),
        ("rk-AbCdEf1234567890XyZ", REDACTED),
        ("pk-AbCdEf1234567890XyZ", REDACTED),
        # A PEM block keeps its BEGIN and END lines, one space from the mark.
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY----- [redacted] -----END RSA PRIVATE KEY-----",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEow", "-----BEGIN PRIVATE KEY----- [redacted]"),
        # "Bearer" in prose stays; a bearer token goes.
        ("Use bearer authentication everywhere.", "Use bearer authentication everywhere."),
        ("Bearer Ab12Cd34Ef56", "Bearer [redacted]"),
    ],
)
def test_the_rules_at_their_edges(text: str, expected: str) -> None:
    assert Redactor({})(text) == expected


def test_secret_environment_values_from_eight_characters() -> None:
    # Shorter values are too likely to be ordinary words of the text.
    assert Redactor({"MY_TOKEN": "x7Rk2pQz"})("the token is x7Rk2pQz") == "the token is [redacted]"
    assert Redactor({"MY_TOKEN": "x7Rk2pQ"})("the token is x7Rk2pQ") == "the token is x7Rk2pQ"


def test_a_letter_that_lowers_to_two_keeps_the_labels_after_it_in_place() -> None:
    # "İ".lower() is two characters: the lower-cased copy the labels are found in must not
    # shift the offsets of everything after it.
    assert Redactor({})("İstanbul office: password=hunter22") == (
        "İstanbul office: password=[redacted]"
    )


# -- a long text without a delimiter ------------------------------------------------------------

# A prompt in Chinese or Japanese, a run of emoji, a minified line: no space or quote for
# thousands of characters. The head was cut back to the last delimiter before the cut, which in
# such a text is its start, so a prompt of more than 8,000 characters was kept as "…". Now the
# run is redacted over a margin past the cut, then cut.
RUNS = ["数据分析报告", "🙂🚀✨", "ｘ", "x", "ab,cd;"]


@pytest.mark.parametrize("run", RUNS)
def test_a_long_prompt_without_spaces_keeps_its_head(run: str) -> None:
    from jupyter_recap.chats.document import read_chat
    from jupyter_recap.hooks.events import normalise

    prompt = run * (9000 // len(run) + 1)
    head, cut = Redactor(NO_ENV).head(prompt, 4000)
    assert cut and head == prompt[:4000]
    # Where it is used: a CLI agent's prompt (its hook) and a chat's message.
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": prompt}
    event = normalise(payload, at=1.0, agent="Claude Code", env=NO_ENV)
    assert event is not None and event.text.startswith(prompt[:3000]), event
    chat = {"messages": [{"sender": "ada", "body": prompt, "time": 1.0}], "users": {}}
    assert read_chat(chat, env=NO_ENV).turns[0].prompt.startswith(prompt[:3000])


# Separators that are no delimiter (no space, no quote): the run goes on through the secret.
RUN_BEFORE = st.sampled_from(["(", "[", "{", ",", ";", "，", "、", "|", "：("])
RUN_AFTER = st.sampled_from([")", "]", "}", ",", ";", "，", "。", "|", "."])


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_no_secret_survives_the_head_of_a_long_text_without_delimiters(
    kind: str, data: st.DataObject
) -> None:
    from jupyter_recap.redact import CUT_MARGIN

    sample = data.draw(KINDS[kind])
    before, after = data.draw(RUN_BEFORE), data.draw(RUN_AFTER)
    text = before + sample.text + after
    run = data.draw(st.sampled_from(RUNS))
    size = data.draw(st.sampled_from([200, 1000, 4000]))
    # The secret across the cut, across the end of the window redacted past it, or across the
    # end of the stretch searched for a delimiter.
    anchor = data.draw(st.sampled_from([size, size + 2 * CUT_MARGIN, 2 * size]))
    start = max(0, anchor - data.draw(st.integers(0, len(text) + 2)))
    filler = run * ((start + 3 * size + 2 * CUT_MARGIN) // len(run) + 1)
    whole = filler[:start] + text + filler[: 2 * size + 2 * CUT_MARGIN]
    head, cut = Redactor(sample.env).head(whole, size)
    assert cut
    assert not _leaked(sample.secrets, head, filler + before + _blank(sample) + after), head
