"""Parsing the first line of an agent cell (``%%ai openai-chat:gpt-4o-mini -f code``).

Shared by the notebook reader and the live kernel recorder so that both agree on what counts as
an agent turn, what the prompt is and which model it names. Plain string work only: this module
must stay importable without IPython.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

# jupyter-ai's cell-magic options (v2 and v3). Options that take a value must have that value
# skipped, or it would be mistaken for the model id (``-f code`` → model "code").
_VALUE_OPTIONS = frozenset(
    {
        "-f",
        "--format",
        "-m",
        "--model-parameters",
        "-n",
        "--region-name",
        "-q",
        "--request-schema",
        "-p",
        "--response-path",
        "--api-base",
        "--api-key-name",
    }
)
_FLAG_OPTIONS = frozenset(
    {"--eval", "--interpolate", "--no-interpolate", "-r", "--reset", "-v", "--verbose"}
)
# Short value options may carry their value glued on, click-style: ``-fcode``.
_SHORT_VALUE_OPTIONS = frozenset(o for o in _VALUE_OPTIONS if not o.startswith("--"))

# Line magics that only drive jupyter_recap itself; a cell made of these is bookkeeping.
_RECAP_EXTENSION_LINES = frozenset(
    {"%load_ext jupyter_recap", "%reload_ext jupyter_recap", "%unload_ext jupyter_recap"}
)


@dataclass(frozen=True)
class AgentCell:
    """An agent cell taken apart: ``%%<magic> <args>`` followed by the prompt ``body``."""

    magic: str
    """The cell magic's name without ``%%``, e.g. ``ai``."""
    args: str
    """Everything after the magic name on its line, stripped."""
    body: str
    """The prompt: the rest of the cell, stripped."""
    model: str | None
    """The first positional argument as written (``openai-chat:gpt-4o-mini``, ``openai/gpt-4o``)."""
    format: str | None
    """The ``-f``/``--format`` value, e.g. ``code``; None when not given."""
    persona: str | None = None
    """The Jupyter AI 3 persona the cell addresses (``%%ai gpt-4@Claude``, ``%%ai @Claude``):
    the magic then sends the prompt to that persona in the Jupyter server."""


def parse_agent_cell(source: str, agent_magics: Iterable[str]) -> AgentCell | None:
    """Return the agent cell in ``source``, or None when it is not one of ``agent_magics``.

    The magic must be on the first non-empty line (IPython drops leading blank lines and
    indentation before looking for a cell magic, so we do too).
    """
    # Be lenient about how the setting was written: "ai", "%%ai" and " ai " all mean %%ai.
    names = {m.strip().lstrip("%") for m in agent_magics}
    names.discard("")
    lines = source.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        # "%% ai" is not a cell magic: the name must follow the %% directly.
        if not stripped.startswith("%%") or stripped[2:3].isspace():
            return None
        parts = stripped[2:].split(None, 1)
        if not parts or parts[0] not in names:
            return None
        name, args = parts[0], parts[1].strip() if len(parts) > 1 else ""
        body = "\n".join(lines[index + 1 :]).strip()
        model, fmt = _model_and_format(args)
        return AgentCell(
            magic=name,
            args=args,
            body=body,
            model=model,
            format=fmt,
            persona=_persona(args) if name == "ai" else None,
        )
    return None


def looks_like_model_id(token: str) -> bool:
    """``openai-chat:gpt-4o-mini``, ``openai/gpt-4o``, ``gpt-4o``, ``llama3.2``: letters in it,
    and neither a persona's ``@`` nor only a number's digits (``20``, ``0.5``). Odd characters
    are left to the model resolution, which refuses (and shows inertly) what it cannot use."""
    return "@" not in token and any(c.isalpha() for c in token)


def _tokens(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:
        # An unbalanced quote (e.g. inside -m JSON) must not hide the model id.
        return args.split()


def _model_and_format(args: str) -> tuple[str | None, str | None]:
    """The first positional argument that is not a persona, and the ``-f`` value."""
    model: str | None = None
    fmt: str | None = None
    tokens = _tokens(args)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        option, eq, value = token.partition("=")
        if token.startswith("--") and eq and option in _VALUE_OPTIONS:
            if option == "--format":
                fmt = value
        elif token in _VALUE_OPTIONS:
            if i < len(tokens) and token in ("-f", "--format"):
                fmt = tokens[i]
            i += 1
        elif token[:2] in _SHORT_VALUE_OPTIONS and len(token) > 2 and not token.startswith("--"):
            if token[:2] == "-f":
                fmt = token[2:]
        elif token in _FLAG_OPTIONS or token.startswith("-"):
            # Unknown options are skipped on their own: guessing they take a value could
            # swallow the model id.
            continue
        elif model is None and looks_like_model_id(token):
            # "@name" is a jupyter-ai v3 persona, and a bare number ("%%agent 20") is some
            # agent's own argument: neither names a model.
            model = token
    return model, fmt or None


def _persona(args: str) -> str | None:
    """What follows the ``@`` of the first positional argument that has one (jupyter-ai's
    magics take the text after the last ``@`` as the persona's name)."""
    tokens = iter(_tokens(args))
    for token in tokens:
        if token in _VALUE_OPTIONS:
            next(tokens, None)  # its value
            continue
        if token.startswith("-"):
            continue
        if "@" in token:
            return token.rsplit("@", 1)[1] or None
        return None
    return None


def is_recap_only_cell(source: str) -> bool:
    """True when ``source`` only drives jupyter_recap (``%recap…``, loading it, configuring it).

    Such cells are never recorded: they are the person asking for a recap, not their work.
    Comment lines are allowed alongside, but at least one recap line must be present.
    """
    found = False
    for raw in source.splitlines():
        line = " ".join(raw.split())
        if not line or line.startswith("#"):
            continue
        if line.startswith(("%recap", "%config Recap")) or line in _RECAP_EXTENSION_LINES:
            found = True
            continue
        return False
    return found


# jupyter-ai's %ai line magic: subcommands that ask the model something (v2 "error", v3 "fix"),
# and those that only manage jupyter-ai itself.
AI_LINE_ASKS = frozenset({"error", "fix"})
_AI_LINE_MANAGES = frozenset(
    {"help", "list", "alias", "dealias", "register", "delete", "update", "version", "reset"}
)


def parse_ai_line(source: str) -> AgentCell | None:
    """The ``%ai`` line magic of a one-line cell, when it addresses a model.

    ``%ai error`` / ``%ai fix`` ask the model about the latest error; ``%ai MODEL …`` tries to
    prompt a model from the line (jupyter-ai answers that with an error telling to use ``%%ai``,
    which is worth recording as a failed turn). ``%ai list``, ``%ai help`` and the other
    management subcommands are ordinary cells.
    """
    lines = [line.strip() for line in source.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if len(lines) != 1 or not lines[0].startswith("%ai") or lines[0].startswith("%%"):
        return None
    if lines[0].endswith("?"):
        return None  # IPython reads a trailing "?" as a help request, not as the magic
    rest = lines[0][3:]
    if rest and not rest[0].isspace():
        return None  # %aifoo is another magic
    args = rest.strip()
    tokens = _tokens(args)
    if not tokens or tokens[0] in _AI_LINE_MANAGES or tokens[0].startswith("-"):
        return None
    if tokens[0] in AI_LINE_ASKS:
        model, fmt = _model_and_format(" ".join(tokens[1:]))
        return AgentCell(magic="ai", args=args, body="", model=model, format=fmt)
    model, fmt = _model_and_format(args)
    body = " ".join(tokens[1:]) if model == tokens[0] else ""
    return AgentCell(magic="ai", args=args, body=body, model=model, format=fmt)


def ai_line_prompt(agent: AgentCell, latest_error: str | None) -> str:
    """The prompt of a ``%ai`` line: its text, or for ``error``/``fix`` what jupyter-ai asks.

    The live kernel passes jupyter-ai's stored traceback, a saved notebook the failed cell's
    error line; both get jupyter-ai's own wording so that the two agree.
    """
    if agent.body:
        return agent.body
    command = agent.args.split()[0] if agent.args.split() else ""
    if command not in AI_LINE_ASKS:
        return f"%ai {agent.args}".strip()
    if latest_error is None:
        return f"%ai {command}: explain the latest error (none recorded)"
    if command == "fix":
        return f"Explain the following error and propose a fix:\n\n{latest_error}"
    return f"Explain the following error:\n\n{latest_error}"


# What jupyter-ai shows instead of an answer. These come back as the cell's value (or its
# displayed text) rather than as an exception, so the cell itself "succeeds":
_AI_FAILURE_PREFIXES = (
    # v3 catches every exception of its LiteLLM call and returns its text (after printing it).
    "Error calling language model:",
    # v3 personas (``%%ai @name``) that no running Jupyter server answered.
    "Error calling persona API:",
    "Error: No valid Jupyter Server instances found.",
    # v2 returns this for a model id no provider claims.
    "Cannot determine model provider from model ID",
)
# ``%ai fix`` (v3) and ``%ai error`` (v2) answer with this note and ask no model at all.
_AI_NOTHING_SENT = "There have been no errors since the kernel started."


# LiteLLM names its exception twice ("litellm.AuthenticationError: AuthenticationError: …");
# once is enough in a line that a recap may have to shorten.
@functools.cache
def _litellm_repeat() -> re.Pattern[str]:
    return re.compile(r"\b(litellm\.(\w+)): \2: ")


def jupyter_ai_failure(text: str) -> str | None:
    """The error line when ``text`` (what a cell returned or displayed) is jupyter-ai saying
    that it failed or sent nothing, instead of an answer; None for anything else."""
    stripped = text.strip()
    if stripped == _AI_NOTHING_SENT:
        return f"jupyter-ai sent nothing to the model: {stripped}"
    if stripped.startswith(_AI_FAILURE_PREFIXES):
        return _litellm_repeat().sub(r"\1: ", stripped.splitlines()[0].strip())
    return None
