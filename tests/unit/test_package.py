"""The package surface: exports, version, a cheap import and a core free of front-end imports."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import subprocess
import sys

import pytest

import jupyter_recap as jr

CORE_MODULES = [
    "jupyter_recap.pipeline.context",
    "jupyter_recap.errors",
    "jupyter_recap.record.agentcells",
    "jupyter_recap.pipeline.models",
    "jupyter_recap.record.notebookfile",
    "jupyter_recap.pipeline.offline",
    "jupyter_recap.pipeline.prompt",
    "jupyter_recap.pipeline.providers.anthropic",
    "jupyter_recap.pipeline.providers.ollama",
    "jupyter_recap.pipeline.providers.openai",
    "jupyter_recap.redact",
    "jupyter_recap.pipeline.service",
    "jupyter_recap.settings",
    "jupyter_recap.record.transcript",
]
FRONT_ENDS = ("IPython", "tornado", "ipywidgets", "anywidget", "ipykernel")


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out))


def test_all_lists_exactly_the_public_names() -> None:
    for name in jr.__all__:
        assert getattr(jr, name) is not None
    public = {
        name
        for name in dir(jr)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(jr, name))  # submodules appear once imported
        and getattr(getattr(jr, name), "__module__", "") != "typing"
        and name not in ("annotations", "TYPE_CHECKING")
    }
    assert sorted(jr.__all__) == sorted(public | {"__version__"})


def test_one_version_source() -> None:
    assert importlib.metadata.version("jupyter_recap") == jr.__version__


def test_import_is_cheap() -> None:
    loaded = modules_after("import jupyter_recap")
    heavy = {"httpx", "traitlets", *FRONT_ENDS}
    assert not {m.split(".")[0] for m in loaded} & heavy


def test_core_knows_no_front_end() -> None:
    loaded = modules_after("\n".join(f"import {m}" for m in CORE_MODULES))
    assert not {m.split(".")[0] for m in loaded} & set(FRONT_ENDS)
    assert "httpx" not in loaded  # only imported when a request is made


def test_labextension_version_matches() -> None:
    from pathlib import Path

    package = Path(__file__).parents[2] / "labextension" / "package.json"
    assert json.loads(package.read_text())["version"] == jr.__version__


def test_the_old_recap_alias_warns_and_names_its_new_name() -> None:
    from jupyter_recap.pipeline.service import WrittenRecap

    for _ in range(2):  # every use warns: the alias is never cached
        with pytest.warns(DeprecationWarning, match=r"use jupyter_recap\.WrittenRecap"):
            assert jr.Recap is WrittenRecap
    with pytest.warns(DeprecationWarning, match=r"jupyter_recap\.Recap is deprecated"):
        from jupyter_recap import Recap
    assert Recap is WrittenRecap
    assert "Recap" not in jr.__all__ and "Recap" not in dir(jr)  # a star import stays quiet
    assert "Recap" not in vars(jr)
