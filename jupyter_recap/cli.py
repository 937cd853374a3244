"""``jupyter recap NOTEBOOK.ipynb``: a recap of a saved notebook's agent session, from a terminal.

Exit codes are a contract for scripts: 0 a recap was printed, 1 there is none (the reason is on
stderr), 2 bad usage (unknown option, missing or unreadable notebook, unusable model). Every
failure is one ``jupyter recap: …`` line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, TYPE_CHECKING, NoReturn

from ._version import __version__
from .errors import ConfigError, NotebookError

if TYPE_CHECKING:
    from .settings import Recap as RecapSettings

PROG = "jupyter recap"
EXIT_OK, EXIT_NO_RECAP, EXIT_USAGE = 0, 1, 2

#: Set to show the traceback of an unexpected failure instead of one line.
DEBUG_ENV = "JUPYTER_RECAP_DEBUG"


class _UsageError(Exception):
    """Bad usage found after parsing; carries the one-line message."""


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one ``jupyter recap: …`` line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: {message} (see {PROG} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line. ``target`` is optional so that ``--sessions`` can stand alone later."""
    parser = _Parser(
        prog=PROG,
        description="Print a 1–3 sentence recap of the agent session in a saved notebook: "
        "the task, then the next step.",
        epilog="Exit status: 0 a recap was printed, 1 there is nothing to recap, 2 bad usage.",
    )
    parser.add_argument(
        "target",
        nargs="?",
        metavar="NOTEBOOK",
        help="the .ipynb file whose %%%%ai (or other agent magic) cells to recap",
    )
    parser.add_argument(
        "--model",
        metavar="M",
        help='"offline" (no network), "auto", or "provider:model" such as '
        '"openai:gpt-4o-mini" (default: Recap.model / $JUPYTER_RECAP_MODEL)',
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"recap": ..., "model": ..., "reason": ...} instead of text',
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``jupyter recap`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    _tolerate_unencodable_output()
    args = build_parser().parse_args(argv)
    try:
        if args.target is None:
            raise _UsageError("no notebook given: jupyter recap NOTEBOOK.ipynb")
        return _recap_notebook(args.target, model=args.model, as_json=args.json)
    except (_UsageError, NotebookError, ConfigError) as error:
        return _fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return 130  # the shell convention for "interrupted"; no traceback for Ctrl+C
    except Exception as error:  # one line, never a traceback, unless debugging
        if os.environ.get(DEBUG_ENV):
            raise
        return _fail(
            f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for details)",
            EXIT_NO_RECAP,
        )


def _recap_notebook(path: str, *, model: str | None, as_json: bool) -> int:
    # Imported here so that --help and usage errors stay instant.
    from .notebook import read_notebook
    from .service import draft_recap
    from .settings import Recap

    settings = Recap()
    magics = [str(m) for m in settings.agent_magics]
    transcript = read_notebook(
        path, agent_magics=magics, record_code_cells=bool(settings.record_code_cells)
    )
    if transcript.prompt_count == 0:
        looked_for = ", ".join(f"%%{m}" for m in magics) or "no agent magics configured"
        return _no_recap(f"no agent cells in {path} (looked for {looked_for})", as_json)
    _check_model(model, settings, transcript.active_model)
    result = draft_recap(transcript, model=model, settings=settings, trigger="cli")
    recap = result.recap
    if recap is None:
        return _no_recap(result.reason, as_json)
    if as_json:
        _print_json({"recap": recap.text, "model": recap.model, "reason": result.reason})
    else:
        print(recap.text)
        print(f"— {recap.model}")
    return EXIT_OK


def _check_model(model: str | None, settings: RecapSettings, active_model: str | None) -> None:
    """Raise ConfigError for a model choice that cannot be used at all (exit 2, not 1).

    ``draft_recap`` never raises, so a bad ``--model`` would otherwise look like "no recap".
    """
    from .models import resolve_models

    resolve_models(
        str(settings.model),
        override=model,
        fast_model=str(settings.fast_model),
        active_model=active_model,
        env=os.environ,
    )


def _no_recap(reason: str, as_json: bool) -> int:
    if as_json:
        _print_json({"recap": None, "model": None, "reason": reason})
    return _fail(reason, EXIT_NO_RECAP)


def _print_json(payload: dict[str, str | None]) -> None:
    print(json.dumps(payload, ensure_ascii=False))


def _fail(message: str, code: int, stream: IO[str] | None = None) -> int:
    # One line, whatever the message holds: scripts read stderr line by line.
    line = " ".join(message.split())
    print(f"{PROG}: {line}", file=stream or sys.stderr)
    return code


def _tolerate_unencodable_output() -> None:
    """Never crash on a terminal that cannot show "—" or a recap's characters."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


if __name__ == "__main__":
    sys.exit(main())
