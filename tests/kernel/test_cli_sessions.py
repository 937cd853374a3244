"""``jupyter recap --sessions`` and ``jupyter recap ID``: real processes, a temporary store."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import needs
import pytest
from cliutil import offline_env, one_line_error, run_cli
from fakellm import FakeLLM

from jupyter_recap import cli
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessionfiles import SessionRecord, uuid7
from jupyter_recap.stores.sessions import SessionStore, SessionWriter

ID_A = "0190a1b2-0000-7000-8000-000000000001"
ID_B = "0190a1b2-0000-7000-8000-000000000002"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(path))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The directory the CLI runs in, by its real path (as ``os.getcwd()`` reports it)."""
    path = tmp_path / "project"
    (path / "sub").mkdir(parents=True)
    return Path(os.path.realpath(path))


def make_session(
    prompt: str,
    notebook: str | Path | None,
    *,
    session_id: str | None = None,
    turns: int = 1,
    recap: str | None = None,
) -> str:
    """Store a finished session of ``turns`` prompts (the first one is ``prompt``), then the
    ``recap`` shown, if any; its id."""
    t = Transcript()
    record = None
    if session_id is not None:  # a chosen id: continue an (empty) "stored" record
        now = time.time()
        nb = str(notebook) if notebook is not None else None
        record = SessionRecord(id=session_id, created=now, updated=now, notebook=nb)
    writer = SessionWriter(t, record=record, notebook=str(notebook) if notebook else None)
    for n in range(turns):
        t.user(prompt if n == 0 else f"and then step {n}", model="openai:gpt-4o-mini")
        t.assistant("Done. Next: check the totals against the ledger.")
        t.outcome("ok")
    if recap is not None:
        t.recap(recap, model="offline")
    writer.close()
    time.sleep(0.002)  # distinct update times: the listing order is well defined
    return writer.id


def run(*args: str | Path, cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=offline_env(JUPYTER_RECAP_HOME=str(home), **env))


def ok_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.splitlines()


def from_store(
    result: subprocess.CompletedProcess[str], session_id: str, turns: int = 1
) -> list[str]:
    """The stdout lines of a recap answered from the stored session ``session_id``, checking
    the one stderr line that says so."""
    assert result.returncode == 0, result.stderr
    plural = "turn" if turns == 1 else "turns"
    match = re.fullmatch(
        rf"jupyter recap: from the stored session ([0-9a-f-]{{8,36}}) of "
        rf"(\d\d:\d\d|\d{{4}}-\d\d-\d\d \d\d:\d\d), {turns} {plural}\n",
        result.stderr,
    )
    assert match, result.stderr
    assert session_id.startswith(match.group(1))
    return result.stdout.splitlines()


def squash(line: str) -> str:
    """``line`` with its column padding collapsed to single spaces."""
    return " ".join(line.split())


def title_of(line: str) -> str:
    """The title column of a listing line (after the turn count)."""
    return re.split(r" \d+ turns? +", line, maxsplit=1)[1]


@pytest.fixture
def stored(home: Path, project: Path) -> dict[str, str]:
    """Five sessions: three of project/sales.ipynb, one of project/sub/churn.ipynb, one other."""
    sales = project / "sales.ipynb"
    return {
        "sales1": make_session("fix the foreign key", sales),
        "elsewhere": make_session("tune the model", "/somewhere/else/train.ipynb"),
        "sales2": make_session("clean the invoices table", sales, turns=3),
        "churn": make_session("plot churn by cohort", project / "sub" / "churn.ipynb"),
        "sales3": make_session("export the report", sales),
    }


# -- listings ------------------------------------------------------------------------------------


def test_sessions_of_a_notebook(stored: dict[str, str], home: Path, project: Path) -> None:
    lines = ok_lines(run("--sessions", "sales.ipynb", cwd=project, home=home))
    assert len(lines) == 3
    assert [title_of(line) for line in lines] == [
        "export the report",
        "clean the invoices table",
        "fix the foreign key",
    ]
    assert "3 turns" in lines[1] and "1 turn " in lines[0]
    assert "<1 min" in lines[0]
    assert "sales.ipynb" not in "\n".join(lines)  # it is the notebook asked for
    prefixes = [line.split()[0] for line in lines]
    assert all(len(p) >= 8 for p in prefixes)
    assert all(
        stored[k].startswith(p)
        for k, p in zip(("sales3", "sales2", "sales1"), prefixes, strict=True)
    )
    # the same notebook by an absolute path, from another directory
    assert ok_lines(run("--sessions", project / "sales.ipynb", cwd=home.parent, home=home)) == lines


def test_sessions_under_the_current_directory(
    stored: dict[str, str], home: Path, project: Path
) -> None:
    lines = ok_lines(run("--sessions", cwd=project, home=home))
    assert len(lines) == 4
    assert squash(lines[0]).endswith(" 1 turn export the report [sales.ipynb]")
    assert squash(lines[1]).endswith(" 1 turn plot churn by cohort [churn.ipynb]")
    assert squash(lines[2]).endswith(" 3 turns clean the invoices table [sales.ipynb]")
    assert "tune the model" not in "\n".join(lines)
    sub = ok_lines(run("--sessions", cwd=project / "sub", home=home))
    assert len(sub) == 1 and squash(sub[0]).endswith("plot churn by cohort [churn.ipynb]")


def test_sessions_all_and_limit(stored: dict[str, str], home: Path, project: Path) -> None:
    lines = ok_lines(run("--sessions", "--all", cwd=project / "sub", home=home))
    assert len(lines) == 5
    assert squash(lines[-1]).endswith("fix the foreign key [sales.ipynb]")
    assert squash(lines[-2]).endswith("tune the model [train.ipynb]")
    two = ok_lines(run("--sessions", "--all", "--limit", "2", cwd=project, home=home))
    assert [squash(line) for line in two] == [squash(line) for line in lines[:2]]
    one = ok_lines(run("--sessions", "sales.ipynb", "--limit", "1", cwd=project, home=home))
    assert len(one) == 1 and one[0].endswith("export the report")


def test_default_limit_is_15(home: Path, project: Path) -> None:
    for n in range(17):
        make_session(f"prompt number {n}", project / "many.ipynb")
    lines = ok_lines(run("--sessions", "many.ipynb", cwd=project, home=home))
    assert len(lines) == 15
    assert lines[0].endswith("prompt number 16") and lines[-1].endswith("prompt number 2")
    prefixes = [line.split()[0] for line in lines]
    assert len(set(prefixes)) == 15  # made within a minute: most share their first 8 characters


def test_sessions_as_json(stored: dict[str, str], home: Path, project: Path) -> None:
    result = run("--sessions", "sales.ipynb", "--json", cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [s["id"] for s in payload] == [stored["sales3"], stored["sales2"], stored["sales1"]]
    assert payload[1]["turns"] == 3 and payload[1]["title"] == "clean the invoices table"
    assert payload[0]["notebook"] == str(project / "sales.ipynb")


def test_sessions_show_the_living_title_and_the_first_prompt(home: Path, project: Path) -> None:
    asked = "I have orders.csv with columns id, customer_id, total"
    moved = make_session(
        asked,
        project / "sales.ipynb",
        turns=2,
        recap="You were fixing the foreign key on orders. Next: rerun the migration.",
    )
    same = make_session("plot churn by cohort", project / "sales.ipynb")
    lines = ok_lines(run("--sessions", "sales.ipynb", cwd=project, home=home))
    rows = [squash(line) for line in lines]
    assert same.startswith(rows[0].split()[0]) and moved.startswith(rows[1].split()[0])
    assert rows[0].endswith(" 1 turn plot churn by cohort")  # still its first prompt: said once
    assert rows[1].endswith(" 2 turns Fixing the foreign key on orders")
    assert rows[2:] == [
        f"asked: {asked}",
        "✦ You were fixing the foreign key on orders. Next: rerun the migration.",
    ]

    payload = json.loads(run("--sessions", "sales.ipynb", "--json", cwd=project, home=home).stdout)
    assert [(s["title"], s["first_prompt"]) for s in payload] == [
        ("plot churn by cohort", "plot churn by cohort"),
        ("Fixing the foreign key on orders", asked),
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--sessions"], "No sessions stored for notebooks under {project}."),
        (["--sessions", "--all"], "No sessions stored yet (in {home})."),
        (["--sessions", "sales.ipynb"], "No sessions stored for {project}/sales.ipynb."),
    ],
)
def test_empty_store(home: Path, project: Path, args: list[str], expected: str) -> None:
    assert not home.exists()
    lines = ok_lines(run(*args, cwd=project, home=home))
    assert lines == [expected.format(project=project, home=home)]


def test_sessions_of_other_notebooks_only(stored: dict[str, str], home: Path) -> None:
    lines = ok_lines(run("--sessions", cwd=home, home=home))  # no notebook under the store
    assert len(lines) == 1 and lines[0].startswith("No sessions stored for notebooks under ")


# -- a stored session's recap --------------------------------------------------------------------


def test_recap_by_full_id(stored: dict[str, str], home: Path, project: Path) -> None:
    lines = ok_lines(run(stored["sales2"], cwd=project, home=home))
    assert lines[-1] == "— offline"
    assert "Clean the invoices table" in " ".join(lines[:-1])
    assert "Check the totals" in " ".join(lines[:-1])


def test_recap_by_the_prefix_the_listing_shows(
    stored: dict[str, str], home: Path, project: Path
) -> None:
    listing = ok_lines(run("--sessions", "--all", cwd=project, home=home))
    churn = next(line for line in listing if "churn" in line)
    prefix = churn.split()[0]
    assert stored["churn"].startswith(prefix) and len(prefix) < 36
    lines = ok_lines(run(prefix.upper(), cwd=project, home=home))
    assert "Plot churn by cohort" in " ".join(lines) and lines[-1] == "— offline"


def test_recap_by_id_as_json(stored: dict[str, str], home: Path, project: Path) -> None:
    result = run(stored["sales1"][:13], "--json", cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {"session_id", "recap", "model", "reason"}
    assert payload["session_id"] == stored["sales1"]
    assert payload["model"] == "offline" and payload["reason"] == "ok"
    assert "Fix the foreign key" in payload["recap"]


def test_recap_by_id_with_model_option(stored: dict[str, str], home: Path, project: Path) -> None:
    env_free = run(stored["sales1"], "--model", "offline", cwd=project, home=home)
    assert ok_lines(env_free)[-1] == "— offline"
    bad = run(stored["sales1"], "--model", "nonsense-provider:m", cwd=project, home=home)
    assert "nonsense-provider" in one_line_error(bad)


def test_unknown_id(stored: dict[str, str], home: Path, project: Path) -> None:
    result = run("abcd", cwd=project, home=home)
    assert one_line_error(result) == "jupyter recap: no session matches 'abcd'"
    assert result.stdout == ""
    empty = run("abcd", cwd=project, home=home / "nothing-here")
    assert one_line_error(empty) == "jupyter recap: no session matches 'abcd'"


def test_ambiguous_prefix(home: Path, project: Path) -> None:
    make_session("first", project / "a.ipynb", session_id=ID_A)
    make_session("second", project / "a.ipynb", session_id=ID_B)
    result = run("0190a1b2", cwd=project, home=home)
    assert one_line_error(result) == "jupyter recap: '0190a1b2' is ambiguous: 2 sessions match"
    assert result.stdout == ""
    lines = ok_lines(run("--sessions", "a.ipynb", cwd=project, home=home))
    assert [line.split()[0] for line in lines] == [ID_B, ID_A]  # differ in the last digit only
    assert "First" in " ".join(ok_lines(run(ID_A, cwd=project, home=home)))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("abc", "not a session id: 'abc' (an id or its first 4 or more hex digits)"),
        ("a-b-c", "not a session id: 'a-b-c' (an id or its first 4 or more hex digits)"),
        ("0" * 37, f"not a session id: '{'0' * 37}' (an id or its first 4 or more hex digits)"),
        ("xyz!", "'xyz!' is neither a notebook (.ipynb) nor a session id (4 or more hex digits)"),
        ("abcd.ipynb", "no such file: abcd.ipynb"),
    ],
)
def test_malformed_id(home: Path, project: Path, target: str, message: str) -> None:
    result = run(target, cwd=project, home=home)
    assert one_line_error(result) == f"jupyter recap: {message}"
    assert result.stdout == ""


def test_an_existing_file_named_like_an_id_is_a_notebook(home: Path, project: Path) -> None:
    (project / "cafe").write_text("not json", encoding="utf-8")
    line = one_line_error(run("cafe", cwd=project, home=home))
    assert line.startswith("jupyter recap: cafe is not a readable notebook: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--all"], "--all and --limit only go with --sessions"),
        (["x.ipynb", "--limit", "3"], "--all and --limit only go with --sessions"),
        (["--sessions", "--limit", "0"], "--limit must be 1 or more, not 0"),
        (["--sessions", "x.ipynb", "--all"], "--sessions takes a NOTEBOOK or --all, not both"),
    ],
)
def test_bad_listing_options(home: Path, project: Path, args: list[str], message: str) -> None:
    result = run(*args, cwd=project, home=home)
    assert one_line_error(result) == f"jupyter recap: {message}"
    assert one_line_error(run("--sessions", "--limit", "x", cwd=project, home=home))


# -- in process: the listing path stays light and fast -------------------------------------------


def write_headers(home: Path, count: int) -> None:
    """``count`` stored headers, written directly (without fsync) to keep the test quick."""
    home.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for n in range(count):
        record = SessionRecord(
            id=uuid7(),
            created=now - n,
            updated=now - n * 37,
            notebook=f"/data/nb{n % 40}.ipynb",
            title=f"prompt {n}",
            turns=1 + n % 5,
            entries=3,
        )
        (home / f"{record.id}.json").write_text(json.dumps(record.to_dict()), encoding="utf-8")


def test_listing_a_thousand_sessions_is_fast(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_headers(home, 1000)
    assert len(SessionStore().records()) == 1000
    started = time.perf_counter()
    assert cli.main(["--sessions", "--all", "--limit", "1000"]) == 0
    elapsed = time.perf_counter() - started
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1000 and squash(lines[0]).endswith(" prompt 0 [nb0.ipynb]")
    assert elapsed < 1.0, f"{elapsed * 1000:.0f} ms"  # typically ~30 ms; generous for slow CI


def test_listing_imports_no_kernel_or_network_stack(home: Path) -> None:
    write_headers(home, 20)
    code = (
        "import sys; from jupyter_recap import cli; rc = cli.main(['--sessions', '--all']); "
        "heavy = [m for m in ('IPython', 'httpx', 'tornado', 'traitlets', 'ipywidgets') "
        "if m in sys.modules]; print(rc, heavy, file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "JUPYTER_RECAP_HOME": str(home)},
        timeout=60,
    )
    assert result.stderr.strip() == "0 []"
    assert len(result.stdout.splitlines()) == 15


# -- tasks and project memory in a recap from the shell ---------------------------------------


def test_recap_of_a_notebook_uses_its_tasks_and_notes(home: Path, project: Path) -> None:
    notebook = project / "loader.ipynb"
    # nbformat has no annotations.
    cell = nbformat.v4.new_code_cell("%%ai openai:gpt-4o-mini\nfix the CSV loader")  # type: ignore[no-untyped-call]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)  # type: ignore[no-untyped-call]
    t = Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    t.user("fix the CSV loader", model="openai:gpt-4o-mini")
    t.assistant("I read the loader.")
    t.outcome("ok")
    writer.set_tasks([{"text": "pin the date format", "status": "in_progress"}])
    writer.close()
    MemoryStore(project).remember("command", "pytest -x tests/test_loader.py")
    for target in (notebook, writer.id):
        result = run(target, cwd=project, home=home)
        # a notebook is answered from its stored session, and says so
        lines = from_store(result, writer.id) if target == notebook else ok_lines(result)
        assert lines[0].endswith("Next: Pin the date format (0 of 1 tasks done).")
    # the listing shows each session's progress, and --json carries it
    listing = ok_lines(run("--sessions", notebook, cwd=project, home=home))
    assert listing[-1].strip() == "tasks ............ 0/1"
    listed = json.loads(run("--sessions", notebook, "--json", cwd=project, home=home).stdout)
    assert listed[0]["progress"] == "tasks ............ 0/1"
    # a model sees both the list and the notes; with memory off, only the list
    sent = model_request(notebook, project, home)
    assert "Tasks 0/1 done; in progress: pin the date format" in sent
    assert "[command] pytest -x tests/test_loader.py" in sent
    sent = model_request(notebook, project, home, JUPYTER_RECAP_MEMORY="0")
    assert "pin the date format" in sent and "pytest -x" not in sent


def model_request(notebook: Path, project: Path, home: Path, **env: str) -> str:
    """What ``jupyter recap NOTEBOOK --model openai:…`` sends to a local fake server."""
    with FakeLLM() as fake:
        result = run(
            notebook,
            "--model",
            "openai:x",
            cwd=project,
            home=home,
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=fake.url,
            **env,
        )
        assert result.returncode == 0, result.stderr
        return json.dumps(fake.requests[0].body)


def test_notes_of_a_project(home: Path, project: Path) -> None:
    (project / ".git").mkdir()
    store = MemoryStore(project)
    store.remember("gotcha", "the loader drops rows with a BOM")
    store.remember("command", "pytest -x tests/test_loader.py")
    store.recall("BOM")
    expected = [
        f"2 notes for {project} (1 recalled at least once)",
        " hits  kind      note",
        "    1  gotcha    the loader drops rows with a BOM",
        "    0  command   pytest -x tests/test_loader.py",
    ]
    assert ok_lines(run("--notes", cwd=project / "sub", home=home)) == expected
    notebook = project / "sub" / "loader.ipynb"
    notebook.write_text("{}")
    assert ok_lines(run("--notes", notebook, cwd=home.parent, home=home)) == expected
    listed = json.loads(run("--notes", "--json", cwd=project, home=home).stdout)
    assert listed["project"] == str(project)
    assert [(n["kind"], n["hits"]) for n in listed["notes"]] == [("gotcha", 1), ("command", 0)]
    assert MemoryStore(project).entries()[1].hits == 0  # listing counts no hits


def test_notes_errors(home: Path, project: Path) -> None:
    assert ok_lines(run("--notes", cwd=project, home=home)) == [f"No notes yet for {project}."]
    missing = one_line_error(run("--notes", project / "nope.ipynb", cwd=project, home=home))
    assert missing.startswith("jupyter recap: no such notebook or directory:")
    both = one_line_error(run("--notes", "--sessions", cwd=project, home=home))
    assert both == "jupyter recap: --sessions and --notes do not go together"
    off = run("--notes", cwd=project, home=home, JUPYTER_RECAP_MEMORY="0")
    assert off.returncode == 1 and off.stdout == ""
    assert off.stderr == "jupyter recap: project memory is turned off (JUPYTER_RECAP_MEMORY=0)\n"
    MemoryStore(project).remember("fact", "soon garbled")
    MemoryStore(project).path.write_text("garbage")
    result = run("--notes", cwd=project, home=home)
    assert result.returncode == 0 and result.stdout == f"No notes yet for {project}.\n"
    assert result.stderr.startswith("jupyter recap: warning: the project memory file was corrupt")
    assert result.stderr.count("\n") == 1


# -- a notebook whose agent ran from plain cells: its stored session is the story --------------


def save_notebook(path: Path, *sources: str) -> Path:
    """Save a notebook of plain code cells (``%%ai`` ones too, if a source starts so)."""
    # nbformat has no annotations.
    cells = [nbformat.v4.new_code_cell(source) for source in sources]  # type: ignore[no-untyped-call]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)  # type: ignore[no-untyped-call]
    return path


def wait_for_stored_turn(home: Path, notebook: str, seconds: float = 20) -> SessionRecord:
    """The kernel's session of ``notebook`` once its debounced write holds a finished turn."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        store = SessionStore(home)
        for record in store.records(notebook):
            _, transcript = store.load(record.id)
            if any(entry.kind == "outcome" for entry in transcript):
                return record
        time.sleep(0.1)
    raise AssertionError(f"no session of {notebook} was stored within {seconds} s")


PLAIN_AGENT_CELL = """\
import jupyter_recap as jr

def refund(order, amount):  # stands in for an agent framework the extension does not know
    t = jr.current()
    ask = f"Refund order {order} in full: {amount} EUR for the returned monitor"
    with t.turn(ask, model="openai:gpt-4o-mini"):
        t.tool_call("issue_refund", {"order": order, "amount": amount})
        t.tool_result("issue_refund", "refund R-77 issued")
        t.assistant(f"Refunded {amount} EUR on {order}. Next: email the customer the receipt.")
    return "R-77"

refund("A-1001", 199)
"""


@pytest.mark.timeout(180)
def test_plain_cell_agent_is_recapped_from_the_kernels_stored_session(
    home: Path, project: Path
) -> None:
    """Regression (issue 21.5): "no agent cells … (looked for %%ai, %%agent)", exit 1, although
    the kernel had stored the session."""
    from kernelutil import execute, running_kernel

    notebook = project / "refunds.ipynb"
    env = {"JUPYTER_RECAP_HOME": str(home), "JPY_SESSION_NAME": str(notebook)}
    env["JUPYTER_RECAP_AUTO"] = "0"
    with running_kernel(env) as kc:
        execute(kc, "%load_ext jupyter_recap")
        execute(kc, PLAIN_AGENT_CELL)
        record = wait_for_stored_turn(home, str(notebook))
        # The person saves the notebook: two plain code cells, no agent magic anywhere.
        save_notebook(notebook, "%load_ext jupyter_recap", PLAIN_AGENT_CELL)
        # ... and asks from a shell while the kernel still runs (and holds the session).
        result = run("refunds.ipynb", "--model", "offline", cwd=project, home=home)
    text = " ".join(from_store(result, record.id))
    assert "A-1001" in text and "199 EUR" in text
    assert "email the customer the receipt" in text.lower()
    assert text.endswith("— offline")
    payload = json.loads(
        run(notebook, "--json", "--model", "offline", cwd=project, home=home).stdout
    )
    assert payload["session_id"] == record.id and payload["model"] == "offline"


PYDANTIC_AI_CELLS = """\
from concurrent.futures import ThreadPoolExecutor
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url={url!r}, api_key="sk-x"))
agent = Agent(model, name="shipping_agent", instructions="Be brief.")

@agent.tool_plain
def track_parcel(parcel: str) -> str:
    return f"{{parcel}} is held at customs in Basel"

# The kernel's event loop is running: run_sync goes to a worker thread.
result = ThreadPoolExecutor(1).submit(agent.run_sync, "Where is parcel P-4471?").result()
print(result.output)
"""


@pytest.mark.timeout(240)
def test_captured_framework_run_under_a_linked_server_root(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A pydantic-ai run in a plain cell, captured by the extension; the server's root is a
    link to the project (as the kernel gets the path), the shell uses the real directory."""
    needs.modules("pydantic_ai")
    from capturekit import kernel_env
    from fakellm import answer, tool_calls
    from kernelutil import execute, running_kernel

    root = tmp_path / "server-root"
    root.symlink_to(project, target_is_directory=True)
    as_the_server_says = str(root / "shipping.ipynb")
    with FakeLLM() as fake:
        env = {**kernel_env(fake), "JUPYTER_RECAP_HOME": str(home)}
        env["JPY_SESSION_NAME"] = as_the_server_says
        fake.respond(
            tool_calls(("track_parcel", {"parcel": "P-4471"})),
            answer("P-4471 is held at customs in Basel. Next: send the customs form."),
        )
        cells = PYDANTIC_AI_CELLS.format(url=fake.url + "/v1")
        with running_kernel(env) as kc:
            execute(kc, "%load_ext jupyter_recap")
            out = execute(kc, cells, timeout=120)
            assert not [m for m in out if m["msg_type"] == "error"], out
            record = wait_for_stored_turn(home, as_the_server_says)
        save_notebook(project / "shipping.ipynb", cells)
    assert record.notebook == as_the_server_says  # the link, not the real path
    result = run("shipping.ipynb", "--model", "offline", cwd=project, home=home)
    text = " ".join(from_store(result, record.id))
    assert "P-4471" in text and "customs form" in text, text


# The faster cases write the session as the kernel does (SessionWriter), without a kernel.

KEY = {"OPENAI_API_KEY": "sk-test"}  # nothing is sent: --dry-run
LEDGER = "reconcile the March ledger against the bank export"
CHURN = "plot churn by cohort for the last two quarters"


def test_the_newest_session_of_that_notebook_only(home: Path, project: Path) -> None:
    notebook = save_notebook(
        project / "ledger.ipynb", "import pandas as pd", "df = pd.read_csv('x')"
    )
    make_session("an older story of this notebook", notebook)
    newest = make_session(LEDGER, notebook, turns=2)
    make_session("a newer story of another notebook", project / "other.ipynb")
    lines = from_store(run("ledger.ipynb", cwd=project, home=home), newest, turns=2)
    assert "Reconcile the March ledger" in " ".join(lines) and lines[-1] == "— offline"
    # an absolute path, from elsewhere, finds the same session
    elsewhere = run(notebook, cwd=home.parent, home=home)
    assert from_store(elsewhere, newest, turns=2) == lines


def test_stored_session_with_json_dry_run_and_model_options(home: Path, project: Path) -> None:
    notebook = save_notebook(project / "ledger.ipynb", "run_the_agent()")
    session = make_session(LEDGER, notebook)
    payload = json.loads(from_store(run(notebook, "--json", cwd=project, home=home), session)[0])
    assert payload["session_id"] == session and payload["reason"] == "ok"
    assert "Reconcile the March ledger" in payload["recap"]
    dry = from_store(
        run(notebook, "--dry-run", "--model", "openai:x", cwd=project, home=home, **KEY), session
    )
    assert dry[0].startswith("dry run: nothing was sent; openai:x would get ")
    assert LEDGER in "\n".join(dry)
    bad = run(notebook, "--model", "nonsense-provider:m", cwd=project, home=home)
    assert bad.returncode == 2 and bad.stdout == ""
    assert (
        bad.stderr.splitlines()[-1].startswith("jupyter recap: ")
        and "nonsense-provider" in bad.stderr
    )
    env = offline_env(JUPYTER_RECAP_HOME=str(home))
    del env["JUPYTER_RECAP_MODEL"]
    offline = run_cli(notebook, "--model", "offline", cwd=project, env=env)
    assert from_store(offline, session)[-1] == "— offline"


def test_a_notebook_reached_through_links(home: Path, project: Path, tmp_path: Path) -> None:
    notebook = save_notebook(project / "ledger.ipynb", "run_the_agent()")
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(project, target_is_directory=True)
    (project / "alias.ipynb").symlink_to(notebook)
    # stored through the linked directory; asked by the real path, and through a linked file
    through_link = make_session(LEDGER, linked_dir / "ledger.ipynb")
    assert from_store(run("ledger.ipynb", cwd=project, home=home), through_link)
    assert from_store(run("alias.ipynb", cwd=project, home=home), through_link)
    # stored by the real path; asked through the linked directory
    real = make_session(CHURN, notebook)
    assert from_store(run(linked_dir / "ledger.ipynb", cwd=tmp_path, home=home), real)
    listing = ok_lines(run("--sessions", linked_dir / "ledger.ipynb", cwd=tmp_path, home=home))
    assert [title_of(line) for line in listing] == [CHURN, LEDGER]


@pytest.mark.parametrize("saved", ["before", "after"])
def test_the_newer_of_the_file_and_the_stored_session(
    home: Path, project: Path, saved: str
) -> None:
    """The file's latest agent cell is not in the stored session (run where the extension was
    not loaded): the file wins when saved after the session's last write, else the session."""
    notebook = save_notebook(project / "mixed.ipynb", f"%%ai openai:gpt-4o-mini\n{CHURN}")
    session = make_session(LEDGER, notebook)
    updated = SessionStore(home).header(session).updated  # type: ignore[union-attr]
    moment = updated + 60 if saved == "after" else updated - 60
    os.utime(notebook, (moment, moment))
    result = run(notebook, cwd=project, home=home)
    if saved == "after":
        assert result.returncode == 0, result.stderr
        assert "Plot churn by cohort" in result.stdout and "ledger" not in result.stdout
        note = result.stderr.splitlines()
        assert len(note) == 1
        assert note[0].startswith(
            f"jupyter recap: reading {notebook}: it holds agent turns newer than its stored "
            f"session {session[:8]}"
        )
    else:
        assert "Reconcile the March ledger" in " ".join(from_store(result, session))


def test_agent_cells_the_session_recorded_are_recapped_from_the_session(
    home: Path, project: Path
) -> None:
    """A %%ai notebook saved after the kernel stored its turns: the session holds the same
    prompts and more (here the tool call and the next step), so it is the story told."""
    notebook = save_notebook(project / "ai.ipynb", f"%%ai openai:gpt-4o-mini\n  {CHURN}\n")
    t = Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    t.user(CHURN, model="openai:gpt-4o-mini", cell_id="c1")
    t.tool_call("load_table", {"name": "cohorts"})
    t.assistant("Plotted Q3 and Q4. Next: split the cohorts by plan.")
    t.outcome("ok")
    writer.close()
    later = time.time() + 120
    os.utime(notebook, (later, later))  # the autosave came after the kernel's last write
    text = " ".join(from_store(run("ai.ipynb", cwd=project, home=home), writer.id))
    assert "Next: Split the cohorts by plan." in text


def test_unsafe_store_warns_and_reads_the_file(home: Path, project: Path) -> None:
    plain = save_notebook(project / "plain.ipynb", "run_the_agent()")
    with_ai = save_notebook(project / "ai.ipynb", f"%%ai openai:gpt-4o-mini\n{CHURN}")
    make_session(LEDGER, plain)
    make_session(LEDGER, with_ai)
    home.chmod(0o777)  # someone else could have written what is stored: not believed
    try:
        result = run("ai.ipynb", cwd=project, home=home)
        assert result.returncode == 0, result.stderr
        assert "Plot churn by cohort" in result.stdout and "ledger" not in result.stdout
        (warning,) = result.stderr.splitlines()
        assert warning.startswith("jupyter recap: warning: the session store was not read (")
        assert "others can write to it" in warning and warning.endswith("; reading ai.ipynb")
        nothing = run("plain.ipynb", cwd=project, home=home)
        assert nothing.returncode == 1 and nothing.stdout == ""
        warning, reason = nothing.stderr.splitlines()
        assert warning.startswith("jupyter recap: warning: the session store was not read (")
        assert reason.startswith("jupyter recap: no agent cells in plain.ipynb ")
    finally:
        home.chmod(0o700)


def test_unreadable_sessions_fall_back_to_older_ones_then_to_the_file(
    home: Path, project: Path
) -> None:
    notebook = save_notebook(project / "ledger.ipynb", f"%%ai openai:gpt-4o-mini\n{CHURN}")
    older = make_session(LEDGER, notebook)
    newest = make_session("a story whose entries were lost", notebook)
    store = SessionStore(home)
    store.entries_path(newest).write_bytes(b"\x00garbage\n{not json\n")
    result = run(notebook, cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    warning, note = result.stderr.splitlines()
    assert warning == (f"jupyter recap: warning: stored session {newest} has no readable turns")
    assert note.startswith("jupyter recap: from the stored session ")
    assert older.startswith(note.split()[6]) and "Reconcile the March ledger" in result.stdout
    store.entries_path(older).unlink()
    result = run(notebook, cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    assert "Plot churn by cohort" in result.stdout  # the file's %%ai cell
    (warning,) = result.stderr.splitlines()
    assert warning.startswith(f"jupyter recap: warning: stored session {newest} has no readable")
    assert warning.endswith(f"readable turns (and 1 more unreadable); reading {notebook}")


def test_no_agent_cells_and_no_session_of_it_still_exits_1(home: Path, project: Path) -> None:
    save_notebook(project / "plain.ipynb", "import pandas as pd")
    make_session(LEDGER, project / "other.ipynb")  # another notebook's session is not its story
    make_session(LEDGER, project / "sub" / "plain.ipynb")  # nor one of the same name elsewhere
    result = run("plain.ipynb", "--json", cwd=project, home=home)
    line = one_line_error(result, 1)
    assert line == (
        "jupyter recap: no agent cells in plain.ipynb (looked for %%ai, %%agent) "
        "and no stored session of it"
    )
    assert json.loads(result.stdout)["recap"] is None


# -- a notebook's story: a short newest session is framed by the earlier work (issue 35.6) --------

REFUND_TURNS = (
    (
        "Reconcile the refunds ledger against the payment provider's March export",
        "I loaded ledger.csv and the provider export: 412 refunds match, two differ (A-1004 "
        "and A-1017). A-1004 was refunded 249 EUR in the ledger but 50 EUR by the provider: "
        "the monitor was kept and only the cables went back.",
    ),
    (
        "Which orders differ, and by how much?",
        "A-1004 differs by 199 EUR (the monitor) and A-1017 by 12.50 EUR (a shipping fee the "
        "provider refunded twice). Everything else matches to the cent.",
    ),
    (
        "Refund the cables on order A-1004 but not the monitor",
        "Done: the ledger now refunds 50 EUR on A-1004 for the cables, the monitor stays "
        "charged. The provider already agrees with this amount.",
    ),
    (
        "Write the corrected ledger to refunds_fixed.csv",
        "Wrote refunds_fixed.csv with 414 rows; A-1004 is corrected and A-1017 is flagged for "
        "finance because the double refund has to be reclaimed from the provider.",
    ),
    (
        "Draft the email to finance about the two mismatches",
        "Drafted the email: it explains A-1004 (cables only, 50 EUR) and asks finance to "
        "reclaim the 12.50 EUR paid twice on A-1017. Next: send the email to finance.",
    ),
)


def refund_story(notebook: Path) -> str:
    """The notebook's work, stored as its kernel stores it: five substantial turns."""
    t = Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    for prompt, answer in REFUND_TURNS:
        t.user(prompt, model="openai:gpt-4o-mini")
        t.assistant(answer)
        t.outcome("ok")
    writer.close()
    time.sleep(0.002)
    return writer.id


def side_run(notebook: Path) -> str:
    """Ten seconds in a second kernel while the first held the notebook's session."""
    t = Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    for prompt in ("hi", "are you there", "say ok"):
        t.user(prompt, model="openai:gpt-4o-mini")
        t.assistant("ok")
        t.outcome("ok")
    writer.close()
    time.sleep(0.002)
    return writer.id


def named_sessions(stderr: str) -> list[str]:
    """The session prefixes of the stderr line that says where a recap comes from."""
    (line,) = stderr.splitlines()
    assert line.startswith("jupyter recap: from the stored session"), line
    return re.findall(r"\b[0-9a-f]{8}[0-9a-f-]*\b", line)


def test_a_side_run_does_not_replace_the_notebooks_story(home: Path, project: Path) -> None:
    notebook = save_notebook(project / "refunds.ipynb", "run_the_agent()")
    work = refund_story(notebook)
    side = side_run(notebook)
    result = run("refunds.ipynb", cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.splitlines())
    assert "Reconcile the refunds ledger" in text, text  # the notebook's task, not "hi"
    # stderr names both sessions, oldest first, and why the earlier one is there
    shown = named_sessions(result.stderr)
    assert len(shown) == 2 and work.startswith(shown[0]) and side.startswith(shown[1])
    assert re.fullmatch(
        r"jupyter recap: from the stored sessions \S+ \(\d\d:\d\d, 5 turns\) and \S+ "
        r"\(\d\d:\d\d, 3 turns\); the newest is framed by the earlier one\n",
        result.stderr,
    ), result.stderr
    payload = json.loads(run(notebook, "--json", cwd=project, home=home).stdout)
    assert payload["session_id"] == side and payload["sessions"] == [work, side]
    assert "Reconcile the refunds ledger" in payload["recap"]
    # a model is sent the notebook's task as the framing, the side run as the recent detail
    sent = json.loads(model_request(notebook, project, home))
    user = sent["messages"][-1]["content"]
    assert "Original task: Reconcile the refunds ledger" in user
    assert user.index("User: say ok") > user.index("Original task:")


def test_session_option_picks_exactly_one(home: Path, project: Path) -> None:
    notebook = save_notebook(project / "refunds.ipynb", "run_the_agent()")
    work = refund_story(notebook)
    side = side_run(notebook)
    # the prefix the story's stderr line shows is enough to pick that session
    shown = named_sessions(run("refunds.ipynb", cwd=project, home=home).stderr)[1]
    only_side = run("refunds.ipynb", "--session", shown, cwd=project, home=home)
    text = " ".join(from_store(only_side, side, turns=3))
    assert "Reconcile" not in text and "refund" not in text.lower()
    only_work = run("refunds.ipynb", "--session", work, "--json", cwd=project, home=home)
    payload = json.loads(from_store(only_work, work, turns=5)[0])
    assert payload["session_id"] == work and payload["sessions"] == [work]
    assert "Send the email to finance" in payload["recap"]
    # alone, --session is `jupyter recap ID`
    alone = ok_lines(run("--session", side, cwd=project, home=home))
    assert alone == ok_lines(run(side, cwd=project, home=home))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["refunds.ipynb", "--session", "cafe"], "no session matches 'cafe'"),
        (
            ["refunds.ipynb", "--session", "xyz"],
            "not a session id: 'xyz' (an id or its first 4 or more hex digits)",
        ),
        (["--sessions", "--session", "cafe"], "--session goes with a notebook, or alone"),
        (["--notes", "--session", "cafe"], "--session goes with a notebook, or alone"),
        (["cafe1234", "--session", "cafe"], "a session ID and --session cafe: give one"),
        (["talk.chat", "--session", "cafe"], "--session goes with a notebook, not a .chat file"),
        (["missing.ipynb", "--session", "cafe"], "no such file: missing.ipynb"),
    ],
)
def test_session_option_bad_usage(home: Path, project: Path, args: list[str], message: str) -> None:
    save_notebook(project / "refunds.ipynb", "run_the_agent()")
    refund_story(project / "refunds.ipynb")
    result = run(*args, cwd=project, home=home)
    assert one_line_error(result) == f"jupyter recap: {message}"
    assert result.stdout == ""


def test_session_option_refuses_another_notebooks_session(home: Path, project: Path) -> None:
    notebook = save_notebook(project / "refunds.ipynb", "run_the_agent()")
    refund_story(notebook)
    other = make_session(LEDGER, project / "ledger.ipynb")
    result = run(notebook, "--session", other, cwd=project, home=home)
    assert one_line_error(result) == (
        f"jupyter recap: session {other} is not one of {notebook}'s sessions "
        "(it is of ledger.ipynb)"
    )
