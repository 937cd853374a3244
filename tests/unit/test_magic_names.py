"""Loading the extension takes no magic name that IPython or another extension already has.

What used to happen: the project memory's search was ``%recall TERMS``, and ``%load_ext
jupyter_recap`` replaced IPython's own ``%recall`` (recall earlier input into the next cell)
with it; IPython's own test of ``%recall`` failed with the extension loaded. The search is
``%notes TERMS`` now, and registration skips any name that is taken, saying which in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ipykernel.zmqshell import KernelMagics
from IPython.core.magic import LazyMagic

from jupyter_recap.ipython.magics import RecapMagics
from jupyter_recap.ipython.statemagics import WorkStateMagics

#: Every magic the extension offers, as (kind, name).
OURS = sorted(
    (kind, name)
    for magics in (RecapMagics, WorkStateMagics)
    for kind, names in magics.magics.items()
    for name in names
)


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(root / "names.ipynb"))
    return root


def tables(shell: Any) -> dict[str, dict[str, Any]]:
    """A copy of the shell's line and cell magic tables."""
    return {kind: dict(table) for kind, table in shell.magics_manager.magics.items()}


def load(shell: Any, capsys: pytest.CaptureFixture[str]) -> str:
    """Load the extension; return what the load wrote to stderr."""
    capsys.readouterr()
    shell.run_line_magic("load_ext", "jupyter_recap")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return captured.err


def same_magic(before: Any, after: Any) -> bool:
    """``after`` is ``before``, or what IPython loaded in place of its lazy placeholder.

    IPython 9 declares most of its own magics lazily (``%load_ext`` itself, ``%recall``): the
    table holds a placeholder naming the class that provides the magic until the magic is
    first used, and then that class's method. That is the same magic, not a replaced one.
    """
    if after is before:
        return True
    if not isinstance(before, LazyMagic) or isinstance(after, LazyMagic):
        return False
    module, _, cls = before.spec.partition(":")
    provider = type(getattr(after, "__self__", None))
    return provider.__module__ == module and provider.__name__ == cls


def assert_nothing_replaced(before: dict[str, dict[str, Any]], shell: Any) -> None:
    after = tables(shell)
    for kind, table in before.items():
        replaced = sorted(n for n, f in table.items() if not same_magic(f, after[kind].get(n)))
        assert replaced == [], f"{kind} magics replaced or removed by the extension: {replaced}"


def assert_as_before(before: dict[str, dict[str, Any]], shell: Any) -> None:
    """Exactly the magics of ``before``: nothing of ours left, nothing of anyone's removed."""
    assert {kind: set(table) for kind, table in tables(shell).items()} == {
        kind: set(table) for kind, table in before.items()
    }
    assert_nothing_replaced(before, shell)


def test_our_names_are_free_in_ipython_ipykernel_and_jupyter_ai(shell: Any) -> None:
    """%recap, %remember, %notes, %forget, %todos: none is IPython's (loaded, lazy or an alias),
    ipykernel's or jupyter-ai's. Loading the extension after jupyter-ai-magics replaces none of
    IPython's or jupyter-ai's magics, and unloading it leaves every one of them in place."""
    shell.run_line_magic("load_ext", "jupyter_ai_magics")
    manager = shell.magics_manager
    assert "ai" in manager.magics["line"] and "ai" in manager.magics["cell"]
    kernel = KernelMagics.magics  # a kernel's shell adds these (%edit, %clear, %connect_info, …)
    for kind, name in OURS:
        assert name not in manager.magics[kind], f"%{name} is taken in a plain shell"
        assert name not in manager.lazy_magics, f"%{name} is declared lazily by IPython"
        assert name not in kernel[kind], f"%{name} is ipykernel's"
    assert {name for _, name in OURS} == {"recap", "remember", "notes", "forget", "todos"}
    before = tables(shell)
    shell.run_line_magic("load_ext", "jupyter_recap")
    assert_nothing_replaced(before, shell)
    shell.run_line_magic("unload_ext", "jupyter_recap")
    assert_as_before(before, shell)


def test_loading_replaces_no_magic_and_unloading_removes_only_ours(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tables(shell)
    assert load(shell, capsys) == ""  # nothing taken: nothing to say
    assert_nothing_replaced(before, shell)
    added = {kind: set(tables(shell)[kind]) - set(before[kind]) for kind in before}
    assert added == {"line": {name for _, name in OURS}, "cell": set()}
    shell.run_line_magic("unload_ext", "jupyter_recap")
    assert_as_before(before, shell)


@pytest.mark.parametrize(("kind", "name"), OURS)
def test_a_name_already_taken_stays_its_owners(
    shell: Any, capsys: pytest.CaptureFixture[str], kind: str, name: str
) -> None:
    """Whichever of our names another extension (or the person) has first, it keeps it: the
    load says so in one line, every other name of ours is ours, and unloading leaves it."""

    def theirs(line: str) -> str:
        return f"theirs: {line}"

    shell.register_magic_function(theirs, kind, name)
    before = tables(shell)
    said = load(shell, capsys)
    escape = "%" if kind == "line" else "%%"
    why = "already defined here by IPython or another extension"
    assert said == f"jupyter_recap: not taking {escape}{name}: {why}\n"
    assert_nothing_replaced(before, shell)
    assert shell.run_line_magic(name, "x") == "theirs: x"
    for _, other in OURS:
        if other != name:
            registered = shell.magics_manager.magics["line"][other]
            assert isinstance(registered.__self__, (RecapMagics, WorkStateMagics))
    shell.run_line_magic("unload_ext", "jupyter_recap")
    assert_as_before(before, shell)
    assert shell.run_line_magic(name, "y") == "theirs: y"


def test_a_name_only_declared_lazily_is_taken_too(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A magic IPython is configured to load on first use (``MagicsManager.lazy_magics``) has no
    entry in the table until then; it is someone's all the same."""
    shell.magics_manager.lazy_magics["todos"] = "someone_elses.todo_magics"
    said = load(shell, capsys)
    assert said.startswith("jupyter_recap: not taking %todos: ")
    assert "todos" not in shell.magics_manager.magics["line"]


def test_ipythons_own_recall_works_with_the_extension_loaded(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """IPython's own test of %recall (tests/test_history.py), with the extension loaded."""
    load(shell, capsys)
    shell.history_manager.reset()
    shell.run_cell("a = 1", store_history=True)
    shell.run_cell("def b():\n    return a ** 2", store_history=True)
    shell.run_cell("%recall 1", store_history=True)
    assert shell.rl_next_input == "a = 1"
    shell.run_cell("%recall 1-2", store_history=True)
    assert shell.rl_next_input == "a = 1\ndef b():\n    return a ** 2"
    shell.run_cell("b()", store_history=True)
    shell.run_cell("%recall", store_history=True)  # no argument: the last result
    assert shell.rl_next_input == "1"
    assert "usage" not in capsys.readouterr().out
