"""Measure how many secrets of each kind are redacted, on the wire and at rest; print tables.

    .venv/bin/python benchmarks/bench_redaction.py            # 40 examples per kind
    .venv/bin/python benchmarks/bench_redaction.py --quick    # 10 examples per kind

For each kind of secret, N examples are generated (seeded, so every run draws the same ones),
each pasted into a sentence inside a random kind of transcript entry (a prompt, a reply, a tool
call or result, a failing cell's error), sometimes behind a run of whitespace long enough to put
it across the point where the context builder cuts the text. A secret counts as redacted when
no 8-character run of its secret part is found.

1. On the wire: ``draft_recap`` with the ``openai`` provider pointed at the local fake LLM
   server (``tests/fakellm.py``); the request body the server received is checked.
2. Written by the model: the fake server answers a recap that holds the secret itself; the
   recap text and the agents-panel report built from it are checked.
3. At rest: the same transcript written by a ``SessionWriter`` to a temporary
   ``JUPYTER_RECAP_HOME`` (its files' bytes are checked), and the text kept with
   ``jr.remember`` (the memory file's bytes are checked).
4. What ``build_context`` costs with these patterns: the tool-heavy session of
   ``bench_foundation.py``, and a session in which every entry holds secrets.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ["JUPYTER_RECAP_LOG"] = "0"
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUPYTER_RECAP_MODEL"):
    os.environ.pop(_name, None)

from figurelib import figure  # noqa: E402

import jupyter_recap as jr  # noqa: E402
from jupyter_recap.focus.report import CellCounts, agent_report  # noqa: E402
from jupyter_recap.pipeline.service import draft_recap  # noqa: E402
from jupyter_recap.stores import workstate  # noqa: E402
from jupyter_recap.stores.sessions import SessionStore, SessionWriter  # noqa: E402

RUN = 8
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
SYMBOLS = "!#$%*+-@^~"

# -- examples --------------------------------------------------------------------------------

Example = tuple[str, str, dict[str, str]]  # (text, secret part, environment it needs)


def credential(rng: random.Random, alphabet: str, low: int, high: int, symbol: bool = False) -> str:
    """Random characters of ``alphabet``, with a letter and a digit (and a symbol) in them."""
    chars = [rng.choice(alphabet) for _ in range(rng.randint(low, high))]
    letters = [c for c in alphabet if c.isalpha()]
    for char in (rng.choice(letters), rng.choice(string.digits)) + (
        (rng.choice(SYMBOLS),) if symbol else ()
    ):
        chars.insert(rng.randint(0, len(chars)), char)
    return "".join(chars)


def url(rng: random.Random) -> Example:
    scheme = rng.choice(["postgresql", "postgres", "mysql", "mongodb+srv", "redis", "amqp"])
    user = "" if scheme == "redis" else rng.choice(["app", "admin", "etl", "root"])
    password = credential(rng, ALNUM + "!$*+-^~.=_", 8, 24)
    return f"{scheme}://{user}:{password}@db.internal:5432/app", password, {}


def aws(rng: random.Random) -> Example:
    secret = credential(rng, B64, 38, 38)
    shape = rng.choice(["aws_secret_access_key = {}", "AWS_SECRET_ACCESS_KEY={}"])
    return shape.format(secret), secret, {}


def pem(rng: random.Random) -> Example:
    body = credential(rng, B64, 40, 60)
    end = "\n-----END RSA PRIVATE KEY-----" if rng.random() < 0.5 else ""  # or cut off
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}{end}", body, {}


def password(rng: random.Random) -> Example:
    value = credential(rng, ALNUM + SYMBOLS + ".:=?/_", 6, 20, symbol=True)
    shape = rng.choice(
        ["Server=db;Uid=sa;Pwd={};Encrypt=yes", "password: {}", "DB_PASSWORD={}", "passwd={}"]
    )
    return shape.format(value), value, {}


def token(*prefixes: str, chars: str, size: tuple[int, int]) -> Callable[[random.Random], Example]:
    def make(rng: random.Random) -> Example:
        value = rng.choice(prefixes) + credential(rng, chars, *size)
        return value, value, {}

    return make


def azure(rng: random.Random) -> Example:
    key = credential(rng, B64, 60, 86) + "=="
    return f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={key};", key, {}


def sas(rng: random.Random) -> Example:
    sig = credential(rng, ALNUM + "%", 38, 44) + "%3D"
    return f"https://acct.blob.core.windows.net/c/b.csv?sv=2022-11-02&sig={sig}&sp=r", sig, {}


def webhook(rng: random.Random) -> Example:
    path = "/".join(credential(rng, ALNUM, 9, 24) for _ in range(3))
    return "https://hooks.slack.com/services/" + path, path, {}


def jwt(rng: random.Random) -> Example:
    header, payload = credential(rng, B64URL, 12, 40), credential(rng, B64URL, 20, 60)
    value = f"eyJ{header}.eyJ{payload}.{credential(rng, B64URL, 40, 43)}"
    return value, value, {}


def basic(rng: random.Random) -> Example:
    value = credential(rng, B64, 12, 40) + "=="
    return f"Authorization: Basic {value}", value, {}


def labelled(rng: random.Random) -> Example:
    label = rng.choice(["client_secret", "api_token", "SERVICE_API_KEY", "stripe_key", "apiKey"])
    value = credential(rng, B64URL, 16, 40)
    shape = rng.choice(['"{l}": "{v}"', "{l}: {v}", "{l}={v}", "{l}='{v}'"])
    return shape.format(l=label, v=value), value, {}


def cli(rng: random.Random) -> Example:
    value = credential(rng, ALNUM + "!#$%*+@^~", 8, 20, symbol=True)
    shape = rng.choice(["--password {}", "curl -u admin:{} https://ci.local", "--api-key {}"])
    return shape.format(value), value, {}


def environment(rng: random.Random) -> Example:
    value = credential(rng, ALNUM + " .,;:", 10, 30)
    return value, value, {"MY_GATEWAY_TOKEN": value}


KINDS: dict[str, Callable[[random.Random], Example]] = {
    "db/broker URL password": url,
    "AWS secret access key": aws,
    "PEM private key": pem,
    "password (ODBC, env, YAML)": password,
    "Stripe sk_live/rk_live/sk_test": token(
        "sk_live_", "rk_live_", "sk_test_", chars=ALNUM, size=(24, 60)
    ),
    "GitLab glpat-": token("glpat-", chars=B64URL, size=(18, 18)),
    "Azure AccountKey": azure,
    "Azure SAS sig=": sas,
    "Slack webhook": webhook,
    "Google OAuth ya29.": token("ya29.", chars=B64URL, size=(40, 100)),
    "npm_": token("npm_", chars=ALNUM, size=(34, 34)),
    "PyPI pypi-": token("pypi-AgEIcHlwaS5vcmc", chars=B64URL, size=(40, 80)),
    "JWT": jwt,
    "Authorization: Basic": basic,
    "OpenAI / Anthropic sk-": token("sk-proj-", "sk-ant-api03-", chars=B64URL, size=(40, 90)),
    "GitHub ghp_": token("ghp_", chars=ALNUM, size=(34, 34)),
    "AWS access key id": token("AKIA", chars=string.ascii_uppercase + string.digits, size=(14, 14)),
    "*_secret / *_token / *_key": labelled,
    "CLI flag / curl -u": cli,
    "environment variable value": environment,
}


def runs(secret: str) -> list[str]:
    return [secret[i : i + RUN] for i in range(len(secret) - RUN + 1)]


def survives(secret: str, data: str) -> bool:
    return any(run in data for run in runs(secret))


def transcript_with(rng: random.Random, text: str) -> jr.Transcript:
    """A session whose one secret-bearing entry is of a random kind, maybe far into its text."""
    filler = rng.choice(["", "", " " * rng.randint(0, 2700), "see below\n" * rng.randint(0, 80)])
    pasted = f"{filler}here is what I have:\n{text}\nthat should be enough"
    t = jr.Transcript()
    where = rng.choice(["user", "assistant", "tool_call", "tool_result", "code"])
    t.user(pasted if where == "user" else "why does the export job fail?", model=MODEL)
    if where == "assistant":
        t.assistant(pasted)
    elif where == "tool_call":
        t.tool_call("run", {"cmd": pasted})
    elif where == "tool_result":
        t.tool_call("run", {"cmd": "cat .env"})
        t.tool_result("run", pasted)
    elif where == "code":
        t.code("export_job.run()", error=pasted)
    t.outcome("ok")
    return t


MODEL = "openai-chat:gpt-4o-mini"

# -- the two checks --------------------------------------------------------------------------


def on_the_wire(fake: Any, t: jr.Transcript, secret: str, env: dict[str, str]) -> bool:
    before = len(fake.requests)
    wire_env = {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-bench-0123456789ab"}
    result = draft_recap(t, env={**wire_env, **env})
    if len(fake.requests) != before + 1:
        raise RuntimeError(f"no request reached the fake server: {result.reason}")
    body = fake.requests[-1].body
    sent = "\n".join(message["content"] for message in body["messages"])
    return not survives(secret, sent)


def written_by_the_model(fake: Any, text: str, secret: str, env: dict[str, str]) -> bool:
    """The model's own answer holds the secret: the recap text (what the banner, the output a
    saved notebook keeps and the agents row all show) and the report sent to the server."""
    from fakellm import answer

    t = jr.Transcript()
    t.user("why does the export job fail?", model=MODEL)
    t.outcome("ok")
    fake.respond(
        answer(f"<recap>Task: fix the export job, which uses {text}. Next: rerun.</recap>")
    )
    wire_env = {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-bench-0123456789ab"}
    result = draft_recap(t, env={**wire_env, **env}, model=MODEL)
    if result.recap is None:
        raise RuntimeError(f"no recap: {result.reason}")
    shown = {"text": result.recap.text, "model": result.recap.model}
    report = agent_report(t, cells=CellCounts(), recap=shown)
    return not survives(secret, result.recap.text + json.dumps(report))


def at_rest(
    t: jr.Transcript, text: str, secret: str, env: dict[str, str], store: SessionStore, n: int
) -> bool:
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # the stores redact with this process's environment
    try:
        writer = SessionWriter(t, store=store, delay=3600)
        writer.flush()
        writer.close()
        files = [store.header_path(writer.id), store.entries_path(writer.id)]
        data = b"".join(path.read_bytes() for path in files if path.exists())
        # numbered: once redacted, two notes could read the same and the second be refused
        note = jr.remember("fact", f"connection details {n}: " + " ".join(text.split()))
        memory = workstate.current_state().memory.path.read_bytes() if note else b""
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return not (survives(secret, data.decode("utf-8")) or survives(secret, memory.decode()))


def rates(examples: int) -> None:
    from fakellm import FakeLLM

    print("## Secrets redacted, by kind\n")
    print(f"{examples} generated examples per kind; redacted = no 8-character run of the secret ")
    print("found in the request body the fake LLM server received (wire), or in the session ")
    print("files and the memory file (at rest), or in a recap the model itself wrote holding the ")
    print("secret (its text is what the banner, the saved notebook and the agents row show; the ")
    print("report to the server is checked too).\n")
    print("| kind | examples | redacted on the wire | redacted at rest | written by the model |")
    print("|---|---|---|---|---|")
    totals = [0, 0, 0, 0]
    with tempfile.TemporaryDirectory() as home, FakeLLM() as fake:
        os.environ["JUPYTER_RECAP_HOME"] = home
        store = SessionStore()
        for n, (kind, make) in enumerate(KINDS.items()):
            rng = random.Random(f"bench-redaction-{kind}")
            project = Path(home) / f"project-{n}"  # one memory per kind: 300 notes at most
            project.mkdir()
            workstate.set_current_state(workstate.WorkState(str(project)))
            wire = rest = model = 0
            for i in range(examples):
                text, secret, env = make(rng)
                t = transcript_with(rng, text)
                wire += on_the_wire(fake, t, secret, env)
                rest += at_rest(t, text, secret, env, store, i)
                model += written_by_the_model(fake, text, secret, env)
            totals[0] += examples
            totals[1] += wire
            totals[2] += rest
            totals[3] += model
            print(
                f"| {kind} | {examples} | {100 * wire / examples:.0f} % "
                f"| {100 * rest / examples:.0f} % | {100 * model / examples:.0f} % |"
            )
        workstate.set_current_state(None)
    print(
        f"| **all** | {totals[0]} | {100 * totals[1] / totals[0]:.1f} % "
        f"| {100 * totals[2] / totals[0]:.1f} % | {100 * totals[3] / totals[0]:.1f} % |\n"
    )
    shares = [100 * part / totals[0] for part in totals[1:]]
    figure(
        "redacted",
        " / ".join(f"{share:.1f}" for share in shares),
        unit="%",
        label=f"secrets redacted, {len(KINDS)} kinds × {examples} generated examples: on the "
        "wire / at rest / in a recap the model wrote holding the secret",
        target="100 % on each path",
        met=all(part == totals[0] for part in totals[1:]),
    )


# -- cost ------------------------------------------------------------------------------------


def median_ms(action: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def secret_dense_session(entries: int) -> jr.Transcript:
    rng = random.Random("bench-redaction-dense")
    makers = list(KINDS.values())
    t = jr.Transcript()
    t.user("rotate every credential in the deploy configs", model=MODEL)
    for n in range(entries):
        texts = [rng.choice(makers)(rng)[0] for _ in range(3)]
        t.tool_call("read_file", {"path": f"deploy/{n}.env"})
        t.tool_result("read_file", "\n".join(texts))
    return t


def cost(rounds: int) -> None:
    from bench_foundation import context_figures

    from jupyter_recap.pipeline.context import build_context
    from jupyter_recap.redact import Redactor

    print("## What the patterns cost\n")
    print("| session | entries | build_context (median) | chars sent |")
    print("|---|---|---|---|")
    for row in context_figures([10, 1_000, 10_000], rounds):
        print(
            f"| tool-heavy (bench_foundation) | {row['entries']:,} | {row['build_ms']:.2f} ms "
            f"| {row['ours']:,} |"
        )
    for size in (10, 1_000, 10_000):
        t = secret_dense_session(size)
        ms = median_ms(functools.partial(build_context, t, env={}), rounds)
        chars = len(build_context(t, env={}))
        print(f"| every tool result holds 3 secrets | {size:,} | {ms:.2f} ms | {chars:,} |")
    clean = Redactor({})
    ordinary = (ROOT / "jupyter_recap" / "pipeline" / "context.py").read_text()
    dense = "\n".join(text for text, _, _ in _examples(200))
    print("\n| text | size | Redactor (median) | throughput |")
    print("|---|---|---|---|")
    for name, text in (("Python source (context.py)", ordinary), ("secrets only", dense)):
        ms = median_ms(functools.partial(clean, text), rounds * 5)
        print(f"| {name} | {len(text):,} chars | {ms:.2f} ms | {len(text) / ms / 1000:.1f} MB/s |")


def _examples(count: int) -> list[Example]:
    rng = random.Random("bench-redaction-text")
    makers = list(KINDS.values())
    return [rng.choice(makers)(rng) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 examples per kind, fewer rounds")
    args = parser.parse_args()
    rates(10 if args.quick else 40)
    cost(3 if args.quick else 7)


if __name__ == "__main__":
    main()
