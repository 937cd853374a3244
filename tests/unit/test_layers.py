"""The layer rules: the core knows nothing of IPython, the kernel, tornado, the server or widgets,
and the packages import one another in one direction only.

The modules are found by walking the package, so a module added later is checked too. Every
import statement counts, also one inside a function or under ``TYPE_CHECKING`` (a lazy import
is still a dependency).

Three rules:

- **Front ends.** The adapters — ``ipython/``, ``server/``, ``cli/``, ``widget/`` — may import
  IPython, tornado, jupyter_server and the widget libraries; the core may import neither those
  libraries nor the adapters. The one exception is the package's ``__init__``, whose IPython
  and jupyter_server entry points hand over to those adapters.
- **Ranks.** Each unit (a subpackage or a top-level module) has a rank (:data:`RANKS`, the floors
  of ``docs/architecture.md``) and may import only itself and units of a lower rank. Two units
  of one rank may not import each other (``stores`` and ``capture``, say).
- **No cycles.** Inside a unit the ranks say nothing, so the modules of a package must not
  import one another in a circle either (:func:`test_no_module_imports_itself_in_a_circle`).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import pytest

import jupyter_recap

PACKAGE = Path(jupyter_recap.__file__).parent
ROOT = PACKAGE.name
ADAPTERS: tuple[str, ...] = ("jupyter_recap.ipython", "jupyter_recap.server", "jupyter_recap.cli")
ADAPTERS += ("jupyter_recap.widget",)
FORBIDDEN = ("IPython", "ipykernel", "tornado", "jupyter_server", "ipywidgets", "anywidget")
#: The entry points IPython calls (``%load_ext``) and jupyter_server reads (the extension app)
#: live in the package's ``__init__``.
ENTRY_POINTS = {"jupyter_recap": {"jupyter_recap.ipython.extension", "jupyter_recap.server"}}

#: The unit of the package's own ``__init__``.
PACKAGE_INIT = "__init__"

#: Bottom to top. A unit may import only itself and units of a lower rank.
RANKS: dict[str, int] = {
    # 0: leaves, plain data and text: they import nothing of ours
    "_version": 0,
    "entrypoints": 0,
    "errors": 0,
    "textutil": 0,
    "wire": 0,
    # 1: shared by everything above: the log, redaction, the settings (plain data), reading
    # a file nobody vouched for and the fields of JSON someone sent
    "debuglog": 1,
    "redact": 1,
    "settings": 1,
    "untrusted": 1,
    "fields": 1,
    # 2: the transcript and reading notebooks
    "record": 2,
    # 3: what lasts (stores) and what records agent SDK runs (capture); not each other
    "stores": 3,
    "capture": 3,
    "chats": 3,
    "changes": 3,
    "hooks": 3,
    "outside": 3,
    # 4: writing a recap, and every other model call
    "pipeline": 4,
    # 5: the pure state the adapters drive, and the HTTP client
    "focus": 5,
    "schedule": 5,
    "client": 5,
    # adapters
    "widget": 6,
    "ipython": 7,
    "server": 7,
    "cli": 7,
    PACKAGE_INIT: 8,
}

#: Today's known adapter exceptions to the ranks, (importer, imported module): each is to be
#: removed, and then its entry here (a test fails when an entry no longer matches an import).
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


MODULES = modules()


def resolve(package: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``from … import`` reads from, inside ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def parse_imports(name: str, source: str, *, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the module ``name``) imports, anywhere in it, as absolute names
    (also every ``module.name`` of a ``from module import name``)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = resolve(package, node)
            found.add(target)
            # ``from . import sessionfiles`` imports a module too
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def parse_our_imports(
    name: str, source: str, *, is_package: bool = False, known: Collection[str] | None = None
) -> set[str]:
    """The modules of this package that ``source`` (the module ``name``) imports, anywhere in it.

    ``from ..stores.memory import Entry`` is ``jupyter_recap.stores.memory``; ``from . import
    sessionfiles`` is that module; ``from jupyter_recap import Recap`` is the package's
    ``__init__`` (``jupyter_recap``), while ``from jupyter_recap import settings`` is only
    ``jupyter_recap.settings``. ``known``: the modules there are (the package's by default).
    """
    known = MODULES if known is None else known
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = resolve(package, node)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in known else target)
    return {t for t in found if t == ROOT or t.startswith(ROOT + ".")}


def imports(name: str, path: Path) -> set[str]:
    """Every module the file ``path`` (the module ``name``) imports, as absolute names."""
    source = path.read_text(encoding="utf-8")
    return parse_imports(name, source, is_package=path.name == "__init__.py")


def our_imports(name: str, path: Path) -> set[str]:
    """The modules of this package the file ``path`` (the module ``name``) imports."""
    source = path.read_text(encoding="utf-8")
    return parse_our_imports(name, source, is_package=path.name == "__init__.py")


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


def unit(name: str) -> str:
    """The unit a module of ours belongs to: its subpackage or top-level module."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE_INIT


def rank_violations(name: str, targets: set[str]) -> list[str]:
    """One line per module of ours that ``name`` imports from its own rank or a higher one."""
    here = unit(name)
    rank = RANKS[here]
    bad = []
    for target in sorted(targets):
        there = unit(target)
        if there == here or (name, target) in KNOWN_EXCEPTIONS:
            continue
        other = RANKS.get(there)
        if other is None or other >= rank:
            bad.append(
                f"{name} imports {target}: {here} is rank {rank} and may import only lower "
                f"ranks, {there} is rank {other}"
            )
    return bad


CORE = {name: path for name, path in MODULES.items() if not is_adapter(name)}


def test_the_walk_finds_core_and_adapters() -> None:
    """A positive control: the walk sees the layers, and the detector sees adapter imports."""
    assert {
        "jupyter_recap.record.transcript",
        "jupyter_recap.pipeline.context",
        "jupyter_recap.pipeline.providers.transport",
        "jupyter_recap.pipeline.compaction",
        "jupyter_recap.stores.sessions",
        "jupyter_recap.stores.framing",
        "jupyter_recap.redact",
        "jupyter_recap.schedule",
        "jupyter_recap.focus.board",
        "jupyter_recap.capture.runs",
    } <= set(CORE)
    assert "anywidget" in imports("x", MODULES["jupyter_recap.widget.banner"])
    handlers = MODULES["jupyter_recap.server.handlers"]
    assert {"tornado", "jupyter_server.base.handlers"} <= set(violations("x", handlers))


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_module_imports_no_frontend_server_or_kernel(name: str) -> None:
    assert violations(name, CORE[name]) == [], (
        f"{name} is core (not under {', '.join(ADAPTERS)}) and must not import these"
    )


def test_every_unit_has_a_rank() -> None:
    missing = sorted({unit(name) for name in MODULES} - set(RANKS))
    assert missing == [], f"give these a rank in RANKS (and a floor in docs): {missing}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_imports_only_lower_ranks(name: str) -> None:
    bad = rank_violations(name, our_imports(name, MODULES[name]))
    assert not bad, bad[0] if len(bad) == 1 else "\n".join(bad)


def test_known_exceptions_are_still_real() -> None:
    """An exception nobody needs any more is deleted from the list, so it cannot come back."""
    for importer, imported in KNOWN_EXCEPTIONS:
        assert importer in MODULES, f"{importer} is gone: remove its known exception"
        assert imported in our_imports(importer, MODULES[importer]), (
            f"{importer} no longer imports {imported}: remove its known exception"
        )
        assert RANKS[unit(imported)] >= RANKS[unit(importer)], (
            f"{importer} -> {imported} follows the ranks now: remove its known exception"
        )


FAKE_UPWARD = """
from __future__ import annotations

from typing import TYPE_CHECKING

from ..textutil import shorten          # rank 0: fine
from .memory import MemoryStore         # its own unit: fine

if TYPE_CHECKING:
    from jupyter_recap.focus.board import AgentBoard   # rank 5, under TYPE_CHECKING


def compact() -> None:
    from ..pipeline.service import call_model          # rank 4, lazy


def peer() -> None:
    import jupyter_recap.capture.runs                  # rank 3, a peer
"""


def test_the_rank_detector_catches_upward_imports() -> None:
    """A positive control: a fake ``stores`` module that imports upward, lazily and under
    ``TYPE_CHECKING``, and sideways to ``capture``, is caught, and its downward imports are not."""
    fake = "jupyter_recap.stores.fake"
    found = rank_violations(fake, parse_our_imports(fake, FAKE_UPWARD))
    assert found == [
        "jupyter_recap.stores.fake imports jupyter_recap.capture.runs: stores is rank 3 and may "
        "import only lower ranks, capture is rank 3",
        "jupyter_recap.stores.fake imports jupyter_recap.focus.board: stores is rank 3 and may "
        "import only lower ranks, focus is rank 5",
        "jupyter_recap.stores.fake imports jupyter_recap.pipeline.service: stores is rank 3 and "
        "may import only lower ranks, pipeline is rank 4",
    ]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (
            "from jupyter_recap import Recap",
            "jupyter_recap: record is rank 2 and may import only lower ranks, __init__ is rank 8",
        ),
        (
            "import jupyter_recap.novel",
            "jupyter_recap.novel: record is rank 2 and may import only "
            "lower ranks, novel is rank None",
        ),
        (
            "from .. import stores",
            "jupyter_recap.stores: record is rank 2 and may import only "
            "lower ranks, stores is rank 3",
        ),
        ("from .. import settings", None),
        ("from jupyter_recap.wire import strict_json", None),
    ],
)
def test_the_rank_detector_reads_every_spelling(source: str, found: str | None) -> None:
    """``from jupyter_recap import Recap`` in the core reaches the package's ``__init__`` (the top
    rank), ``from .. import settings`` only ``settings``; a unit with no rank is reported."""
    fake = "jupyter_recap.record.fake"
    lines = rank_violations(fake, parse_our_imports(fake, source))
    assert lines == ([] if found is None else [f"{fake} imports {found}"])


#: Today's known import cycles, as the edges (importer, imported) left out of the cycle check:
#: each is to be removed once its cycle is broken. Unlike :data:`KNOWN_EXCEPTIONS`, an entry
#: whose import is gone does not fail the test (the cycles are being broken elsewhere now).
KNOWN_CYCLE_EDGES: dict[tuple[str, str], str] = {}


def import_graph(
    sources: dict[str, tuple[str, bool]], *, ignore: Collection[tuple[str, str]] = ()
) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports, anywhere in it (``sources``: module ->
    (source, is a package's ``__init__``)); a module importing itself does not count."""
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in sources.items():
        targets = parse_our_imports(name, source, is_package=is_package, known=sources)
        graph[name] = {t for t in targets if t in sources and t != name and (name, t) not in ignore}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle of imports per group of modules that reach one another (Tarjan's strongly
    connected components), each as the path ``a -> b -> … -> a``, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(_circle(graph, group) for group in groups)


def _circle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A path through ``group`` (strongly connected) from its first module back to it."""
    start = min(group)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:  # breadth first: the shortest circle through the first module
        node = queue.pop(0)
        for target in sorted(graph[node] & group):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"not a cycle: {sorted(group)}")


def test_no_module_imports_itself_in_a_circle() -> None:
    """No modules of the package import one another in a circle (``a -> b -> a``, or longer).

    Every import counts, as for the ranks: at module level, inside a function (a lazy import
    still ties the two modules together), and under ``TYPE_CHECKING`` too. Type-only imports are
    not exempt on purpose: the kernel side's old circle (``ipython/extension`` imports
    ``magics``, ``statemagics`` and ``status``, which imported ``extension`` to type it) ran
    through them, and a narrow Protocol (see ``ipython/host``) types such a use without the
    circle. The ranks keep units from importing one another, so a circle is found inside one
    package (or through a known rank exception). The edges in
    :data:`KNOWN_CYCLE_EDGES` are left out until their cycles are broken.
    """
    sources = {
        name: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for name, path in MODULES.items()
    }
    found = cycles(import_graph(sources, ignore=set(KNOWN_CYCLE_EDGES)))
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


FAKE_CYCLE = {
    "jupyter_recap.kit": ("", True),
    # a -> b at module level, b -> c inside a function, c -> a under TYPE_CHECKING
    "jupyter_recap.kit.a": ("from .b import run\n", False),
    "jupyter_recap.kit.b": ("def run() -> None:\n    from . import c\n", False),
    "jupyter_recap.kit.c": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import Thing\n",
        False,
    ),
    # d -> e, and e -> d spelt as a package's submodule; e's import of the package's __init__
    # (which imports nothing) closes no circle
    "jupyter_recap.kit.d": ("import jupyter_recap.kit.e\n", False),
    "jupyter_recap.kit.e": ("from jupyter_recap.kit import d as _d\nfrom . import kit\n", False),
}


def test_the_cycle_detector_catches_lazy_and_type_only_circles() -> None:
    """A positive control: a circle through a lazy and a ``TYPE_CHECKING`` import is found, as
    one path; an import both ways (``d`` and ``e``) is a circle too; leaving one edge of each
    out (a known exception) leaves none."""
    graph = import_graph(FAKE_CYCLE)
    assert cycles(graph) == [
        [
            "jupyter_recap.kit.a",
            "jupyter_recap.kit.b",
            "jupyter_recap.kit.c",
            "jupyter_recap.kit.a",
        ],
        ["jupyter_recap.kit.d", "jupyter_recap.kit.e", "jupyter_recap.kit.d"],
    ]
    ignore = {
        ("jupyter_recap.kit.c", "jupyter_recap.kit.a"),
        ("jupyter_recap.kit.e", "jupyter_recap.kit.d"),
    }
    assert cycles(import_graph(FAKE_CYCLE, ignore=ignore)) == []


# -- sizes ---------------------------------------------------------------------------------------

#: No module longer: past it, a module holds more than one concern and a newcomer reads too much
#: to find one.
MAX_MODULE_LINES = 600
#: No class with more methods (properties and dunders count): past it, a class does several jobs.
MAX_CLASS_METHODS = 25
#: Classes whose methods are a public API, each method one call a user makes.
METHODS_EXEMPT = {"jupyter_recap.record.transcript.Transcript"}
#: Today's known oversized modules and classes, each to be split, and then its entry removed here
#: (a test fails when an entry is no longer oversized).
KNOWN_OVERSIZED: dict[str, str] = {}


def oversized(sources: dict[str, str]) -> dict[str, str]:
    """Module or ``module.Class`` → what is too big about it, over ``sources`` (name → text)."""
    found: dict[str, str] = {}
    for name, source in sources.items():
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found[name] = f"{lines} lines"
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ClassDef) or f"{name}.{node.name}" in METHODS_EXEMPT:
                continue
            methods = [
                child
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            if len(methods) > MAX_CLASS_METHODS:
                found[f"{name}.{node.name}"] = f"{len(methods)} methods"
    return found


def test_no_module_is_too_long_and_no_class_has_too_many_methods() -> None:
    sources = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items()}
    found = oversized(sources)
    new = {name: why for name, why in found.items() if name not in KNOWN_OVERSIZED}
    assert new == {}, f"over {MAX_MODULE_LINES} lines or {MAX_CLASS_METHODS} methods: {new}"
    gone = sorted(set(KNOWN_OVERSIZED) - set(found))
    assert gone == [], f"no longer oversized: remove from KNOWN_OVERSIZED: {gone}"


def test_the_size_check_catches_a_long_module_and_a_big_class() -> None:
    """A positive control: a module one line too long, a class one method too many (an async
    method and a property count), and the exempt class left alone."""
    methods = "".join(f"    def m{n}(self) -> None: ...\n" for n in range(MAX_CLASS_METHODS - 1))
    big = f"class Big:\n{methods}    async def a(self) -> None: ...\n"
    big += "    @property\n    def p(self) -> int: return 1\n"
    fits = f"class Fits:\n{methods}    def last(self) -> None: ...\n"
    sources = {
        "jupyter_recap.kit.long": "x = 1\n" * (MAX_MODULE_LINES + 1),
        "jupyter_recap.kit.short": "x = 1\n" * MAX_MODULE_LINES,
        "jupyter_recap.kit.classes": big + fits,
        "jupyter_recap.record.transcript": big.replace("Big", "Transcript"),
    }
    assert oversized(sources) == {
        "jupyter_recap.kit.long": f"{MAX_MODULE_LINES + 1} lines",
        "jupyter_recap.kit.classes.Big": f"{MAX_CLASS_METHODS + 1} methods",
    }
