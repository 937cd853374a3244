"""Capture plugins without a kernel: discovery in name order, one broken plugin costing the
others nothing, the selection by name, and the scan kept off the ``%load_ext`` path.

Plugins here are real distributions as far as ``importlib.metadata`` can tell: a ``.dist-info``
folder (``METADATA``, ``entry_points.txt``) and a module, on ``sys.path``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples
from traitlets import TraitError

from jupyter_recap._version import __version__
from jupyter_recap.capture.manager import Capture
from jupyter_recap.capture.plugins import find_plugins
from jupyter_recap.capture.runs import RunHub
from jupyter_recap.capture.sources import Selection
from jupyter_recap.capture.specs import API_VERSION, BUILTIN_SPECS, CaptureSpec
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.settings import CAPTURE_GROUP, SOURCE_NAMES, Recap

TESTS = Path(__file__).resolve().parent.parent
TOY = TESTS / "plugins" / "recap_toy"
FAULTY = TESTS / "plugins" / "recap_toy_faulty"

#: The modules the plugins of these tests bring (dropped from ``sys.modules`` after each test).
PLUGIN_MODULES = ("toyagent", "recap_toy_capture", "recap_capture_", "plugtest_")


def write_dist(
    site: Path, dist: str, entries: dict[str, str], modules: dict[str, str] | None = None
) -> None:
    """A distribution ``dist`` 0.1.0 in ``site`` with ``entries`` in the capture group and the
    ``modules`` (name → source) beside it."""
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{CAPTURE_GROUP}]\n{lines}")
    for name, source in (modules or {}).items():
        (site / f"{name}.py").write_text(source)


def spec_module(name: str, source: str, modules: str = "('toyagent',)", api: int = 1) -> str:
    return (
        "from jupyter_recap.capture.specs import CaptureSpec\n"
        f"SPEC = CaptureSpec(name={name!r}, modules={modules}, source={source!r}, "
        f"api_version={api})\n"
    )


@pytest.fixture(autouse=True)
def _forget_plugin_modules() -> Iterator[None]:
    yield
    for name in [m for m in sys.modules if m.startswith(PLUGIN_MODULES)]:
        del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def warnings_logged() -> Iterator[list[str]]:
    """The warning lines the package logs (to its debug log) during the test."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                lines.append(record.getMessage())

    handler = Collect()
    logger = logging.getLogger("jupyter_recap")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def hub() -> RunHub:
    transcript = Transcript()
    return RunHub(lambda: transcript)


# -- the project's own sources ---------------------------------------------------------------


def test_the_projects_own_sources_are_registered_like_a_plugins() -> None:
    """pyproject.toml registers the six built-in specs in the group a plugin uses; the kernel
    knows them without a scan, and the two must say the same."""
    own = {
        ep.name: ep
        for ep in importlib.metadata.entry_points(group=CAPTURE_GROUP)
        if ep.dist is not None and ep.dist.name.replace("_", "-") == "jupyter-recap"
    }
    assert sorted(own) == sorted(SOURCE_NAMES)
    assert [spec.name for spec in BUILTIN_SPECS] == list(SOURCE_NAMES)
    for spec in BUILTIN_SPECS:
        assert own[spec.name].load() is spec
        assert spec.api_version == API_VERSION
    assert find_plugins(SOURCE_NAMES) == []  # none of them counts as a plugin


# -- discovery ---------------------------------------------------------------------------------


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True).filter(
            lambda name: name not in SOURCE_NAMES and name != "all"
        ),
        st.sampled_from(["plugtest-a", "plugtest-b", "plugtest-c"]),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=examples(30))
def test_plugins_are_found_in_name_order_without_being_loaded(names: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        by_dist: dict[str, dict[str, str]] = {}
        for name, dist in names.items():
            by_dist.setdefault(dist, {})[name] = (
                f"plugtest_never_imported:{name.upper().replace('-', '_')}"
            )
        for dist, entries in by_dist.items():
            write_dist(site, dist, entries)
        sys.path.insert(0, tmp)
        try:
            found = find_plugins(SOURCE_NAMES)
        finally:
            sys.path.remove(tmp)
    assert [plugin.name for plugin in found] == sorted(names)
    assert [plugin.distribution for plugin in found] == [names[n] for n in sorted(names)]
    assert all(plugin.problem is None for plugin in found)
    assert "plugtest_never_imported" not in sys.modules


def test_one_broken_plugin_is_refused_once_and_costs_the_others_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warnings_logged: list[str]
) -> None:
    good = "recap_toy_capture.source:ToySource"
    write_dist(
        tmp_path,
        "plugtest-mixed",
        {
            "a-good": "plugtest_good:SPEC",
            "b-raises": "plugtest_raises:SPEC",
            "c-text": "plugtest_text:SPEC",
            "d-later": "plugtest_later:SPEC",
            "e-misnamed": "plugtest_misnamed:SPEC",
            "langchain": "plugtest_good:SPEC",
            "f-missing": "plugtest_good:NO_SUCH_NAME",
            "g-malformed": "not a module: at all",
        },
        {
            "plugtest_good": spec_module("a-good", good),
            "plugtest_raises": "raise ImportError('needs a library that is not installed')\n",
            "plugtest_text": "SPEC = 'a spec, in words'\n",
            "plugtest_later": spec_module("d-later", good, api=API_VERSION + 1),
            "plugtest_misnamed": spec_module("someone-else", good),
        },
    )
    write_dist(tmp_path, "plugtest-twin", {"a-good": "plugtest_good:SPEC"})
    monkeypatch.syspath_prepend(str(tmp_path))
    found = find_plugins(SOURCE_NAMES)
    assert [(p.name, p.distribution) for p in found] == [
        ("a-good", "plugtest-mixed"),
        ("a-good", "plugtest-twin"),
        ("b-raises", "plugtest-mixed"),
        ("c-text", "plugtest-mixed"),
        ("d-later", "plugtest-mixed"),
        ("e-misnamed", "plugtest-mixed"),
        ("f-missing", "plugtest-mixed"),
        ("g-malformed", "plugtest-mixed"),
        ("langchain", "plugtest-mixed"),
    ]
    for plugin in found:
        plugin.spec()
        plugin.spec()  # asked again: still one warning
    problems = {f"{p.name} {p.distribution}": p.problem for p in found}
    assert problems == {
        "a-good plugtest-mixed": None,
        "a-good plugtest-twin": "'a-good' is already the name of plugtest-mixed's source",
        "b-raises plugtest-mixed": (
            "its spec could not be loaded (ImportError: needs a library that is not installed)"
        ),
        "c-text plugtest-mixed": (
            "plugtest_text:SPEC is a str, not a jupyter_recap.capture.specs.CaptureSpec"
        ),
        "d-later plugtest-mixed": (
            f"written for capture API version {API_VERSION + 1}, and jupyter_recap "
            f"{__version__} speaks version {API_VERSION}: install a release of "
            "plugtest-mixed made for it"
        ),
        "e-misnamed plugtest-mixed": "its entry point is named 'e-misnamed' but its spec "
        "'someone-else'",
        "f-missing plugtest-mixed": (
            "its spec could not be loaded (AttributeError: module 'plugtest_good' has no "
            "attribute 'NO_SUCH_NAME')"
        ),
        "g-malformed plugtest-mixed": (
            "its entry point 'not a module: at all' is not 'package.module:SPEC'"
        ),
        "langchain plugtest-mixed": "'langchain' is the name of a built-in source",
    }
    assert found[0].spec() is sys.modules["plugtest_good"].SPEC
    # One line each, in the debug log, naming the plugin and its distribution.
    assert len(warnings_logged) == 8
    assert all(" (plugin plugtest-" in line and " is off: " in line for line in warnings_logged)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": "All"}, "the name must be lowercase"),
        ({"name": "all"}, "not 'all'"),
        ({"name": "-toy"}, "the name must be lowercase"),
        ({"name": "to y"}, "the name must be lowercase"),
        ({"name": ""}, "the name must be a text"),
        ({"modules": ()}, "modules must be a non-empty tuple"),
        ({"modules": ["toyagent"]}, "modules must be a non-empty tuple"),
        ({"modules": ("toy agent",)}, "modules must be import names"),
        ({"source": "recap_toy_capture.source.ToySource"}, "source must be 'package.module:Class'"),
        ({"source": "recap_toy_capture.source:"}, "source must be 'package.module:Class'"),
        ({"api_version": "1"}, "api_version must be an int"),
        ({"api_version": True}, "api_version must be an int"),
    ],
)
def test_a_spec_with_a_field_that_cannot_work_is_refused_when_made(
    fields: dict[str, object], problem: str
) -> None:
    values: dict[str, object] = {
        "name": "toy",
        "modules": ("toyagent",),
        "source": "recap_toy_capture.source:ToySource",
        "api_version": 1,
        **fields,
    }
    with pytest.raises(ValueError, match=problem):
        CaptureSpec(**values)  # type: ignore[arg-type]


# -- the manager -------------------------------------------------------------------------------


def test_the_scan_waits_for_the_worker_or_the_next_cell_whichever_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading looks for no plugin: the scan is deferred; a cell that starts before it ran
    runs it first, so a framework imported in that cell is recorded."""
    monkeypatch.syspath_prepend(str(TOY))
    scans: list[str] = []
    from jupyter_recap.capture import plugins
    from jupyter_recap.entrypoints import group_entries as real

    def counted(group: str) -> Any:
        scans.append(group)
        return real(group)

    monkeypatch.setattr(plugins, "group_entries", counted)
    deferred: list[object] = []
    runs = hub()
    capture = Capture(runs, defer=deferred.append)
    capture.start(["all"])
    try:
        assert scans == [] and len(deferred) == 1  # nothing looked for during the load
        mark = runs.cell_started("cell-1")  # the worker has not run yet: the cell waits
        assert scans == [CAPTURE_GROUP]
        toyagent = importlib.import_module("toyagent")
        assert toyagent.run("hello") == "Toy answer: hello"
        runs.cell_ended(mark, None)
        assert [e.kind for e in runs.transcript().entries] == ["user", "assistant", "outcome"]
        assert "toy (plugin recap-toy 0.1.0): on, 1 turn recorded" in capture.lines()
        callback = deferred[0]
        assert callable(callback)
        callback()  # the worker's turn comes: nothing more to do
        runs.cell_ended(runs.cell_started("cell-2"), None)
        assert scans == [CAPTURE_GROUP]
    finally:
        capture.stop()


def test_a_setting_that_names_a_plugin_looks_for_it_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(TOY))
    deferred: list[object] = []
    capture = Capture(hub(), defer=deferred.append)
    capture.start(["toy"])
    try:
        assert deferred == []
        assert capture.lines()[-1] == "toy (plugin recap-toy 0.1.0): on once toyagent is imported"
    finally:
        capture.stop()


def test_built_in_sources_alone_need_no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TOY))
    deferred: list[object] = []
    capture = Capture(hub(), defer=deferred.append)
    capture.start(["langchain"])
    try:
        assert deferred == [] and capture.plugins == []
        assert not [line for line in capture.lines() if "plugin" in line]
    finally:
        capture.stop()


def test_a_plugin_source_that_cannot_be_made_or_installed_is_off_and_the_others_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warnings_logged: list[str]
) -> None:
    write_dist(
        tmp_path,
        "plugtest-fragile",
        {
            "fragile": "plugtest_fragile:SPEC",
            "ghost": "plugtest_ghost:SPEC",
            "clumsy": "plugtest_clumsy:SPEC",
        },
        {
            "plugtest_fragile": spec_module("fragile", "plugtest_fragile_source:FragileSource"),
            "plugtest_fragile_source": (
                "from jupyter_recap.capture.sources import Source\n"
                "class FragileSource(Source):\n"
                "    name = 'fragile'\n"
                "    module = 'toyagent'\n"
                "    distribution = 'toyagent'\n"
                "    def __init__(self, hub):\n"
                "        raise RuntimeError('cannot start')\n"
            ),
            "plugtest_ghost": spec_module("ghost", "plugtest_ghost:NoSuchSource"),
            "plugtest_clumsy": spec_module("clumsy", "plugtest_clumsy_source:ClumsySource"),
            "plugtest_clumsy_source": (
                "from jupyter_recap.capture.sources import Source\n"
                "class ClumsySource(Source):\n"
                "    name = 'clumsy'\n"
                "    module = 'toyagent'\n"
                "    distribution = 'toyagent'\n"
                "    def install(self, module):\n"
                "        module.on_every_step.append(print)  # no such hook in toyagent\n"
            ),
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(TOY))
    runs = hub()
    capture = Capture(runs)
    capture.start(["all"])
    try:
        mark = runs.cell_started("cell-1")
        importlib.import_module("toyagent").run("still recorded?")
        runs.cell_ended(mark, None)
        lines = capture.lines()
        clumsy_line, *others = lines[-4:]
        assert clumsy_line.startswith(
            "clumsy (plugin plugtest-fragile 0.1.0): off (does not understand this version "
            "(AttributeError: "
        )
        assert "'toyagent' has no attribute 'on_every_step'" in clumsy_line
        assert others == [
            "fragile (plugin plugtest-fragile 0.1.0): off (its source could not be made "
            "(RuntimeError: cannot start))",
            "ghost (plugin plugtest-fragile 0.1.0): off (its source could not be made "
            "(TypeError: plugtest_ghost:NoSuchSource is not a subclass of jupyter_recap's "
            "capture Source))",
            "toy (plugin recap-toy 0.1.0): on, 1 turn recorded",
        ]
        assert len([line for line in warnings_logged if line.startswith("capture: fragile ")]) == 1
        assert len([line for line in warnings_logged if line.startswith("capture: ghost ")]) == 1
        clumsy = [line for line in warnings_logged if "clumsy" in line]
        assert len(clumsy) == 1
        assert clumsy[0].startswith("capture of clumsy (plugin plugtest-fragile 0.1.0) is off: ")
    finally:
        capture.stop()


def test_a_plugin_turned_off_by_name_is_not_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.syspath_prepend(str(FAULTY))
    capture = Capture(hub())
    capture.start(["-toy", "-broken"])
    try:
        lines = capture.lines()
        assert "toy (plugin recap-toy 0.1.0): off" in lines
        assert "broken (plugin recap-capture-broken 0.1.0): off" in lines
        assert not [
            m for m in sys.modules if m.startswith(("recap_toy_capture", "recap_capture_b"))
        ]
        capture.restart(["all"])
        assert "toy (plugin recap-toy 0.1.0): on once toyagent is imported" in capture.lines()
        assert "recap_toy_capture.spec" in sys.modules
    finally:
        capture.stop()


# -- the selection -----------------------------------------------------------------------------

NAMES = st.sampled_from(["langchain", "smolagents", "toy", "other"])


@given(
    st.lists(st.one_of(NAMES, NAMES.map(lambda n: f"-{n}"), st.just("all")), max_size=6),
    NAMES,
)
def test_a_name_turned_off_is_never_selected_and_all_is_every_other(
    names: list[str], name: str
) -> None:
    selection = Selection(names)
    positives = {n for n in names if not n.startswith("-")}
    negatives = {n[1:] for n in names if n.startswith("-")}
    if name in negatives:
        assert not selection.selects(name)
    elif "all" in positives or (negatives and not positives):
        assert selection.selects(name)
    else:
        assert selection.selects(name) == (name in positives)
    assert selection.beyond(SOURCE_NAMES) == (
        "all" in positives
        or bool(negatives and not positives)
        or bool(positives - {"all", *SOURCE_NAMES})
    )


def test_the_setting_knows_plugins_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TraitError, match="unknown source 'toy'"):
        Recap(capture=["toy"])
    assert Recap(capture=["all", " -Toy"]).capture == ["all", "-toy"]  # turning off: no check
    with pytest.raises(TraitError, match="unknown source '-all'"):
        Recap(capture=["-all"])
    monkeypatch.syspath_prepend(str(TOY))
    assert Recap(capture=["toy", "langchain"]).capture == ["toy", "langchain"]
    with pytest.raises(TraitError, match=r"known: all, openai-agents, .*jupyter-ai, toy;"):
        Recap(capture=["toys"])
    monkeypatch.setenv("JUPYTER_RECAP_CAPTURE", "all, -LangChain, toy, nonsense")
    assert Recap().capture == ["all", "-langchain", "toy"]


def test_loading_the_extension_scans_no_entry_point() -> None:
    """``%load_ext`` in a fresh process with a plugin installed: the load never reads the entry
    points (the worker does, once, after it), and the plugin is found."""
    code = (
        "import jupyter_recap.entrypoints as ep, sys, threading, time\n"
        f"sys.path.insert(0, {str(TOY)!r})\n"
        "calls = []\n"
        "real = ep.group_entries\n"
        "def spy(group):\n"
        "    if group == 'jupyter_recap.capture':\n"
        "        calls.append(threading.current_thread().name)\n"
        "    return real(group)\n"
        "ep.group_entries = spy  # before the capture modules import it\n"
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_line_magic('load_ext', 'jupyter_recap')\n"
        "during = list(calls)\n"
        "from jupyter_recap.ipython.extension import extension_for\n"
        "ext = extension_for(ip)\n"
        "deadline = time.monotonic() + 30\n"
        "while not ext.capture.plugins and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print(during, [p.name for p in ext.capture.plugins], calls, sep=' | ')\n"
        "ip.run_line_magic('unload_ext', 'jupyter_recap')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "JUPYTER_RECAP_CAPTURE"},
    ).stdout.splitlines()
    during, found, every = out[-1].split(" | ")
    assert "MainThread" not in during  # the load itself read no entry point
    assert found == "['toy']"
    assert every == "['jupyter-recap-worker']"  # once, on the worker
