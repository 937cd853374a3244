"""What every ``jupyter recap`` command shares: its name, exit codes and one-line failures."""

from __future__ import annotations

import re
import sys
from typing import IO

from ..stores.sessions import LISTED_SESSIONS
from ..textutil import UNSAFE_CHARS, printable
from ..wire import strict_json

PROG = "jupyter recap"
EXIT_OK, EXIT_NO_RECAP, EXIT_USAGE = 0, 1, 2

#: Sessions listed by ``--sessions`` unless ``--limit`` says otherwise.
DEFAULT_LIMIT = LISTED_SESSIONS

# JSON escapes C0 controls itself; DEL, the C1 controls (a one-byte CSI among them) and the bidi
# controls it would write raw, and a terminal showing the JSON would act on them.
_UNSAFE_IN_JSON = re.compile(
    "[" + "".join(re.escape(c) for c in sorted(UNSAFE_CHARS) if c >= "\x7f") + "]"
)


class UsageError(Exception):
    """Bad usage found after parsing; carries the one-line message."""


def json_text(value: object) -> str:
    """``value`` as one line of JSON that keeps every string exact and is safe to print.

    Readable characters stay as they are (``ensure_ascii=False``); the controls JSON would leave
    raw are written as ``\\uXXXX`` escapes, which decode to the same text. They can only occur
    inside strings, so the escaping cannot change the JSON's structure.
    """
    text = strict_json(value, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def print_json(payload: object) -> None:
    print(json_text(payload))


def say(text: str, stream: IO[str] | None = None) -> None:
    """Print text meant for a person: escapes and control characters never reach the terminal."""
    print(printable(text), file=stream or sys.stdout)


def fail(message: str, code: int, stream: IO[str] | None = None) -> int:
    # One line, whatever the message holds: scripts read stderr line by line. A message can
    # quote a model server's error text or a file name, so it is made inert as well.
    line = " ".join(printable(message).split())
    print(f"{PROG}: {line}", file=stream or sys.stderr)
    return code
