"""The documentation's own ``%%agent`` example, run as a person would copy it.

What used to happen: the README read as if ``%%agent`` came with the package, and a cell with it
failed "Cell magic `%%agent` not found". The notebook page of the user guide
(``docs/user-guide/notebook.md``, where the README's section went) says that it is the person's
own magic and shows how to define one; this runs that very code in a real shell with the
extension loaded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import jupyter_recap as jr

README = Path(__file__).parents[2] / "docs" / "user-guide" / "notebook.md"


def readme_example() -> str:
    """The page's Python block that defines the ``%%agent`` cell magic."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    (example,) = [block for block in blocks if "def agent(line, cell)" in block]
    return str(example)


def readme_config_line() -> str:
    """The page's ``%config Recap.agent_magics = …`` line for a magic of another name."""
    (line,) = re.findall(r"`(%config Recap\.agent_magics = [^`]+)`", README.read_text("utf-8"))
    return str(line)


def turns() -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in jr.current() if e.kind in ("user", "assistant")]


@pytest.fixture
def loaded(shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "refunds.ipynb"))
    shell.run_line_magic("load_ext", "jupyter_recap")
    # the person's own agent, which the example calls
    shell.user_ns["my_agent"] = lambda prompt: f"Refunded {prompt.split()[-1]}. Next: email them."
    return shell


def test_without_a_definition_agent_is_no_magic(loaded: Any) -> None:
    result = loaded.run_cell("%%agent\nrefund order A-1004", store_history=True)
    assert "Cell magic `%%agent` not found" in str(result.error_in_exec)


def test_the_readme_example_makes_agent_cells_agent_turns(
    loaded: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert loaded.run_cell(readme_example(), store_history=True).success
    result = loaded.run_cell("%%agent\nrefund order A-1004", store_history=True)
    assert result.success
    assert turns() == [
        ("user", "refund order A-1004"),
        ("assistant", "Refunded A-1004. Next: email them."),
    ]
    loaded.run_line_magic("config", "Recap.model = 'offline'")
    capsys.readouterr()
    loaded.run_line_magic("recap", "")
    recap = capsys.readouterr().out
    assert recap.startswith("✦ recap · offline\n") and "A-1004" in recap


def test_a_magic_of_another_name_counts_once_listed(loaded: Any) -> None:
    example = readme_example().replace("def agent(", "def ask(")
    assert loaded.run_cell(example, store_history=True).success
    loaded.run_cell("%%ask\nrefund order A-1005", store_history=True)
    assert turns() == []  # not listed: an ordinary cell
    loaded.run_cell(readme_config_line(), store_history=True)
    loaded.run_cell("%%ask\nrefund order A-1006", store_history=True)
    assert turns() == [
        ("user", "refund order A-1006"),
        ("assistant", "Refunded A-1006. Next: email them."),
    ]
