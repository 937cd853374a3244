"""The readable text of a cell's outputs, one rule for the live kernel and for saved notebooks.

A recap reads what a cell showed: markdown, else plain text, else a richer text format. Widgets
and images have no readable text (their ``text/plain`` is a placeholder such as
``<Figure size 640x480 with 1 Axes>``), so both the recorder and ``jupyter recap NOTEBOOK`` skip
them the same way.

The reply of an agent cell is its answer (:func:`agent_reply`): what the cell returned or
displayed when there is something, and what it printed only when there is nothing else. A
custom magic often prints a progress line and then returns its answer; jupyter-ai displays
Markdown; a script-like agent prints everything. Both the recorder and the notebook reader
apply this rule, so a live session and its saved notebook tell the same story.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass

from .agentcells import jupyter_ai_failure

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


# IPython colours tracebacks and sometimes error values; the transcript wants plain text.
@functools.cache
def _ansi() -> re.Pattern[str]:
    return re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# The text/plain of a rich display object is a repr with no content: "<IPython...HTML object>".
@functools.cache
def _object_repr() -> re.Pattern[str]:
    return re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")


# Richer formats jupyter-ai can return (-f html/math/json), tried when text/plain is a repr.
_FALLBACK_MIMES = ("text/latex", "text/html", "application/json")


def multiline_text(value: object) -> str:
    """nbformat multiline strings are a str or a list of str (anything else: empty)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ansi().sub("", text)


def bundle_text(data: object) -> str:
    """The readable text of a display bundle: markdown, else plain text, else a rich format."""
    if not isinstance(data, dict):
        return ""
    if WIDGET_MIME in data:
        return ""
    if "text/markdown" in data:
        return multiline_text(data["text/markdown"])
    if any(isinstance(mime, str) and mime.startswith("image/") for mime in data):
        return ""
    plain = strip_ansi(multiline_text(data.get("text/plain"))).strip()
    if plain and not _object_repr().match(plain):
        return plain
    for mime in _FALLBACK_MIMES:
        if mime in data:
            value = data[mime]
            return value if isinstance(value, str) else multiline_text(value) or json.dumps(value)
    return ""


def unrepr(text: str) -> str:
    """The string a ``text/plain`` repr of a ``str`` stands for (``'a\\nb'`` → a, newline, b);
    any other text as it is. A cell that returns a string is saved and shown as its repr."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] not in "'\"" or stripped[-1] != stripped[0]:
        return text
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, str) else text


# Lines LiteLLM prints on stdout before it raises (jupyter-ai 3 calls every model through it):
# a help banner that says nothing about the work, whatever the error was.
_LITELLM_BANNER = (
    "Give Feedback / Get Help: https://github.com/BerriAI/litellm",
    "LiteLLM.Info: If you need to debug this error",
    "Provider List: https://docs.litellm.ai/docs/providers",
)


# A progress print rather than an answer: short, and wholly in brackets ("(working for 20 s…)"),
# or ending in an ellipsis ("Calling the model..."), or a progress bar (" 40%|████  |"), or
# only marks (a spinner frame, a rule).
@functools.cache
def _progress() -> re.Pattern[str]:
    return re.compile(
        r"""^\s*(?:
            [(\[].*[)\]]
          | .*(?:…|\.\.\.)[)\]]?
          | .*\d\s?%\s*\|.*
          | [\W_]+
        )\s*$""",
        re.VERBOSE,
    )


_PROGRESS_CHARS = 120


def printed_lines(text: str) -> list[str]:
    """What printed ``text`` reads as, line by line: colour codes gone, a line rewritten with
    ``\\r`` (a progress bar) showing its latest state, LiteLLM's help banner left out."""
    lines = []
    for line in strip_ansi(text).replace("\r\n", "\n").split("\n"):
        if "\r" in line:
            line = next((part for part in reversed(line.split("\r")) if part.strip()), "")
        if not line.strip().startswith(_LITELLM_BANNER):
            lines.append(line.rstrip())
    return lines


def is_progress_line(line: str) -> bool:
    """Whether ``line`` reads as a progress print (``(working…)``, ``Thinking...``, a bar)."""
    stripped = line.strip()
    return len(stripped) <= _PROGRESS_CHARS and _progress().match(stripped) is not None


def printed_answer(text: str) -> str:
    """The answer in what an agent cell printed: everything from its first substantial line.

    Progress lines printed before the answer ("(stand-in agent working for 20 s…)") are left
    out, so the reply is the answer; when nothing but progress was printed, that is the reply.
    """
    lines = printed_lines(text)
    start = 0
    while start < len(lines) and (not lines[start].strip() or is_progress_line(lines[start])):
        start += 1
    answer = "\n".join(lines[start:]).strip()
    return answer or "\n".join(lines).strip()


@dataclass(frozen=True)
class Shown:
    """What an agent cell showed, sorted by where it went (live, or read from a saved file)."""

    results: tuple[str, ...] = ()
    """The readable texts of what it displayed and returned (its value last), in order."""
    stdout: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class Reply:
    """An agent cell's reply, and the failure it reported without raising (if it did)."""

    text: str
    failure: str | None = None


def agent_reply(shown: Shown) -> Reply:
    """The reply of an agent cell (see the module docstring), and how it says it failed.

    jupyter-ai reports many failures by returning or displaying an error text and printing
    LiteLLM's banner (:func:`~.agentcells.jupyter_ai_failure`); and a cell that answered
    nothing but wrote a message to stderr failed too (jupyter-ai's missing model, unknown
    model, missing key): that line says why. Such a cell has no reply, only the failure.
    """
    results = [text.strip() for text in shown.results if text and text.strip()]
    for text in results:
        failure = jupyter_ai_failure(unrepr(text))
        if failure is not None:
            return Reply("", failure)
    if results:
        return Reply("\n\n".join(results))
    printed = printed_answer(shown.stdout)
    if printed:
        return Reply(printed)
    return Reply("", _last_message(shown.stderr))


# "path.py:12: DeprecationWarning: …": Python's warnings say nothing failed.
@functools.cache
def _warning() -> re.Pattern[str]:
    return re.compile(r"^\S.*:\d+: \w*Warning: ")


def _last_message(text: str) -> str | None:
    """The last line of stderr ``text`` that reports a problem, or None when nothing does.

    A warning, its indented source line, a traceback's frames and a progress bar (tqdm writes
    to stderr) report no failure; a line of its own, such as jupyter-ai's "No Model ID
    entered…", does.
    """
    for line in reversed(printed_lines(text)):
        if (
            line.strip()
            and not line[:1].isspace()
            and not _warning().match(line)
            and not is_progress_line(line)
        ):
            return line.strip()
    return None
