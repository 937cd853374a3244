"""Shared fixtures: an isolated environment for every test, and a real IPython shell; the
test tiers (one folder each, one marker each) and the Hypothesis profiles."""

from __future__ import annotations

import asyncio
import atexit
import importlib
import os
import pkgutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import fakellm and helpers

from fakellm import fake_llm

TESTS = Path(__file__).parent

# LiteLLM (under jupyter-ai's magics and server extension) fetches its model price list from
# the internet when imported; no test may reach the internet, and kernels and servers started
# by the tests inherit this.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# The debug log of every kernel, server and shell the tests start goes to a temporary file of
# this test process, never to the person's Jupyter runtime folder. (The autouse fixture below
# gives each test its own; this covers what module fixtures start before it.)
os.environ["JUPYTER_RECAP_LOG"] = str(
    Path(tempfile.mkdtemp(prefix="recap-tests-")) / "recap-debug.log"
)

__all__ = ["fake_llm"]  # the local fake LLM server fixture, for every test module

# Property-based tests run the same examples on every run (a red CI run can be replayed
# locally) and without per-example deadlines, which a shared, noisy 2-core machine would trip.
# "ci" is the full strength (scripts/test selects it); "dev", the default of a bare pytest run,
# runs a fifth of the examples (tests that ask for a number say it through
# strength.examples, which scales it the same way).
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", settings.get_profile("ci"), max_examples=20)
# scripts/mutation runs each mutant's tests: a twentieth of the "ci" examples (the context and
# redaction modules are covered by 90 to 200 tests each), and no shrinking: a mutant a property
# test catches fails all the same, and shrinking its counterexample (tens of seconds for the
# stateful schedule test) would only make mutmut wait, then count it as a timeout.
settings.register_profile(
    "mutation",
    settings.get_profile("ci"),
    max_examples=5,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


#: Left out of Hypothesis's constant pool: the server adapter, whose import pulls in
#: jupyter_server, jupyter_events and jsonschema (1.5 CPU-seconds of a test process's start).
#: No property test draws for it.
_NOT_IN_THE_POOL = ("jupyter_recap.server",)


def _same_constants_in_every_run() -> None:
    """Give Hypothesis one fixed pool of our literals, whatever a run imports later.

    Hypothesis mixes literals from the local modules already imported into what it draws
    (``hypothesis.internal.conjecture.providers._get_local_constants``), so a derandomised test
    drew other examples in a full run, after tests that had imported more of the package,
    than alone. The core modules are imported here, and the pool is frozen with them when the
    session starts (:func:`pytest_sessionstart`): a test draws the same examples alone, in its
    tier or in the whole suite. Should a Hypothesis release move that function, the pool is
    left to grow and the fallback imports every module instead (slower, the same determinism).
    """
    import jupyter_recap

    frozen = hasattr(_providers(), "_get_local_constants")
    for module in _modules(jupyter_recap.__path__, "jupyter_recap."):
        if not frozen or not module.startswith(_NOT_IN_THE_POOL):
            importlib.import_module(module)


def _providers() -> Any:
    from hypothesis.internal.conjecture import providers

    return providers


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Freeze Hypothesis's constant pool: after its plugin's start-up (reading its cache of
    constants then is no start-up side effect it warns about), before the collection imports
    the test modules."""
    providers = _providers()
    if hasattr(providers, "_get_local_constants"):
        pool = providers._get_local_constants()
        providers._get_local_constants = lambda: pool


def _modules(path: list[str], prefix: str) -> Iterator[str]:
    """Every module below ``path``, without importing a package to look into it (as
    :func:`pkgutil.walk_packages` does)."""
    for module in pkgutil.iter_modules(path, prefix):
        if module.name.endswith("__main__"):  # __main__ runs the command line
            continue
        yield module.name
        if module.ispkg:
            folder = Path(path[0]) / module.name.rpartition(".")[2]
            yield from _modules([str(folder)], module.name + ".")


_same_constants_in_every_run()

# -- tiers ---------------------------------------------------------------------------------------

#: Each test module's tier is its folder under tests/ (tests/capture runs agent frameworks in
#: kernels). ``reliability`` folders (and the hub) are the fault and abuse suite as well.
TIERS = {
    "unit": "unit",
    "kernel": "kernel",
    "capture": "kernel",
    "server": "server",
    "browser": "browser",
    "hub": "hub",
}


class _Untiered(pytest.File):
    def collect(self) -> list[pytest.Item]:
        where = ", ".join(f"tests/{folder}/" for folder in TIERS)
        pytest.fail(f"{self.path.name} is in no tier: move it into one of {where}", pytrace=False)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A test module outside the tier folders fails collection, in one line."""
    if file_path.suffix != ".py" or not file_path.name.startswith("test_"):
        return None
    if _tier(file_path) is None:
        return _Untiered.from_parent(parent, path=file_path)
    return None


def _tier(path: Path) -> str | None:
    parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
    return TIERS.get(parts[0]) if len(parts) > 1 else None


#: The order tiers are handed to the workers in: the slowest modules first, so the quick unit
#: modules fill in at the end and neither worker waits alone for a minute-long browser module.
SLOWEST_FIRST = ("browser", "hub", "server", "kernel", "unit")


def _start_rank(item: pytest.Item) -> tuple[int, int]:
    tier = _tier(item.path)
    rank = SLOWEST_FIRST.index(tier) if tier in SLOWEST_FIRST else len(SLOWEST_FIRST)
    return rank, 0 if "reliability" in item.path.parts else 1  # the fault suites are heavier


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier (and ``reliability`` in the abuse suite's folders), and
    put the tiers in :data:`SLOWEST_FIRST` order. pytest-randomly has shuffled the modules and
    their tests before this runs; the sort is stable, so that order holds within each tier."""
    for item in items:
        tier = _tier(item.path)
        if tier is None:
            continue
        item.add_marker(tier)
        if tier == "hub" or "reliability" in item.path.parts:
            item.add_marker("reliability")
        if tier == "hub":
            item.add_marker(pytest.mark.xdist_group("hub"))  # one hub at a time
    items.sort(key=_start_rank)


# -- the abuse suite's count ---------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker: hand the hostile requests it counted to the controller."""
    from refusals import COUNTS

    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["refused"] = dict(COUNTS)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist, never called
def pytest_testnodedown(node: Any, error: object) -> None:
    """In the xdist controller: add up what each worker counted."""
    from refusals import COUNTS

    COUNTS.update(Counter(getattr(node, "workeroutput", {}).get("refused", {})))


# -- what each tier costs -------------------------------------------------------------------------

#: Tier → [tests, seconds] (setup, call and teardown summed; under xdist the controller hears
#: every worker's reports).
_TIER_COST: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add a test phase's time to its tier's."""
    tier = _tier(TESTS.parent / report.nodeid.split("::", 1)[0])
    if tier is None:
        return
    cost = _TIER_COST.setdefault(tier, [0, 0.0])
    if report.when == "setup":
        cost[0] += 1
    cost[1] += report.duration


#: ``JUPYTER_RECAP_TEST_COSTS=FILE``: each test's wall time and the CPU it cost (this process
#: and every child it reaped meanwhile: kernels, servers, browsers) appended to FILE as JSON
#: lines, one per test; ``benchmarks/bench_test_costs.py FILE`` sums them by module and says
#: which wait rather than work.
_COSTS_FILE = os.environ.get("JUPYTER_RECAP_TEST_COSTS", "")


def _cpu_seconds() -> float:
    import resource

    own, reaped = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """With ``JUPYTER_RECAP_TEST_COSTS`` set, record what the test cost (see above)."""
    if not _COSTS_FILE:
        yield
        return
    import json
    import time

    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    cost = {
        "test": item.nodeid,
        "wall": round(time.perf_counter() - wall, 3),
        "cpu": round(_cpu_seconds() - cpu, 3),
        # Which worker, and when it ended: how the run's last minutes were spent.
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "end": round(time.time(), 3),
        # Which environment: scripts/test-latest's rows land in the same file.
        "env": Path(sys.prefix).name,
    }
    with open(_COSTS_FILE, "a", encoding="utf-8") as out:  # one short line: appends whole
        out.write(json.dumps(cost) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Each tier's tests and time, and how many hostile requests the run saw refused, by
    status code (see tests/refusals.py)."""
    from refusals import COUNTS

    if _TIER_COST:
        tiers = sorted(_TIER_COST.items(), key=lambda item: -item[1][1])
        said = ", ".join(f"{tier} {int(n)} tests {s:.0f} s" for tier, (n, s) in tiers)
        total = sum(s for _, s in _TIER_COST.values())
        terminalreporter.write_line(f"time by tier (summed over workers, {total:.0f} s): {said}")
    if COUNTS:
        codes = ", ".join(f"{code}: {count}" for code, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"hostile requests refused: {sum(COUNTS.values())} ({codes})")


_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OPENROUTER_API_KEY",
    "JUPYTER_RECAP_MODEL",
    "JUPYTER_RECAP_AUTO",
    "JUPYTER_RECAP_AUTO_HOSTED",
    "JUPYTER_RECAP_MEMORY",
)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No test sees the developer's keys, and the debug log goes to a temporary file."""
    from jupyter_recap import debuglog

    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "recap-debug.log"
    monkeypatch.setenv("JUPYTER_RECAP_LOG", str(log))
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(tmp_path / "recap-home"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    debuglog.reset()
    yield log
    debuglog.reset()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium through Playwright, shared by a module's browser tests."""
    from browser import launch

    yield from launch()


@pytest.fixture(autouse=True)
def _quick_tier_spawns_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``scripts/test --quick`` (``JUPYTER_RECAP_QUICK``): a test that starts a process is
    skipped, saying so, when it tries; the full run (CI) runs it. Found where it happens, so a
    new test that spawns needs no marker to stay out of the quick loop."""
    if not os.environ.get("JUPYTER_RECAP_QUICK"):
        return
    import subprocess

    def skip(*args: object, **kwargs: object) -> None:
        pytest.skip("starts a process: left to the full run (scripts/test)")

    monkeypatch.setattr(subprocess.Popen, "__init__", skip)


@pytest.fixture
def shell() -> Iterator[object]:
    """A real InteractiveShell with in-memory history; the extension is unloaded afterwards."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from jupyter_recap.record import transcript
    from jupyter_recap.stores import workstate

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=config)  # display() publishes through the instance
    # IPython registers each shell's exit work (a reset, and a full gc.collect() over the whole
    # test process's heap) to run at interpreter exit: for a shell per test, thousands of those
    # ran after the last test. This shell is torn down below; nothing is left for exit.
    atexit.unregister(ip.atexit_operations)
    transcript.set_current(None)
    workstate.set_current_state(None)
    yield ip
    extensions = ip.extension_manager
    assert extensions is not None  # set up by InteractiveShell.__init__
    if "jupyter_recap" in extensions.loaded:
        extensions.unload_extension("jupyter_recap")
    transcript.set_current(None)
    workstate.set_current_state(None)
    InteractiveShell.clear_instance()


@pytest.fixture
def own_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh event loop, current for the test: the intake's timer is made on the current
    loop, and one an earlier test closed would refuse it ("Event loop is closed")."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()
