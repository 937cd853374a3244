"""``jupyter-recap hook``: one hook event of a CLI agent, from stdin into the hook spool.

Claude Code, Codex and VS Code's agent hooks run this command at the events they are told to
(a prompt submitted, a tool used, the turn stopped) and write one JSON object to its stdin.
The command reads it (at most :data:`MAX_PAYLOAD_BYTES`), keeps what a recap needs of it
(:func:`jupyter_recap.hooks.events.normalise`: bounded, redacted) and appends that to the
spool under the session store (:mod:`jupyter_recap.stores.hookspool`), where the server
extension reads it into the notebook the agent worked on. ``--agent NAME`` says who sent it
when the payload's shape does not (Claude Code, Codex and VS Code are told apart by it).

A hook must never break the agent: whatever happens (no stdin, a payload that is not JSON or
is too long, a store that cannot be written or is not private), the command exits 0 and prints
nothing, because a hook's output is read by the agent (Claude Code adds a prompt hook's stdout
to the prompt). A write that fails is noted in the debug log. It runs on every tool call of the
agent, so it loads only the modules it needs: no argparse, no stores of sessions, no
``jupyter_core.paths`` in the common cases. The package's own ``jupyter-recap`` script is what
agents are told to run: ``jupyter recap hook`` does the same behind the ``jupyter`` launcher, a
second interpreter start that costs as much as the command itself.
"""

from __future__ import annotations

import os
import sys
import time

MAX_PAYLOAD_BYTES = 1 << 20
"""The largest payload read; a longer one is read to its end and dropped."""
DRAIN_BYTES = 64 << 20
"""Past the bound, at most this much more is read (and dropped) so that the agent's write of
the payload does not fail; a stream longer still is left unread."""
READ_SECONDS = 5.0
"""The longest the command waits for the payload (an agent writes it at once and closes)."""

USAGE = """\
usage: jupyter-recap hook [--agent NAME] < EVENT.json     (or: jupyter recap hook)

Reads one hook event of Claude Code, Codex or VS Code's agent hooks (JSON on stdin) and
appends what a recap needs of it to the hook spool, which the jupyter_recap server extension
reads into the notebook the agent worked on. Prints nothing and exits 0, always.

  --agent NAME   who sent the event, when its shape does not say (default: from the payload)
"""


def run_hook(argv: list[str]) -> int:
    """Run ``jupyter-recap hook ARGV``; always 0 (see the module's docstring)."""
    try:
        if "--help" in argv or "-h" in argv:
            sys.stdout.write(USAGE)  # asked by a person, never by an agent
            return 0
        _record(_agent_option(argv))
    except BaseException as error:  # noqa: BLE001 - a hook must never break the agent
        _note(f"hook: not recorded: {type(error).__name__}: {error}")
    return 0


def _record(agent: str | None) -> None:
    raw = _read_stdin()
    if not raw:
        return
    import json

    try:
        payload = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return  # not JSON: not an event
    from ..hooks.events import normalise

    event = normalise(payload, at=time.time(), agent=agent, cwd=_cwd())
    if event is None:
        return
    from ..errors import StoreError
    from ..stores.hookspool import append

    try:
        append(event.to_json())
    except StoreError as error:
        _note(f"hook: not recorded: {error}")


def _agent_option(argv: list[str]) -> str | None:
    """``--agent NAME`` or ``--agent=NAME``; anything else is ignored (never an error)."""
    for index, argument in enumerate(argv):
        if argument == "--agent" and index + 1 < len(argv):
            return argv[index + 1]
        if argument.startswith("--agent="):
            return argument.partition("=")[2]
    return None


def _read_stdin() -> bytes | None:
    """The payload on stdin, or None: no stdin, a terminal, no payload in time, too long."""
    try:
        fd = sys.stdin.fileno() if sys.stdin is not None else 0
        if os.isatty(fd):
            return None  # run by hand: nothing will come
    except (OSError, ValueError):
        return None
    deadline = time.monotonic() + READ_SECONDS
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_PAYLOAD_BYTES + DRAIN_BYTES:
        if not _readable(fd, deadline):
            return None
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return None
        if not chunk:
            break
        size += len(chunk)
        if size <= MAX_PAYLOAD_BYTES:
            chunks.append(chunk)
        else:
            chunks.clear()  # too long to be an event: read on, keep nothing
    return b"".join(chunks) if size <= MAX_PAYLOAD_BYTES else None


def _readable(fd: int, deadline: float) -> bool:
    """Whether ``fd`` has data (or its end) before ``deadline``; where ``select`` cannot wait
    on it (a pipe on Windows), a read is just tried."""
    left = deadline - time.monotonic()
    if left <= 0:
        return False
    if sys.platform == "win32":
        return True
    import select

    try:
        ready, _, _ = select.select([fd], [], [], left)
    except (OSError, ValueError):
        return True  # not selectable (a regular file): reading does not block
    return bool(ready)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None  # the agent's folder was removed under it


def _note(line: str) -> None:
    """One line in the debug log (a file, never the agent's screen); nothing if that fails."""
    try:
        from ..debuglog import get_logger

        get_logger().info("%s", line)
    except BaseException:  # noqa: BLE001 - the note is a courtesy
        pass
