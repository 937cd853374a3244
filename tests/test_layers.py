"""The layer rule: the core knows nothing of IPython, the kernel, tornado, the server or widgets.

The modules are found by walking the package, so a module added later is checked too. Every
import statement counts, also one inside a function (a lazy import is still a dependency).
The adapters — ``ipython/``, ``server/``, ``cli/``, ``widget/`` — may import anything; the core
may import neither those libraries nor the adapters. The one exception is the package's
``__init__``, whose IPython entry points hand over to the IPython adapter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jupyter_recap

PACKAGE = Path(jupyter_recap.__file__).parent
ADAPTERS: tuple[str, ...] = ("jupyter_recap.ipython", "jupyter_recap.server", "jupyter_recap.cli")
ADAPTERS += ("jupyter_recap.widget",)
FORBIDDEN = ("IPython", "ipykernel", "tornado", "jupyter_server", "ipywidgets", "anywidget")
#: The entry points IPython calls (``%load_ext``) live in the package's ``__init__``.
ENTRY_POINTS = {"jupyter_recap": {"jupyter_recap.ipython.extension"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def imports(name: str, path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it, as absolute names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            # ``from . import sessionfiles`` imports a module too
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def is_adapter(name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in ADAPTERS)


def violations(name: str, path: Path) -> list[str]:
    allowed = ENTRY_POINTS.get(name, set())
    bad = []
    for target in sorted(imports(name, path)):
        root = target.split(".")[0]
        entry = any(target == a or target.startswith(a + ".") for a in allowed)
        if root in FORBIDDEN or (is_adapter(target) and not entry):
            bad.append(target)
    return bad


CORE = {name: path for name, path in modules().items() if not is_adapter(name)}


def test_the_walk_finds_core_and_adapters() -> None:
    """A positive control: the walk sees the layers, and the detector sees adapter imports."""
    assert {
        "jupyter_recap.record.transcript",
        "jupyter_recap.pipeline.context",
        "jupyter_recap.pipeline.providers.transport",
        "jupyter_recap.stores.sessions",
        "jupyter_recap.schedule",
        "jupyter_recap.focus.board",
        "jupyter_recap.capture.runs",
    } <= set(CORE)
    everything = modules()
    assert "anywidget" in imports("x", everything["jupyter_recap.widget.banner"])
    handlers = everything["jupyter_recap.server.handlers"]
    assert {"tornado", "jupyter_server.base.handlers"} <= set(violations("x", handlers))


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_module_imports_no_frontend_server_or_kernel(name: str) -> None:
    assert violations(name, CORE[name]) == [], (
        f"{name} is core (not under {', '.join(ADAPTERS)}) and must not import these"
    )
