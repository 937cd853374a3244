"""``jupyter recap NOTEBOOK.ipynb``: a recap of a notebook's agent session, from a terminal.

The session is the notebook's stored story when the kernel stored it (which is the only record
of an agent run from plain cells): its newest session, framed by the earlier ones when that one
is short; else what the file's agent cells hold. Stderr says which, naming the sessions (see
:mod:`jupyter_recap.cli.stored` for the rule); ``--session ID`` picks exactly one.

Also ``jupyter recap ID`` (a stored session, by any unique id prefix of 4+ hex digits),
``jupyter recap --sessions [NOTEBOOK] [--all] [--limit N]`` (a listing of stored sessions) and
``jupyter recap --notes [NOTEBOOK|DIR]`` (the project memory a notebook's recaps draw on).

Exit codes are a contract for scripts: 0 a recap (or a listing) was printed, 1 there is none (the
reason is on stderr), 2 bad usage (unknown option, missing or unreadable notebook, unknown or
ambiguous session id, unusable model). Every failure is one ``jupyter recap: …`` line on stderr,
never a traceback. The listing path imports neither IPython, httpx nor tornado.

``jupyter recap hook`` (:mod:`jupyter_recap.cli.hook`) is what CLI agents' hooks run: one event
on stdin into the hook spool, exit 0 and no output whatever happens. It runs on every tool call
of an agent, so :func:`main` hands it over before anything else is loaded, and this module
loads the rest of the command line (its stores and listings) only when it runs.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from .._version import __version__
from ..errors import ConfigError, NotebookError, StoreError
from ..textutil import SHOWN_CHARS, printable, shorten

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from ..record.transcript import Transcript
    from ..settings import Recap
    from ..stores.framing import Framing

#: Set to show the traceback of an unexpected failure instead of one line.
DEBUG_ENV = "JUPYTER_RECAP_DEBUG"

#: What a session id (or a prefix of one) given instead of a notebook looks like.
_SESSION_ID = re.compile(r"^[0-9a-fA-F-]{4,36}$")
_HEX_OR_DASH = re.compile(r"^[0-9a-fA-F-]+$")
_MIN_HEX_DIGITS = 4


def build_parser() -> argparse.ArgumentParser:
    """The command line. ``target`` is optional so that ``--sessions`` can stand alone."""
    import argparse  # here, not for `jupyter recap hook`

    from .common import DEFAULT_LIMIT, EXIT_USAGE, PROG

    class _Parser(argparse.ArgumentParser):
        """argparse, but its errors are one ``jupyter recap: …`` line (no usage dump)."""

        def error(self, message: str) -> NoReturn:
            # The message may quote an argument, which may hold anything: made inert like the
            # rest.
            self.exit(EXIT_USAGE, f"{PROG}: {printable(message)} (see {PROG} --help)\n")

    parser = _Parser(
        prog=PROG,
        description="Print a 1–3 sentence recap of the agent session of a notebook (its "
        "newest stored session, framed by the earlier ones when it is short; else what the "
        "file holds), of a Jupyter AI chat, or of a stored session: the task, "
        "then the next step. With --sessions, list the stored sessions instead.",
        epilog="Exit status: 0 a recap (or listing) was printed, 1 there is nothing to recap, "
        "2 bad usage.",
    )
    parser.add_argument(
        "target",
        nargs="?",
        metavar="NOTEBOOK|CHAT|ID",
        help="the .ipynb notebook whose agent session to recap (its newest stored session, "
        "framed by the earlier ones when it is short; else its %%%%ai or other agent magic "
        "cells), a Jupyter AI .chat file (its agent "
        "persona's turns; the offline engine unless --model says otherwise), or the id "
        "(any unique prefix of 4 or more hex digits) of a stored session; with --sessions, "
        "the notebook whose sessions to list",
    )
    parser.add_argument(
        "--session",
        metavar="ID",
        help="recap exactly this stored session (an id or any unique prefix of 4 or more hex "
        "digits), nothing earlier framing it; with NOTEBOOK, it must be one of that "
        "notebook's sessions",
    )
    parser.add_argument(
        "--sessions",
        action="store_true",
        help="list the stored sessions, newest first: of NOTEBOOK, or of the notebooks under "
        "the current directory",
    )
    parser.add_argument(
        "--notes",
        action="store_true",
        help="list the project memory notes of NOTEBOOK (or of a directory; default: the "
        "current one): the git repository around it, or its directory",
    )
    parser.add_argument(
        "--usage",
        action="store_true",
        help="list the model calls recaps made over the last 30 days, all your kernels: "
        "calls, tokens and the estimated cost, per day",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="with --sessions: list the sessions of every notebook",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help=f"with --sessions: list at most N sessions (default: {DEFAULT_LIMIT})",
    )
    parser.add_argument(
        "--model",
        metavar="M",
        help='"offline" (no network), "auto", or "provider:model" such as '
        '"openai:gpt-4o-mini" (default: Recap.model / $JUPYTER_RECAP_MODEL)',
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact request the recap would send (system prompt and user message, "
        "after redaction) and to which model; send nothing",
    )
    parser.add_argument(
        "--state",
        action="store_true",
        help="print the session's state instead of a recap: the task, decisions, constraints, "
        "open failures (with the cell each happened in), what changed, what waits, next "
        "(NOTEBOOK, CHAT or ID as for a recap; no model is asked)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"recap": ..., "model": ..., "reason": ...} instead of text (with an ID, '
        'or a notebook recapped from its stored session, also "session_id"; with --sessions, '
        "a list of sessions)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``jupyter recap`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["hook"]:
        from .hook import run_hook  # first: the agent waits for it on every tool call

        return run_hook(given[1:])
    from .common import EXIT_NO_RECAP, EXIT_USAGE, UsageError, fail
    from .lists import list_notes, list_sessions, list_usage

    _tolerate_unencodable_output()
    args = build_parser().parse_args(argv)
    try:
        if args.sessions and args.notes:
            raise UsageError("--sessions and --notes do not go together")
        if args.session is not None and (args.sessions or args.notes or args.usage):
            raise UsageError("--session goes with a notebook, or alone")
        if args.usage:
            if args.target or args.sessions or args.notes or args.dry_run or args.model:
                raise UsageError("--usage goes alone (or with --json)")
            if args.all or args.limit is not None:
                raise UsageError("--all and --limit only go with --sessions")
            return list_usage(as_json=args.json)
        if args.dry_run and (args.sessions or args.notes):
            raise UsageError("--dry-run goes with a notebook or a session id only")
        if args.state and (args.sessions or args.notes or args.dry_run or args.model):
            raise UsageError("--state goes with a notebook, a .chat file or a session id only")
        if args.sessions:
            return list_sessions(args)
        if args.all or args.limit is not None:
            raise UsageError("--all and --limit only go with --sessions")
        if args.notes:
            return list_notes(args.target, as_json=args.json)
        options = Options(
            model=args.model, as_json=args.json, dry_run=args.dry_run, state=args.state
        )
        if args.target is None and args.session is not None:
            return _recap_session(_given_session(args.session), options)
        if args.target is None:
            raise UsageError(
                "no notebook given: jupyter recap NOTEBOOK.ipynb (or a session ID, or --sessions)"
            )
        if args.target.endswith(".chat"):
            if args.session is not None:
                raise UsageError("--session goes with a notebook, not a .chat file")
            return _recap_chat(args.target, options)
        session_id = _session_id(args.target)
        if session_id is not None:
            if args.session is not None:
                raise UsageError(f"a session ID and --session {args.session}: give one")
            return _recap_session(session_id, options)
        chosen = _given_session(args.session) if args.session is not None else None
        return _recap_notebook(args.target, options, session=chosen)
    except (UsageError, NotebookError, ConfigError, StoreError) as error:
        return fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return 130  # the shell convention for "interrupted"; no traceback for Ctrl+C
    except Exception as error:  # one line, never a traceback, unless debugging
        if os.environ.get(DEBUG_ENV):
            raise
        return fail(
            f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for details)",
            EXIT_NO_RECAP,
        )


def _given_session(text: str) -> str:
    """The id (prefix) given with ``--session``; UsageError when it cannot be one."""
    from .common import UsageError

    if _SESSION_ID.match(text) and sum(c != "-" for c in text) >= _MIN_HEX_DIGITS:
        return text
    shown = shorten(text, SHOWN_CHARS)
    raise UsageError(f"not a session id: {shown!r} (an id or its first 4 or more hex digits)")


def _session_id(target: str) -> str | None:
    """``target`` if it names a stored session rather than a notebook; UsageError if neither.

    An existing path or a name ending in ``.ipynb`` is a notebook (so a directory still gets the
    notebook reader's message); hex digits and dashes are an id (prefix).
    """
    from .common import UsageError

    if target.endswith(".ipynb") or os.path.isfile(target):
        return None
    if _SESSION_ID.match(target) and sum(c != "-" for c in target) >= _MIN_HEX_DIGITS:
        return target
    if os.path.exists(target):
        return None
    if _HEX_OR_DASH.match(target):
        raise UsageError(f"not a session id: {target!r} (an id or its first 4 or more hex digits)")
    shown = shorten(target, SHOWN_CHARS)
    raise UsageError(
        f"{shown!r} is neither a notebook (.ipynb) nor a session id (4 or more hex digits)"
    )


class Options(NamedTuple):
    """How to answer: the model, JSON or text, a recap or only the request it would send.

    (A NamedTuple: as immutable as a frozen dataclass, without loading ``dataclasses`` for
    ``jupyter recap hook``, which an agent runs on every tool call.)
    """

    model: str | None = None
    as_json: bool = False
    dry_run: bool = False
    state: bool = False
    """Print the session's state (``--state``) instead of a recap."""


def _recap_notebook(path: str, options: Options, *, session: str | None = None) -> int:
    # Imported here so that --help and usage errors stay instant.
    from ..record.notebookfile import read_notebook
    from ..settings import Recap
    from ..stores.framing import notebook_framing, record_framing
    from .common import PROG, say
    from .stored import choose

    settings = Recap()
    magics = [str(m) for m in settings.agent_magics]
    # The file is read first even when a session is stored: a missing or unreadable notebook
    # is bad usage (exit 2) either way, and its agent cells decide which story is newer.
    transcript = read_notebook(
        path, agent_magics=magics, record_code_cells=bool(settings.record_code_cells)
    )
    choice = choose(path, transcript, session=session)
    for warning in choice.warnings:
        say(f"{PROG}: warning: {warning}", sys.stderr)
    for note in choice.notes:
        say(f"{PROG}: {note}", sys.stderr)
    if choice.record is not None and choice.transcript is not None:
        # An agent run from plain cells leaves no agent cell in the file: only its stored
        # sessions tell the story (with its tool calls and task list).
        extra: dict[str, object] = {
            "session_id": choice.record.id,
            "sessions": list(choice.sessions),
        }
        if choice.transcript.prompt_count == 0:  # --session named one whose prompts are lost
            return _no_recap(f"session {choice.record.id} has no prompts", options.as_json, extra)
        framing = record_framing(choice.record, enabled=bool(settings.memory))
        return _recap(choice.transcript, settings, framing, options, extra=extra)
    if transcript.prompt_count == 0:
        looked_for = ", ".join(f"%%{m}" for m in magics) or "no agent magics configured"
        reason = f"no agent cells in {path} (looked for {looked_for}) and no stored session of it"
        return _no_recap(reason, options.as_json)
    framing = notebook_framing(path, enabled=bool(settings.memory))
    return _recap(transcript, settings, framing, options, extra={})


def _recap_chat(path: str, options: Options) -> int:
    from ..settings import Recap
    from .chat import chat_story, read_chat_file

    view = read_chat_file(path)
    if not view.has_persona:
        return _no_recap(f"no agent persona took part in {path}", options.as_json)
    transcript, framing, extra = chat_story(view)
    # Offline unless asked: reading where a chat's agent stands costs nothing, sends nothing.
    chosen = options._replace(model=options.model or "offline")
    return _recap(transcript, Recap(), framing, chosen, extra=extra)


def _recap_session(id_or_prefix: str, options: Options) -> int:
    from ..settings import Recap
    from ..stores.sessions import SessionStore

    record, transcript = SessionStore().load(id_or_prefix)  # StoreError: unknown or ambiguous
    extra: dict[str, object] = {"session_id": record.id}
    if transcript.prompt_count == 0:
        return _no_recap(f"session {record.id} has no prompts", options.as_json, extra)
    from ..stores.framing import record_framing

    settings = Recap()
    framing = record_framing(record, enabled=bool(settings.memory))
    return _recap(transcript, settings, framing, options, extra=extra)


def _recap(
    transcript: Transcript,
    settings: Recap,
    framing: Framing,
    options: Options,
    *,
    extra: Mapping[str, object],
) -> int:
    from ..pipeline.service import draft_recap
    from .common import EXIT_OK, print_json, say

    model, as_json = options.model, options.as_json
    if options.state:
        return _print_state(transcript, as_json, extra)
    _check_model(model, settings, transcript.active_model)
    if options.dry_run:
        return _dry_run(transcript, settings, framing, options, extra)
    from ..stores.usage import UsageLedger

    result = draft_recap(
        transcript,
        model=model,
        settings=settings,
        trigger="cli",
        framing=framing,
        usage=UsageLedger(),  # the person asked: counted, never held to the budget
    )
    recap = result.recap
    if recap is None:
        return _no_recap(result.reason, as_json, extra)
    if as_json:
        print_json({**extra, "recap": recap.text, "model": recap.model, "reason": result.reason})
    else:
        say(f"{recap.text}\n— {recap.model}")  # both model output: made inert
    return EXIT_OK


def _print_state(transcript: Transcript, as_json: bool, extra: Mapping[str, object]) -> int:
    """Print the session's state (``--state``): no model, nothing sent."""
    from ..record.statefold import fold
    from ..record.statetext import render_state
    from .common import EXIT_OK, print_json, say

    text = render_state(fold(transcript.entries), os.environ)
    if as_json:
        print_json({**extra, "state": text})
    else:
        say(text)  # the transcript is anyone's text: printed inert
    return EXIT_OK


def _dry_run(
    transcript: Transcript,
    settings: Recap,
    framing: Framing,
    options: Options,
    extra: Mapping[str, object],
) -> int:
    """Print the request a recap would send (``--dry-run``), sending nothing."""
    from ..pipeline.preview import preview_request
    from .common import EXIT_OK, print_json, say

    preview = preview_request(
        transcript, settings=settings, env=os.environ, model=options.model, framing=framing
    )
    if preview is None:
        return _no_recap("nothing to recap yet: no agent activity was recorded", options.as_json)
    if options.as_json:
        print_json({**extra, **preview.to_dict()})
    else:
        say(preview.render())  # the transcript is anyone's text: printed inert
    return EXIT_OK


def _check_model(model: str | None, settings: Recap, active_model: str | None) -> None:
    """Raise ConfigError for a model choice that cannot be used at all (exit 2, not 1).

    ``draft_recap`` never raises, so a bad ``--model`` would otherwise look like "no recap".
    """
    from ..pipeline.models import resolve_models

    resolve_models(
        str(settings.model),
        override=model,
        fast_model=str(settings.fast_model),
        active_model=active_model,
        env=os.environ,
    )


def _no_recap(reason: str, as_json: bool, extra: Mapping[str, object] | None = None) -> int:
    from .common import EXIT_NO_RECAP, fail, print_json

    if as_json:
        print_json({**(extra or {}), "recap": None, "model": None, "reason": reason})
    return fail(reason, EXIT_NO_RECAP)


def _tolerate_unencodable_output() -> None:
    """Never crash on a terminal that cannot show "—" or a recap's characters."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
