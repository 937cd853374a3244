"""Terminal escapes in model output, prompts, titles, notes or task text never reach a screen.

A recap is model output, and a title or a note is whatever an agent or a notebook wrote: any of
them can hold ``ESC ] 52`` (write the clipboard), ``ESC ] 0`` (retitle the terminal),
``ESC [ 2 J`` (clear it), ``ESC [ 8 m`` (hide what follows), an SGR colour (which JupyterLab's
stream output renders too) or U+202E (reverse what is read). Each place that shows such text —
the ``jupyter recap`` command, the magics in terminal IPython, and a real kernel's stream and
``text/plain`` outputs — must show the words and none of the controls, while ``--json`` keeps
the exact text (escaped, so that the JSON itself is inert too).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from cliutil import offline_env, run_cli
from fakellm import FakeLLM, status
from kernelutil import execute, running_kernel, stream_text

import jupyter_recap as jr
from jupyter_recap.focus.report import CellCounts, agent_report
from jupyter_recap.focus.validate import ID_CHARS, parse_report
from jupyter_recap.pipeline.prompt import extract_recap
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessions import SessionWriter

CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: sets the clipboard to "echo pwned"
RETITLE = "\x1b]0;pwned\x07"  # OSC 0: the window title
CLEAR = "\x1b[2J"  # CSI 2 J: clear the screen
HIDE = "\x1b[8m"  # SGR 8: conceal what follows
RED = "\x1b[31m"  # SGR 31: recolour what follows (JupyterLab renders it in stream output)
C1_CSI = "\x9b2J"  # the one-byte C1 form of CSI 2 J
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reorders what is read
EVERYTHING = CLIPBOARD + RETITLE + CLEAR + HIDE + RED + C1_CSI + RLO


def dirty(*words: str) -> str:
    """``words`` with every hostile sequence between them."""
    return f" {EVERYTHING}".join(words)


#: A model id as an agent cell may name it (the active model, echoed in every recap's footer).
MODEL = f"openai:gpt-4o-mini{RETITLE}{RLO}"
#: A recap as a hostile (or confused) model may answer it.
ANSWER = (
    f"<recap>{dirty('You are fixing', 'the ledger export.', 'Next: rerun', 'the totals.')}</recap>"
)
BIDI = {chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def controls_in(text: str) -> list[str]:
    """Every character of ``text`` a terminal or a bidi renderer would act on (tab, newline ok)."""
    return [
        repr(c)
        for c in text
        if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0 or c in BIDI
    ]


def assert_inert(*texts: str) -> None:
    for text in texts:
        assert controls_in(text) == [], text


def shows(text: str, *words: str) -> None:
    """Each of ``words`` is still readable in ``text`` (spacing aside)."""
    flat = " ".join(text.split())
    for word in words:
        assert word in flat, (word, text)


# -- extraction -------------------------------------------------------------------------------


def test_extracted_recap_text_is_plain() -> None:
    recap = extract_recap(ANSWER)
    assert recap is not None
    assert_inert(recap)
    shows(recap, "You are fixing", "the ledger export.", "Next: rerun", "the totals.")


def test_what_a_kernel_reports_to_the_agents_panel_is_plain_and_fits() -> None:
    """The agents row and its notification show the error line, the recap and its model as the
    kernel reports them: "All tests \u202edeliaf\u202c passed." used to read "All tests failed
    passed.", and a model id over the server's limit cost the whole report."""
    t = Transcript()
    t.user("run the test suite", cell_id="cell-1")
    t.outcome("errored", dirty("All tests \u202edeliaf\u202c passed.", "\x07exit 1"))
    shown = {"text": dirty("You ran", "the suite.", "Next: In[3]."), "model": "m" * 400 + RLO}
    cells = CellCounts()
    cells.note("cell-3", 3)
    report = agent_report(t, cells=cells, recap=shown)
    assert report["error"] is not None and report["recap"] is not None
    assert_inert(report["error"], report["recap"]["text"], report["recap"]["model"])
    shows(report["error"], "All tests deliaf passed.", "exit 1")
    text = report["recap"]["text"]
    shows(text, "You ran", "the suite.", "Next: In[3].")
    link = report["recap"]["links"][0]  # found in the text as sent, so it covers "In[3]"
    assert (text[link["start"] : link["end"]], link["cell_id"]) == ("In[3]", "cell-3")
    assert len(report["recap"]["model"]) == ID_CHARS
    board = parse_report(json.loads(json.dumps(report)))  # the server takes all of it
    assert board.ignored == () and board.recap == report["recap"] and board.error == report["error"]


# -- jupyter recap ----------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(path))
    return path


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(text=ANSWER) as server:
        yield server


def cli(
    *args: str | Path, cwd: Path, home: Path, fake: FakeLLM | None = None
) -> subprocess.CompletedProcess[str]:
    env = offline_env(JUPYTER_RECAP_HOME=str(home))
    if fake is not None:  # "auto": the active model answers, through the local fake server
        env.update(JUPYTER_RECAP_MODEL="auto", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake.url)
    return run_cli(*args, cwd=cwd, env=env)


def printed(result: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert result.returncode == code, result.stderr
    assert_inert(result.stdout, result.stderr)
    return result.stdout


def stored_session(notebook: Path) -> str:
    """A finished session whose title, reply, last recap, tasks and model are all hostile."""
    t = Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    t.user(dirty("fix", "the ledger export"), model=MODEL)
    t.assistant(dirty("Done.", "Next: rerun the totals."))
    t.outcome("ok")
    t.recap(dirty("You were fixing", "the export."), model=MODEL)
    writer.set_tasks([{"text": dirty("rerun", "the totals"), "status": "in_progress"}])
    writer.close()
    return writer.id


def test_cli_recap_of_a_notebook(tmp_path: Path, home: Path, fake: FakeLLM) -> None:
    notebook = tmp_path / "ledger.ipynb"
    # nbformat's builders and writer carry no annotations
    cell = nbformat.v4.new_code_cell(f"%%ai {MODEL}\n{dirty('fix', 'the ledger export')}")  # type: ignore[no-untyped-call]
    cell.outputs = [nbformat.v4.new_output("stream", text=dirty("Done.", "Next: rerun."))]  # type: ignore[no-untyped-call]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)  # type: ignore[no-untyped-call]

    out = printed(cli(notebook, cwd=tmp_path, home=home, fake=fake))
    shows(out, "You are fixing", "the ledger export.", "Next: rerun", "the totals.")
    shows(out, "— openai:gpt-4o-mini")
    assert fake.requests and fake.requests[0].body["model"] == MODEL[len("openai:") :]

    payload = json.loads(printed(cli(notebook, "--json", cwd=tmp_path, home=home, fake=fake)))
    assert payload["model"] == MODEL  # the exact id, escaped by JSON
    shows(payload["recap"], "You are fixing", "the ledger export.")


def test_cli_recap_of_a_session(tmp_path: Path, home: Path, fake: FakeLLM) -> None:
    session = stored_session(tmp_path / "ledger.ipynb")
    out = printed(cli(session[:8], cwd=tmp_path, home=home, fake=fake))
    shows(out, "You are fixing", "Next: rerun", "— openai:gpt-4o-mini")
    payload = json.loads(printed(cli(session, "--json", cwd=tmp_path, home=home, fake=fake)))
    assert payload["session_id"] == session and payload["model"] == MODEL


def test_cli_session_listing(tmp_path: Path, home: Path) -> None:
    notebook = tmp_path / f"led{RETITLE}ger.ipynb"  # a file name can hold escapes too
    session = stored_session(notebook)
    out = printed(cli("--sessions", "--all", cwd=tmp_path, home=home))
    shows(out, session[:8], "fix", "the ledger export", "You were fixing", "the export.")
    shows(out, "tasks", "0/1", "ledger.ipynb")

    (listed,) = json.loads(printed(cli("--sessions", "--all", "--json", cwd=tmp_path, home=home)))
    assert listed["first_prompt"] == dirty("fix", "the ledger export")
    assert listed["title"] == dirty("Fixing", "the export")
    assert listed["last_recap"] == dirty("You were fixing", "the export.")
    assert listed["notebook"] == str(notebook)


def test_cli_notes(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    note = dirty("the export", "rounds half to even")
    MemoryStore(project).remember("gotcha", note)
    out = printed(cli("--notes", project, cwd=tmp_path, home=home))
    shows(out, "gotcha", "the export", "rounds half to even")
    listed = json.loads(printed(cli("--notes", project, "--json", cwd=tmp_path, home=home)))
    assert [n["text"] for n in listed["notes"]] == [note]


def test_cli_reasons_on_stderr(tmp_path: Path, home: Path) -> None:
    notebook = tmp_path / f"no{CLEAR}agent{RLO}.ipynb"
    # nbformat's builders and writer carry no annotations
    cell = nbformat.v4.new_code_cell("1 + 1")  # type: ignore[no-untyped-call]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)  # type: ignore[no-untyped-call]
    result = cli(notebook, cwd=tmp_path, home=home)
    printed(result, code=1)
    shows(result.stderr, "no agent cells in", "agent.ipynb")


# -- terminal IPython -------------------------------------------------------------------------


@pytest.fixture
def terminal(shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeLLM) -> Any:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "ledger.ipynb"))
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    shell.run_line_magic("load_ext", "jupyter_recap")
    t = jr.current()
    t.user(dirty("fix", "the ledger export"), model=MODEL)
    t.assistant(dirty("Done.", "Next: rerun the totals."))
    t.outcome("ok")
    return shell


def magic(shell: Any, capsys: pytest.CaptureFixture[str], name: str, line: str = "") -> str:
    capsys.readouterr()
    shell.run_line_magic(name, line)
    captured = capsys.readouterr()
    assert_inert(captured.out, captured.err)
    return captured.out


def test_magics_in_terminal_ipython(
    terminal: Any, capsys: pytest.CaptureFixture[str], fake: FakeLLM
) -> None:
    out = magic(terminal, capsys, "recap")
    shows(out, "✦ recap · openai:gpt-4o-mini", "You are fixing", "Next: rerun", "the totals.")
    shows(magic(terminal, capsys, "recap", "status"), "openai:gpt-4o-mini", "last recap:")

    # a provider's error message is model-server text too
    fake.respond(status(500, dirty("upstream", "exploded")))
    shows(magic(terminal, capsys, "recap"), "no recap", "upstream", "exploded")

    listing = magic(terminal, capsys, "recap", "sessions")
    shows(listing, "fix", "the ledger export", "You are fixing")


def test_work_state_magics_in_terminal_ipython(
    terminal: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    jr.todo_write([{"text": dirty("rerun", "the totals"), "status": "in_progress"}])
    shows(magic(terminal, capsys, "todos"), "[~] rerun", "the totals")
    assert jr.remember("gotcha", dirty("the export", "rounds half to even")) is not None
    shows(magic(terminal, capsys, "remember", dirty("command", "make export")), "make export")
    shows(magic(terminal, capsys, "notes"), "gotcha", "the export", "rounds half to even")
    shows(magic(terminal, capsys, "notes", "export"), "[gotcha] the export", "[command]")
    shows(magic(terminal, capsys, "forget", "make export"), "forgot [command]", "make export")


# -- a real kernel (what JupyterLab's stream and text/plain outputs would render) -------------


def shown_text(messages: list[dict[str, Any]]) -> str:
    """Every stream and ``text/plain`` text a frontend would render from ``messages``."""
    parts = [stream_text(messages, "stdout"), stream_text(messages, "stderr")]
    for m in messages:
        if m["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            parts.append(str(m["content"]["data"].get("text/plain", "")))
        elif m["msg_type"] == "error":  # IPython colours its tracebacks: none is expected
            raise AssertionError(f"{m['content']['ename']}: {m['content']['evalue']}")
    return "\n".join(parts)


def test_magics_in_a_real_kernel(tmp_path: Path, home: Path, fake: FakeLLM) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    notebook = project / "ledger.ipynb"
    env = {
        "JUPYTER_RECAP_HOME": str(home),
        "JUPYTER_RECAP_MODEL": "auto",
        "JPY_SESSION_NAME": str(notebook),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": fake.url,
        "JUPYTER_RECAP_AUTO": "0",
        "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log"),
    }
    stored_session(notebook)  # an earlier session of this notebook, resumed on load
    MemoryStore(project).remember("gotcha", dirty("the export", "rounds half to even"))
    hostile = json.dumps(dirty("rerun", "the totals"))
    with running_kernel(env) as kc:
        cells = [
            "%load_ext jupyter_recap",
            # then the banner's text/plain form (what jupyter console and nbconvert show)
            "%recap\nfrom jupyter_recap.ipython.extension import extension_for\n"
            "extension_for(get_ipython()).banner",
            "%recap status",
            "%recap sessions",
            f"import jupyter_recap as jr\njr.todo_write([{{'text': {hostile}, "
            "'status': 'in_progress'}])",
            "%todos",
            "%notes",
            "%notes export",
        ]
        outputs = {cell: shown_text(execute(kc, cell)) for cell in cells}
    for cell, text in outputs.items():
        assert controls_in(text) == [], (cell, text)
    shows(outputs[cells[1]], "✦ recap · openai:gpt-4o-mini", "You are fixing", "Next: rerun")
    shows(outputs["%recap status"], "openai:gpt-4o-mini")
    shows(outputs["%recap sessions"], "fix", "the ledger export")
    shows(outputs["%todos"], "[~] rerun", "the totals")
    shows(outputs["%notes"], "the export", "rounds half to even")
    shows(outputs["%notes export"], "[gotcha] the export")


def test_json_output_is_inert_and_exact() -> None:
    from jupyter_recap.cli.common import json_text

    value = {"title": dirty("fix", "it"), "n": 1}
    text = json_text(value)
    assert_inert(text)
    assert json.loads(text) == value
    assert "✦" in json_text({"t": "✦ recap"})  # readable text stays readable
