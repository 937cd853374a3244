"""Run every benchmark the performance page quotes and print its figure tables.

    .venv/bin/python benchmarks/figures.py                # every benchmark, the page's settings
    .venv/bin/python benchmarks/figures.py --quick        # each quick form: a smoke run
    .venv/bin/python benchmarks/figures.py --only bench_state,bench_usage
    .venv/bin/python benchmarks/figures.py --write-docs             # into docs/performance.md
    .venv/bin/python benchmarks/figures.py --only bench_agents --write-docs

Each benchmark runs as a subprocess with ``JUPYTER_RECAP_FIGURES`` naming a file, to which it
appends one JSON line per figure the page quotes (``benchmarks/figurelib.py``);
``bench_recap_quality.py`` prints its figures as JSON instead (``--json``), read generically. The
first table is every figure with its target and whether this run met it; the second, what the
reliability suite exercises, counted from the tests without running them (``pytest
--collect-only`` and the tests' own lists). ``--write-docs`` puts the two tables between the
``<!-- figures:start -->`` / ``<!-- figures:end -->`` and ``<!-- counts:start -->`` /
``<!-- counts:end -->`` markers of ``docs/performance.md`` (or of the page it names), so the
documentation's tables are exactly this script's output (``--write-readme PAGE``, its former
name, still works). With
``--only``, it replaces only the rows of the benchmarks run (a new benchmark's rows go at the
end) and says under the heading which ones were re-run when: the rest keep their run's figures.

Each benchmark's wall time goes to stderr. A benchmark that fails (or prints no figure) is named
there and makes the exit code 1; the tables still hold everything else.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
TESTS = ROOT / "tests"
PERFORMANCE_PAGE = ROOT / "docs" / "performance.md"
"""Where ``--write-docs`` puts the tables unless it names another page."""
SUITE = "suite"  # the --only name of the reliability counts


@dataclass(frozen=True)
class Bench:
    """A benchmark script and its arguments: as the performance page quotes it, and its quick
    form."""

    script: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ("--quick",)
    json_output: bool = False  # prints its figures as JSON on stdout (bench_recap_quality.py)


# In the order of the performance page's table.
BENCHES = [
    Bench("bench_foundation.py", full=("--rounds", "25")),
    Bench("bench_triggers.py"),
    Bench("bench_capture.py"),
    Bench("bench_sessions.py"),
    Bench("bench_state.py"),
    Bench("bench_fold.py", quick=("--quick",)),
    Bench("bench_usage.py"),
    Bench("bench_server.py", quick=("--seconds", "2")),
    Bench("bench_browser.py"),
    Bench("bench_agents.py"),
    Bench("bench_chats.py", quick=("--quick",)),
    Bench("bench_hook.py"),
    Bench("bench_changes.py", quick=("--quick",)),
    Bench("bench_footprint.py", quick=("--quick",)),
    Bench("bench_scale.py", quick=("--quick",)),
    Bench("bench_recap_quality.py", full=("--json",), quick=("--json",), json_output=True),
    Bench("bench_redaction.py"),
    Bench("bench_reliability.py"),
    Bench("bench_polls.py", quick=("--polls", "300", "--rounds", "3", "--skip-unbounded")),
]

TIMEOUT = 1800  # seconds for one benchmark; the slowest full run takes a few minutes


@dataclass
class Row:
    label: str
    value: str
    target: str
    met: bool | None
    script: str


def shown(value: Any, unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = str(value)
    else:
        text = f"{value:,}"
    return f"{text} {unit}".strip()


def rows_from_lines(text: str) -> list[Row]:
    rows = []
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            rows.append(
                Row(
                    record["label"],
                    shown(record["value"], record["unit"]),
                    record["target"] or "",
                    record["met"],
                    record["script"],
                )
            )
    return rows


# Names for bench_recap_quality.py's JSON fields as they are today; a field not named here is
# shown under its own name.
QUALITY_NAMES = {
    "context": "the model's context",
    "context_filled": "the context by the former fill-the-room rule",
    "offline": "the offline recap",
    "head_tail": "baseline: the raw transcript's first and last 6,000 characters",
    "snippets": "baseline: three snippets in the offline recap's size",
    "last30_raw": "peer: the last 30 entries in full",
    "last30_dialog": "peer: the last 30 dialog messages",
    "context_min": "lowest context recall of any session",
    "share": "mean context size as a share of the fill-the-room rule's",
}


def rows_from_quality(data: dict[str, Any], script: str) -> list[Row]:
    """bench_recap_quality.py's JSON: per strategy its mean and lowest recall and mean size, its
    other scalar figures, and every target with whether it was met. Strategies are read off the
    JSON, so a strategy added there shows here without a change."""
    sessions = data.get("sessions", [])
    rows = []
    for name, means in data.get("means", {}).items():
        recalls = [
            s[name]["recall"]
            for s in sessions
            if isinstance(s.get(name), dict) and "recall" in s[name]
        ]
        value = f"{means.get('recall', float('nan')):.2f}"
        if recalls:
            value += f" / {min(recalls):.2f}"
        if "chars" in means:
            value += f", {means['chars']:,.0f} characters"
        what = QUALITY_NAMES.get(name, name.replace("_", " "))
        label = f"recap quality ({len(sessions)} sessions), key facts in {what}: mean / lowest "
        rows.append(Row(label + "recall, mean size", value, "", None, script))
    for key, value in data.items():
        if key not in ("sessions", "means", "targets") and isinstance(value, int | float):
            what = QUALITY_NAMES.get(key, key.replace("_", " "))
            rows.append(Row(f"recap quality, {what}", f"{value:.2f}", "", None, script))
    for target, met in data.get("targets", {}).items():
        rows.append(Row("recap quality: target", "", target, bool(met), script))
    generated = data.get("generated")
    if isinstance(generated, dict):
        rows += rows_from_generated(generated, script)
    return rows


# The generated sessions' figures shown as "new | old" pairs: (label, new field, old field).
GENERATED_PAIRS = (
    ("context recall", "context_recall", "old_context_recall", "{:.3f}"),
    ("context characters", "context_chars", "old_context_chars", "{:,.0f}"),
    ("offline recap right", "offline_right", "old_offline_right", "{:.0%}"),
    ("offline recall", "offline_recall", "old_offline_recall", "{:.2f}"),
    (
        "failures reported open after they were fixed",
        "fixed_reported_open",
        "old_fixed_reported_open",
        "{:d}",
    ),
)


def rows_from_generated(data: dict[str, Any], script: str) -> list[Row]:
    """The generated sessions' figures: each with the session state's builder and engine
    beside the ones they replaced (measured in the same run), then the targets."""
    sessions = data.get("sessions", 0)
    rows = []
    for label, new, old, spec in GENERATED_PAIRS:
        if new in data and old in data:
            value = f"{spec.format(data[new])} (before: {spec.format(data[old])})"
            rows.append(
                Row(
                    f"recap quality, {sessions} generated sessions: {label}",
                    value,
                    "",
                    None,
                    script,
                )
            )
    for target, met in data.get("targets", {}).items():
        rows.append(Row("recap quality: target", "", target, bool(met), script))
    return rows


def run_bench(bench: Bench, quick: bool) -> tuple[list[Row], str | None]:
    """The benchmark's figures, and why it failed (None: it did not)."""
    arguments = bench.quick if quick else bench.full
    with tempfile.TemporaryDirectory(prefix="figures-") as tmp:
        lines = Path(tmp) / "figures.jsonl"
        env = {**os.environ, "JUPYTER_RECAP_FIGURES": str(lines)}
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, str(BENCHMARKS / bench.script), *arguments],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return [], f"no answer in {TIMEOUT} s"
        finally:
            took = time.monotonic() - started
            print(f"figures: {bench.script} took {took:.0f} s", file=sys.stderr)
        rows = rows_from_lines(lines.read_text()) if lines.exists() else []
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        return rows, f"exit code {done.returncode}\n{tail}"
    if bench.json_output:
        try:
            rows += rows_from_quality(json.loads(done.stdout), bench.script)
        except json.JSONDecodeError as error:
            return rows, f"its JSON did not parse: {error}"
    if not rows:
        return rows, "it printed no figure"
    return rows, None


def met_text(met: bool | None) -> str:
    return "—" if met is None else "yes" if met else "**NOT MET**"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def figure_table(rows: list[Row]) -> str:
    lines = ["| figure | value | target | met | script |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        lines.append(
            f"| {cell(row.label)} | {cell(row.value)} | {cell(row.target)} "
            f"| {met_text(row.met)} | `{row.script}` |"
        )
    return "\n".join(lines)


# -- what the reliability suite exercises -------------------------------------------------------

RELIABILITY_PATHS = [
    "tests/unit/reliability",
    "tests/kernel/reliability",
    "tests/server/reliability",
    "tests/browser/reliability",
    "tests/hub",
]
PROVIDERS = "tests/unit/test_providers.py"
PROVIDER_FAULTS = (
    "test_failures",
    "test_auth_error_names_the_provider",
    "test_http_error_keeps_status",
    "test_error_excerpt_is_short_and_redacted",
    "test_timeout_when_server_never_answers",
    "test_timeout_is_total_even_when_bytes_keep_dripping",
    "test_huge_answer_is_refused_quickly",
    "test_connection_refused",
    "test_unsupported_url_scheme_is_unavailable",
)


def collected() -> list[str]:
    """The node ids pytest collects from the reliability suite and the provider tests."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *RELIABILITY_PATHS,
            PROVIDERS,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pytest --collect-only failed:\n{done.stdout[-2000:]}{done.stderr}")
    return [line for line in done.stdout.splitlines() if "::" in line]


def cases(nodes: list[str], path: str, *functions: str) -> int:
    """Collected cases (each parameter set counts) of ``functions`` in the file ``path``."""
    wanted = {f"{path}::{function}" for function in functions}
    return sum(node.split("[", 1)[0] in wanted for node in nodes)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise LookupError(name)


def literal_length(path: str, name: str, function: str | None = None) -> int:
    """Elements of the list, tuple or dict literal a test file binds to ``name``: at module
    level, or in ``function`` (an assignment or a ``for`` loop over it); ``name`` "return" is
    the list the function returns. Read from the source, so the count is the test's own."""
    tree = ast.parse((ROOT / path).read_text(), path)
    scope: ast.AST = tree if function is None else _function(tree, function)
    for node in ast.walk(scope):
        found: ast.expr | None = None
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = node.value
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            found = node.iter if node.target.id == name else None
        elif isinstance(node, ast.Return) and name == "return":
            found = node.value
        if isinstance(found, ast.List | ast.Tuple):
            return len(found.elts)
        if isinstance(found, ast.Dict):
            return len(found.keys)
    raise LookupError(f"{path}: no literal bound to {name}")


def constant(path: str, name: str) -> int:
    """A module-level integer constant of a test file."""
    tree = ast.parse((ROOT / path).read_text(), path)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value
    raise LookupError(f"{path}: no constant {name}")


def route_counts() -> tuple[int, int, int]:
    """The server's routes as tests/server/reliability/test_routes.py walks them: (pattern,
    method) pairs of our handlers, those that write, those whose path takes an id."""
    sys.path.insert(0, str(ROOT))
    from jupyter_recap.server.handlers import RecapHandler
    from jupyter_recap.server.routes import routes

    methods = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
    found = []
    for pattern, handler in routes("/"):
        for method in methods:
            for cls in handler.__mro__:  # the method's own class, as _own_methods finds it
                if method.lower() in vars(cls):
                    if issubclass(cls, RecapHandler):
                        found.append((pattern, method))
                    break
    writes = sum(m in ("POST", "PUT", "PATCH", "DELETE") for _, m in found)
    with_ids = sum("(?P<" in p for p, _ in found)
    return len(found), writes, with_ids


def count_rows() -> list[tuple[str, str, str]]:
    """(what, count, where) for every count the performance page states of the reliability
    suite."""
    nodes = collected()
    suite = [n for n in nodes if not n.startswith(PROVIDERS)]
    modules = {n.split("::", 1)[0] for n in suite}
    unit, kernel, server = (f"tests/{tier}/reliability" for tier in ("unit", "kernel", "server"))
    routes_file = f"{server}/test_routes.py"
    hub = "tests/hub/test_hub.py"
    methods, writes, with_ids = route_counts()
    trust = f"{kernel}/test_store_trust.py"
    faults = f"{unit}/test_store_faults.py"
    corrupt = f"{unit}/test_store_corrupt.py"
    headers = cases(nodes, corrupt, "test_a_header_with_a_wrong_field_still_resumes")
    entries = cases(nodes, corrupt, "test_a_bad_entry_is_skipped_and_the_rest_resumes")
    nested = cases(
        nodes,
        corrupt,
        "test_deeply_nested_json_in_a_session_is_skipped",
        "test_deeply_nested_json_in_memory_is_moved_aside",
    )
    hostile = "test_hostile_ids_are_a_json_400_or_404"
    crossing = "test_no_user_reaches_another_users_routes"
    untrusted = f"{unit}/test_untrusted_files.py"
    readers = cases(nodes, untrusted, "test_every_reader_refuses_a_fifo_and_a_deep_file_at_once")
    cli_files = cases(nodes, untrusted, "test_the_cli_answers_one_line_at_once")
    server_files = cases(
        nodes,
        f"{server}/test_untrusted_notebooks.py",
        *test_names(nodes, f"{server}/test_untrusted_notebooks.py"),
    ) + cases(
        nodes, f"{server}/test_fifo_server.py", *test_names(nodes, f"{server}/test_fifo_server.py")
    )
    outside = f"{unit}/test_outside_text.py"
    return [
        (
            "test cases in the reliability suite (`pytest -m reliability`)",
            f"{len(suite):,} in {len(modules)} modules",
            "the tiers' `reliability/` folders, `tests/hub/`",
        ),
        (
            "provider faults: failing answers × providers, auth and HTTP errors, timeouts, "
            "refused connections, oversized answers, a bad URL",
            f"{cases(nodes, PROVIDERS, *PROVIDER_FAULTS)} cases "
            f"({literal_length(PROVIDERS, 'FAILURES')} failing answers × "
            f"{cases(nodes, PROVIDERS, 'test_success')} providers among them)",
            f"`{PROVIDERS}`",
        ),
        (
            "store faults: a disk that fills and empties, a read-only store, a file replaced "
            "by a directory",
            f"{cases(nodes, faults, *test_names(nodes, faults))} tests",
            "`test_store_faults.py`",
        ),
        (
            "planted links: tests (a record header, a session file, a kernel's session, "
            "`memory/` or its `.lock`)",
            str(sum("link" in name for name in test_names(nodes, trust))),
            "`test_store_trust.py`",
        ),
        (
            "malformed header fields / malformed entries / absurd nestings in records",
            f"{headers} / {entries} / {nested}",
            "`test_store_corrupt.py`",
        ),
        (
            "usage ledger faults (day file or lock a folder or a link, a store others can write)",
            str(literal_length(f"{unit}/test_budget_faults.py", "FAULTS")),
            "`test_budget_faults.py`",
        ),
        (
            "`%load_ext` / `%unload_ext` cycles; feed connections started and dropped",
            f"{constant(f'{kernel}/test_load_cycles.py', 'CYCLES')}; "
            f"{constant(f'{server}/test_feed_leaks.py', 'CYCLES')}",
            "`test_load_cycles.py`, `test_feed_leaks.py`",
        ),
        (
            "server routes walked (method × path) / that write / that take an id",
            f"{methods} / {writes} / {with_ids}",
            "`test_routes.py` (it reads them off the running server; counted here from the "
            "server's route table by the same rule)",
        ),
        (
            "wrong credentials tried on every route",
            str(literal_length(routes_file, "wrong", "test_a_wrong_credential_is_a_json_403")),
            "`test_routes.py`",
        ),
        (
            "hostile ids on every route that takes one / in the body of a POST",
            f"{literal_length(routes_file, 'HOSTILE_IDS')} / "
            f"{literal_length(routes_file, 'hostile', hostile)}",
            "`test_routes.py`",
        ),
        (
            "files nobody vouched for (a FIFO, a link to `/dev/zero`, a 100k-deep document): "
            "reader × file / the CLI's cases / a server with them (stalls, memory, SIGTERM)",
            f"{readers} / {cli_files} / {server_files}",
            "`test_untrusted_files.py`, `test_untrusted_notebooks.py`, `test_fifo_server.py`",
        ),
        (
            "outside names and texts made printable (chats, MCP clients, hooks, whoever "
            "touches a notebook): paths tried with every control and bidi character",
            str(cases(nodes, outside, *test_names(nodes, outside))),
            "`test_outside_text.py`, `test_outside_names.py`",
        ),
        (
            "nested JSON bodies on every route that reads one",
            str(cases(nodes, routes_file, "test_deeply_nested_json_is_a_json_400")),
            "`test_routes.py`",
        ),
        (
            "JupyterHub: a user's routes tried × ways in (token, cookie, copied cookie) × "
            "directions",
            f"{literal_length(hub, 'return', 'owner_routes')} × "
            f"{literal_length(hub, 'attempts', crossing)} × {cases(nodes, hub, crossing)}",
            "`test_hub.py`",
        ),
    ]


def test_names(nodes: list[str], path: str) -> list[str]:
    """The test functions collected from ``path``, each once."""
    names = [n.split("::", 1)[1].split("[", 1)[0] for n in nodes if n.startswith(f"{path}::")]
    return list(dict.fromkeys(names))


def counts_table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| what | count | tests |", "| --- | --- | --- |"]
    lines += [f"| {cell(what)} | {cell(count)} | {where} |" for what, count, where in rows]
    return "\n".join(lines)


# -- the page ------------------------------------------------------------------------------------


def read_block(text: str, name: str) -> str:
    """What the page holds between ``<!-- name:start -->`` and ``<!-- name:end -->``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.DOTALL)
    if found is None:
        raise SystemExit(f"figures: no {start} … {end} block in the page")
    return found.group(1)


def replace_block(text: str, name: str, block: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"figures: no {start} … {end} block in the page")
    return pattern.sub(lambda _: f"{start}\n{block}\n{end}", text, count=1)


def _table_script(line: str) -> str | None:
    """The script a row of the figure table names (its last cell); None for other lines."""
    if not line.startswith("| ") or line.startswith(("| figure |", "| --- |")):
        return None
    return line.rstrip().rstrip("|").rsplit("|", 1)[-1].strip().strip("`")


def merge_rows(block: str, rows: list[Row], scripts: list[str], note: str) -> str:
    """The page's figures block with the rows of ``scripts`` replaced by ``rows`` (in place of
    their old rows; a script without old rows at the end of the table) and ``note`` added to
    its heading line."""
    fresh = figure_table(rows).splitlines()[2:]
    by_script: dict[str, list[str]] = {}
    for line in fresh:
        by_script.setdefault(_table_script(line) or "", []).append(line)
    lines = block.strip("\n").splitlines()
    out: list[str] = []
    placed: set[str] = set()
    last_row = -1
    for line in lines:
        script = _table_script(line)
        if script in scripts:
            if script not in placed:
                out += by_script.get(script, [])
                placed.add(script)
                last_row = len(out) - 1
            continue
        out.append(line)
        if script is not None:
            last_row = len(out) - 1
    if last_row < 0:
        raise SystemExit("figures: the page's figures block holds no table to update")
    missing = [line for s in scripts if s not in placed for line in by_script.get(s, [])]
    out[last_row + 1 : last_row + 1] = missing
    if note:
        out[0] = f"{out[0]} {note}"
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark's quick form")
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help=f"comma-separated benchmarks to run (bench_state,…; {SUITE!r}: the suite's counts)",
    )
    parser.add_argument(
        "--write-docs",
        "--write-readme",
        dest="write_docs",
        metavar="PAGE",
        type=Path,
        nargs="?",
        const=PERFORMANCE_PAGE,
        help=f"put the tables into this page (default: {PERFORMANCE_PAGE.relative_to(ROOT)})",
    )
    parser.add_argument("--note", default="", help="a sentence to add under the heading line")
    args = parser.parse_args()

    names = [n.strip().removesuffix(".py") for n in (args.only or "").split(",") if n.strip()]
    known = {b.script.removesuffix(".py") for b in BENCHES} | {SUITE}
    if unknown := [n for n in names if n not in known]:
        parser.error(f"unknown: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    if names and args.write_docs and args.quick:
        parser.error("--write-docs with --only writes the full runs' figures, not --quick's")
    chosen = [b for b in BENCHES if not names or b.script.removesuffix(".py") in names]

    load = os.getloadavg()[0]
    today = datetime.date.today().isoformat()
    started = time.monotonic()
    rows: list[Row] = []
    failed: list[str] = []
    for bench in chosen:
        found, failure = run_bench(bench, args.quick)
        rows += found
        if failure:
            failed.append(bench.script)
            print(f"figures: {bench.script} FAILED: {failure}", file=sys.stderr)

    form = " --quick" if args.quick else ""
    heading = (
        f"Measured {today} on {os.cpu_count()} cores by `benchmarks/figures.py{form}` "
        f"(1-minute load average {load:.1f} when it started)."
    )
    if args.note:
        heading += f" {args.note}"
    settings = [
        f"`{b.script} {' '.join(b.quick if args.quick else b.full)}`"
        for b in chosen
        if (b.quick if args.quick else b.full)
    ]
    parts = [heading, "", figure_table(rows)]
    if settings:
        rest = "; the others with their defaults" if len(settings) < len(chosen) else ""
        parts += ["", f"Arguments: {', '.join(settings)}{rest}."]
    if failed:
        parts += ["", f"**Failed, figures missing or partial:** {', '.join(failed)}."]
    figures = "\n".join(parts)
    if chosen:
        print(figures)

    counts = ""
    if not names or SUITE in names:
        begun = time.monotonic()
        try:
            counts = "\n".join(
                [
                    f"Counted {today} from the tests by `benchmarks/figures.py` "
                    "(`pytest --collect-only` and the tests' own lists; no test is run).",
                    "",
                    counts_table(count_rows()),
                ]
            )
            print("\n## What the reliability suite exercises\n")
            print(counts)
        except (RuntimeError, LookupError, subprocess.TimeoutExpired) as error:
            failed.append(SUITE)
            print(f"figures: the suite's counts FAILED: {error}", file=sys.stderr)
        print(f"figures: the suite's counts took {time.monotonic() - begun:.0f} s", file=sys.stderr)

    print(f"figures: all took {time.monotonic() - started:.0f} s", file=sys.stderr)
    if failed:
        print(f"figures: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    if args.write_docs:
        text = args.write_docs.read_text()
        if names:
            scripts = [b.script for b in chosen]
            if scripts:
                note = (
                    f"Re-run alone on {today} (1-minute load average {load:.1f}): "
                    f"{', '.join(f'`{s}`' for s in scripts)}."
                )
                text = replace_block(
                    text, "figures", merge_rows(read_block(text, "figures"), rows, scripts, note)
                )
            if counts:
                text = replace_block(text, "counts", counts)
        else:
            text = replace_block(text, "figures", figures)
            text = replace_block(text, "counts", counts)
        args.write_docs.write_text(text)
        print(f"figures: wrote the tables into {args.write_docs.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
