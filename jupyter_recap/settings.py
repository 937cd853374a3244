"""Every kernel-side setting, as one traitlets class named ``Recap``.

``%config Recap.away_seconds = 30`` in a notebook and ``c.Recap.model = "anthropic:claude-…"`` in
``ipython_config.py`` both land here. Environment variables give the defaults where noted.
"""

from __future__ import annotations

import math
import os

from traitlets import Bool, Dict, Float, Int, List, TraitError, Unicode, default, validate
from traitlets.config import Configurable

#: The highest price ``Recap.prices`` accepts, USD per million tokens: list prices are below a
#: hundred, and a typo of a few zeros would otherwise turn every cost shown into nonsense.
MAX_PRICE = 10_000.0

LONG_CELL_SECONDS = 60.0
"""A cell that ran at least this long is news to someone coming back (kernel and server)."""

#: The project's own capture sources, in the order ``%recap status`` lists them;
#: ``capture/specs`` has a spec for each. Plain names here, so checking ``Recap.capture`` loads
#: no capture code.
SOURCE_NAMES: tuple[str, ...] = (
    "openai-agents",
    "pydantic-ai",
    "langchain",
    "smolagents",
    "opentelemetry",
    "jupyter-ai",
)

#: The entry-point group of capture sources (the project's own and plugins'): each entry names
#: a source and points at its ``CaptureSpec``.
CAPTURE_GROUP = "jupyter_recap.capture"

_FALSE = {"0", "false", "no", "off"}
MEMORY_ENV = "JUPYTER_RECAP_MEMORY"
CAPTURE_ENV = "JUPYTER_RECAP_CAPTURE"
AUTO_HOSTED_ENV = "JUPYTER_RECAP_AUTO_HOSTED"


def env_flag(name: str, fallback: bool) -> bool:
    """Read a yes/no environment variable; anything but a clear "no" counts as yes."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return fallback
    return value.strip().lower() not in _FALSE


class Recap(Configurable):
    """Settings of the jupyter_recap IPython extension."""

    auto = Bool(
        help="""Draft recaps automatically: after you have been away from the notebook, when an
        agent turn ends while you are away, after the idle fallback, and when a stored session is
        resumed. `%recap` always works. Defaults to on (loading the extension is the opt-in);
        JUPYTER_RECAP_AUTO=0 in the environment turns it off.""",
    ).tag(config=True)

    @default("auto")
    def _auto_default(self) -> bool:
        return env_flag("JUPYTER_RECAP_AUTO", True)

    away_seconds = Float(
        90.0,
        help="Seconds of continuous absence from the notebook before a recap is drafted.",
    ).tag(config=True)

    post_turn_seconds = Float(
        3.0,
        help="""Seconds to wait after an agent turn ends while you are away before drafting, so
        that the steps of a multi-step agent loop do not each trigger a recap.""",
    ).tag(config=True)

    idle_seconds = Float(
        120.0,
        help="""Idle fallback: seconds without input after an agent turn before drafting.
        Only used while no focus report has been seen for this kernel (frontends without
        the labextension).""",
    ).tag(config=True)

    model = Unicode(
        help="""Which engine writes recaps: "auto" (the model of the latest agent cell when its
        provider has credentials, else the offline engine), "offline", or "provider:model" such as
        "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5" or "ollama:llama3.2" ("provider/model"
        works too). JUPYTER_RECAP_MODEL in the environment sets the default.""",
    ).tag(config=True)

    @default("model")
    def _model_default(self) -> str:
        return os.environ.get("JUPYTER_RECAP_MODEL", "").strip() or "auto"

    fast_model = Unicode(
        "",
        help="""A cheaper model to try before the active one, e.g. "openai:gpt-4o-mini" when your
        agent runs on a larger sibling. Empty: use the active model.""",
    ).tag(config=True)

    during_active = Bool(
        False,
        help="""Allow drafting while an agent turn is still running. Off by default: a trigger
        that fires mid-turn waits for the turn to end.""",
    ).tag(config=True)

    agent_magics = List(
        Unicode(),
        default_value=["ai", "agent"],
        help="""Cell magics whose cells are agent turns (without the %%). jupyter-ai's `%%ai` is
        included; add your own agent magics here.""",
    ).tag(config=True)

    capture = List(
        Unicode(),
        help="""Agent frameworks whose runs are recorded as agent turns, from plain cells and with
        no wiring: "openai-agents", "pydantic-ai", "langchain" (LangChain and LangGraph),
        "smolagents", "opentelemetry" (GenAI spans of any instrumented library), "jupyter-ai"
        (its `%ai` line magic) and the sources of installed capture plugins (the
        "jupyter_recap.capture" entry points), or "all". A name with a leading "-" turns that
        source off: ["all", "-langchain"] (or ["-langchain"] alone) is every source but
        LangChain's, and a plugin turned off this way is not even imported. Each source is
        installed when its framework is first imported. Defaults to all;
        JUPYTER_RECAP_CAPTURE=0 in the environment turns capture off, and a comma-separated list
        there chooses sources ("all,-langchain").""",
    ).tag(config=True)

    @default("capture")
    def _capture_default(self) -> list[str]:
        value = os.environ.get(CAPTURE_ENV)
        if value is None or not value.strip():
            return ["all"]
        if value.strip().lower() in _FALSE:
            return []
        names = [_normal(name) for name in value.split(",") if name.strip()]
        # A typo in the environment must not stop the extension from loading: it is dropped
        # (and %recap status shows which sources are on).
        unknown = _unknown_sources(names)
        return [name for name in names if name not in unknown]

    long_cell_seconds = Float(
        LONG_CELL_SECONDS,
        help="""A cell that runs at least this long is noted in the transcript with its duration
        and how it ended, so a recap can say what happened while you were away.""",
    ).tag(config=True)

    record_code_cells = Bool(
        True,
        help="""Also record ordinary cells (the head of their source and whether they failed) as
        activity around the agent turns.""",
    ).tag(config=True)

    memory = Bool(
        help="""Keep project memory: notes agents store with `jupyter_recap.remember` (or you with
        `%remember`), shared by the notebooks of one project and shown to recaps. Off: nothing is
        loaded or written. Defaults to on; JUPYTER_RECAP_MEMORY=0 in the environment turns it
        off.""",
    ).tag(config=True)

    @default("memory")
    def _memory_default(self) -> bool:
        return env_flag(MEMORY_ENV, True)

    max_context_chars = Int(
        12000,
        help="Upper bound on the transcript text sent to the model for one recap.",
    ).tag(config=True)

    timeout_seconds = Float(
        60.0,
        help="Backstop for one recap: a model call still unanswered after this is abandoned.",
    ).tag(config=True)

    prices = Dict(
        help="""Model prices in US dollars per million tokens, as [input, output], keyed by model
        id, e.g. {"openai:gpt-4o-mini": [0.15, 0.6]}. They override or extend the built-in
        table of list prices, which is an estimate; an entry also prices the dated versions of
        its model ("anthropic:claude-3-5-haiku" prices "anthropic:claude-3-5-haiku-20241022").
        A model priced nowhere has its tokens counted and no cost shown.""",
    ).tag(config=True)

    daily_budget = Int(
        100,
        help="""The most model calls automatic recaps may make per person per local day, across
        all kernels. When it is spent, automatic recaps use the offline engine until midnight;
        `%recap` still calls the model. 0: automatic recaps never call a model.""",
    ).tag(config=True)

    auto_hosted = Bool(
        help="""Let automatic recaps send the recent transcript to a hosted model (OpenAI,
        Anthropic, OpenRouter). Off: automatic recaps use only local models (Ollama, a
        localhost server) or the offline engine; `%recap` still uses the model you set.
        Defaults to on; JUPYTER_RECAP_AUTO_HOSTED=0 in the environment turns it off.""",
    ).tag(config=True)

    @default("auto_hosted")
    def _auto_hosted_default(self) -> bool:
        return env_flag(AUTO_HOSTED_ENV, True)

    @validate("prices")
    def _valid_prices(self, proposal: dict[str, object]) -> object:
        value = proposal["value"]
        checked: dict[str, list[float]] = {}
        for name, price in value.items() if isinstance(value, dict) else ():
            where = f"Recap.prices[{name!r}]"
            if not isinstance(name, str) or not name.strip():
                raise TraitError(f"{where}: the key must be a model id such as 'openai:gpt-4o'")
            numbers = list(price) if isinstance(price, (list, tuple)) else None
            if numbers is None or len(numbers) != 2 or not all(_is_price(n) for n in numbers):
                raise TraitError(
                    f"{where}: expected [input, output] US dollars per million tokens, two "
                    f"numbers from 0 to {MAX_PRICE:,.0f}; got {price!r}"
                )
            checked[name.strip()] = [float(n) for n in numbers]
        return checked

    @validate("daily_budget")
    def _valid_budget(self, proposal: dict[str, object]) -> object:
        value = proposal["value"]
        if isinstance(value, int) and value < 0:
            raise TraitError(
                f"Recap.daily_budget must not be negative (got {value}); 0 keeps automatic "
                "recaps off the model"
            )
        return value

    @validate("away_seconds", "post_turn_seconds", "idle_seconds", "timeout_seconds")
    def _non_negative(self, proposal: dict[str, object]) -> object:
        value = proposal["value"]
        if isinstance(value, (int, float)) and value < 0:
            raise TraitError(f"Recap.{proposal['trait'].name} must not be negative")  # type: ignore[attr-defined]
        return value

    @validate("max_context_chars")
    def _context_floor(self, proposal: dict[str, object]) -> object:
        value = proposal["value"]
        if isinstance(value, int) and value < 1000:
            raise TraitError("Recap.max_context_chars must be at least 1000")
        return value

    @validate("capture")
    def _known_sources(self, proposal: dict[str, object]) -> object:
        value = proposal["value"]
        names = [_normal(str(name)) for name in value] if isinstance(value, list) else []
        names = [name for name in names if name]
        unknown = _unknown_sources(names)
        if unknown:
            plugins = sorted(registered_sources() - set(SOURCE_NAMES))
            known = ", ".join(("all", *SOURCE_NAMES, *plugins))
            raise TraitError(
                f"Recap.capture: unknown source {unknown[0]!r} (known: {known}; a leading '-' "
                "turns one off)"
            )
        return names


def registered_sources() -> frozenset[str]:
    """The names of every source in the :data:`CAPTURE_GROUP` entry points (the project's own
    included), read from the installed distributions' metadata without loading any of them.

    A scan of every distribution's metadata: it costs more than the whole ``%load_ext``, so it
    runs only when a setting names a source that is not one of :data:`SOURCE_NAMES`.
    """
    from .entrypoints import group_entries

    entries, _ = group_entries(CAPTURE_GROUP)  # an unreadable distribution names no source
    return frozenset(_normal(entry.name) for entry in entries)


def _normal(name: str) -> str:
    """A ``Recap.capture`` entry as the sources are compared: ``" -LangChain"`` is
    ``"-langchain"``."""
    name = name.strip().lower()
    return f"-{name[1:].strip()}" if name.startswith("-") else name


def _unknown_sources(names: list[str]) -> list[str]:
    """The entries of ``names`` that name no installed source, in their order.

    Turning off a source that is not installed is not an error (a setting kept after a plugin
    was uninstalled still loads); a bare ``"-"`` or ``"-all"`` is. The entry points are
    scanned only when an entry is neither ``"all"`` nor a built-in source.
    """
    others = {name for name in names if name not in ("all", *SOURCE_NAMES) and name[:1] != "-"}
    if others:
        others -= registered_sources()
    return [name for name in names if name in others or name in ("-", "-all")]


def _is_price(value: object) -> bool:
    """A price per million tokens: a number from 0 to :data:`MAX_PRICE`, not a bool."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_PRICE
    )
