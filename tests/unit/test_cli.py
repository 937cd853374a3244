"""``jupyter recap NOTEBOOK``: run as a real process, exit codes and one-line errors."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import needs
import pytest
from cliutil import VENV_BIN, offline_env, one_line_error, run_cli
from fakellm import FakeLLM

from jupyter_recap import cli
from jupyter_recap.cli.common import print_json
from jupyter_recap.errors import NotebookError
from jupyter_recap.pipeline import service
from jupyter_recap.wire import strict_json

ROOT = Path(__file__).parents[2]
DATA = Path(__file__).parents[1] / "data"
DEMO = ROOT / "notebooks" / "demo_agent_session.ipynb"


def recap(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jupyter_recap.cli ARGS`` the way a console script would."""
    return run_cli(*args, cwd=cwd, env=env)


# -- a recap: exit 0 ------------------------------------------------------------------------------


def test_demo_notebook_prints_an_offline_recap(tmp_path: Path) -> None:
    result = recap(DEMO, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    *recap_lines, signature = result.stdout.rstrip("\n").splitlines()
    assert signature == "— offline"
    text = " ".join(recap_lines)
    # The goal the person stated, not the question they asked about it.
    assert text.startswith("Task: We're migrating our billing tables")
    assert "In[4] failed with CalledProcessError" in text  # where the work stands
    # The next step is the one the agent's last reply proposed, not a generic one.
    assert "Next: Drop the deleted_at filter in 20240610_customers.ts" in text


def test_explicit_offline_model_without_the_environment_setting(tmp_path: Path) -> None:
    env = offline_env()
    del env["JUPYTER_RECAP_MODEL"]
    result = recap(DEMO, "--model", "offline", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("— offline")


def test_json_output(tmp_path: Path) -> None:
    result = recap(DATA / "agent_session.ipynb", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {"recap", "model", "reason"}
    assert payload["model"] == "offline"
    assert isinstance(payload["recap"], str) and payload["recap"].strip()


def test_installed_jupyter_recap_command(tmp_path: Path) -> None:
    jupyter = shutil.which("jupyter", path=str(VENV_BIN)) or shutil.which("jupyter")
    if jupyter is None or shutil.which("jupyter-recap", path=offline_env()["PATH"]) is None:
        pytest.fail(
            "jupyter or the jupyter-recap console script is not installed: run scripts/setup "
            "(or pip install -e .)",
            pytrace=False,
        )
    ok = run_cli(DEMO, cwd=tmp_path, command=[jupyter, "recap"])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.rstrip().endswith("— offline")
    missing = run_cli("missing.ipynb", cwd=tmp_path, command=[jupyter, "recap"])
    assert one_line_error(missing, 2) == "jupyter recap: no such file: missing.ipynb"


# -- no recap: exit 1 -----------------------------------------------------------------------------


def test_notebook_without_agent_cells(tmp_path: Path) -> None:
    path = DATA / "no_agent_cells.ipynb"
    result = recap(path, cwd=tmp_path)
    line = one_line_error(result, 1)
    assert line == (
        f"jupyter recap: no agent cells in {path} (looked for %%ai, %%agent) "
        "and no stored session of it"
    )
    assert result.stdout == ""


def test_notebook_without_agent_cells_as_json(tmp_path: Path) -> None:
    result = recap(DATA / "no_agent_cells.ipynb", "--json", cwd=tmp_path)
    one_line_error(result, 1)
    payload = json.loads(result.stdout)
    assert payload["recap"] is None and payload["model"] is None
    assert payload["reason"].startswith("no agent cells in ")


# -- bad usage: exit 2 ----------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    line = one_line_error(recap("nope.ipynb", cwd=tmp_path), 2)
    assert line == "jupyter recap: no such file: nope.ipynb"


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    line = one_line_error(recap("work", cwd=tmp_path), 2)
    assert line == "jupyter recap: work is a directory, not a notebook"


def test_corrupt_notebook(tmp_path: Path) -> None:
    shutil.copy(DATA / "corrupt-notebook.json", tmp_path / "half-saved.ipynb")
    line = one_line_error(recap("half-saved.ipynb", cwd=tmp_path), 2)
    assert line.startswith("jupyter recap: half-saved.ipynb is not a readable notebook: ")
    assert "Unterminated string" in line


def test_not_a_notebook(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("just some notes\n", encoding="utf-8")
    line = one_line_error(recap("notes.txt", cwd=tmp_path), 2)
    assert line.startswith("jupyter recap: notes.txt is not a readable notebook: ")


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus", "x.ipynb"],
        ["a.ipynb", "b.ipynb"],
        ["x.ipynb", "--model"],
        [],
    ],
)
def test_bad_usage(tmp_path: Path, args: list[str]) -> None:
    result = recap(*args, cwd=tmp_path)
    one_line_error(result, 2)
    assert result.stdout == ""


def test_unusable_model(tmp_path: Path) -> None:
    result = recap(DEMO, "--model", "nonsense-provider:m", cwd=tmp_path)
    line = one_line_error(result, 2)
    assert "nonsense-provider" in line


def test_unusable_model_setting_in_the_environment(tmp_path: Path) -> None:
    env = offline_env(JUPYTER_RECAP_MODEL="nonsense-provider:m")
    one_line_error(recap(DEMO, cwd=tmp_path, env=env), 2)


def test_help(tmp_path: Path) -> None:
    result = recap("--help", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: jupyter recap ")
    assert "%%ai" in result.stdout


# -- in process: the paths a subprocess cannot easily reach ---------------------------------------


def test_main_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(DATA / "outcomes.ipynb"), "--model", "offline"]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("— offline")
    assert err == ""


def test_no_recap_from_the_service_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def nothing(*args: object, **kwargs: object) -> service.RecapResult:
        assert kwargs["trigger"] == "cli"
        return service.RecapResult(None, "nothing to recap yet")

    monkeypatch.setattr(service, "draft_recap", nothing)
    assert cli.main([str(DEMO), "--model", "offline"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "jupyter recap: nothing to recap yet\n")


def test_unexpected_failure_is_one_line_unless_debugging(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> service.RecapResult:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(service, "draft_recap", broken)
    assert cli.main([str(DEMO), "--model", "offline"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("jupyter recap: internal error: RuntimeError: boom second line")

    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(RuntimeError):
        cli.main([str(DEMO), "--model", "offline"])


def test_multi_line_notebook_error_is_flattened(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreadable(*args: object, **kwargs: object) -> None:
        raise NotebookError("x.ipynb is not a readable notebook:\n  odd")

    monkeypatch.setattr("jupyter_recap.record.notebookfile.read_notebook", unreadable)
    assert cli.main(["x.ipynb"]) == 2
    assert capsys.readouterr().err == "jupyter recap: x.ipynb is not a readable notebook: odd\n"


# -- --dry-run: the request, not a recap ---------------------------------------------------------


def test_dry_run_prints_the_request_and_the_fake_server_sees_nothing(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    env = offline_env(
        JUPYTER_RECAP_MODEL="openai:gpt-4o-mini", OPENAI_BASE_URL=fake_llm.url + "/v1"
    )
    result = recap(DEMO, "--dry-run", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first.startswith("dry run: nothing was sent; openai:gpt-4o-mini would get ")
    assert "--- system prompt (" in rest[1] and any("--- user message (" in r for r in rest)
    assert "invoices" in result.stdout  # the demo session's context
    assert fake_llm.requests == []
    as_json = json.loads(recap(DEMO, "--dry-run", "--json", cwd=tmp_path, env=env).stdout)
    assert as_json["dry_run"] is True and as_json["model"] == "openai:gpt-4o-mini"
    assert as_json["chars"] == len(as_json["system"]) + len(as_json["user"])
    assert 0 < as_json["tokens_estimate"] <= as_json["chars"]
    assert fake_llm.requests == []


def test_dry_run_offline_and_bad_combinations(tmp_path: Path) -> None:
    result = recap(DEMO, "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("dry run: nothing would be sent (model setting offline")
    assert "dry-run goes with a notebook or a session id only" in one_line_error(
        recap("--sessions", "--dry-run", cwd=tmp_path)
    )


# -- --usage: what recaps cost, per day ------------------------------------------------------------


def test_usage_lists_the_last_30_days(tmp_path: Path) -> None:
    import datetime as dt

    from jupyter_recap.stores.usage import UsageLedger

    home = tmp_path / "store"
    env = offline_env(JUPYTER_RECAP_HOME=str(home))
    assert recap("--usage", cwd=tmp_path, env=env).stdout == (
        "No model calls in the last 30 days.\n"
    )
    needs.a_day_that_lasts()  # the ledger below and the CLI each read today's date
    today = dt.datetime.now().replace(hour=12)
    for days_ago, model, auto, cost in [
        (0, "openai:gpt-4o-mini", True, 0.0012),
        (0, "openai:gpt-4o-mini", False, 0.0008),
        (1, "ollama:llama3.2", True, None),
        (40, "openai:gpt-4o-mini", True, 0.5),  # older than the window
    ]:
        when = (today - dt.timedelta(days=days_ago)).timestamp()

        def clock(when: float = when) -> float:
            return when

        ledger = UsageLedger(home, clock=clock)
        ticket = ledger.start(model, automatic=auto)
        assert ticket is not None
        ledger.finish(ticket, tokens_in=1000, tokens_out=100, estimated=False, cost=cost)
    result = recap("--usage", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "day", "calls", "automatic", "tokens", "in", "tokens", "out", "cost", "unpriced"
    ]  # fmt: skip
    assert lines[1].split() == [today.date().isoformat(), "2", "1", "2,000", "200", "~$0.0020", "0"]
    assert lines[2].split()[1:] == ["1", "1", "1,000", "100", "$0", "1"]
    assert lines[3].split() == ["30", "days", "3", "2", "3,000", "300", "~$0.0020", "1"]
    assert lines[4].startswith("Costs are estimates from list prices")
    payload = json.loads(recap("--usage", "--json", cwd=tmp_path, env=env).stdout)
    assert [day["calls"] for day in payload] == [2, 1]
    assert payload[0]["models"] == {"openai:gpt-4o-mini": 2}
    for bad in (["--usage", "--sessions"], ["--usage", "x.ipynb"], ["--usage", "--limit", "3"]):
        assert one_line_error(recap(*bad, cwd=tmp_path, env=env))


# -- --json: strict JSON ---------------------------------------------------------------------------


def test_json_output_is_strict_a_non_finite_figure_is_null(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A figure that is not finite (a corrupt total) is ``null``, not ``Infinity`` nor a crash."""
    days = [{"day": "2026-11-30", "cost": math.inf, "tokens": (1, -math.inf), "x": [math.nan]}]
    print_json(days)
    # Python's json.loads would read Infinity and NaN: None shows null was written.
    assert json.loads(capsys.readouterr().out) == [
        {"day": "2026-11-30", "cost": None, "tokens": [1, None], "x": [None]}
    ]
    assert strict_json({"a": 1.5, "b": True, "c": None, "d": "NaN"}) == (
        '{"a": 1.5, "b": true, "c": null, "d": "NaN"}'
    )
