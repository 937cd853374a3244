"""What every ``jupyter recap`` command shares: its name, exit codes and one-line failures."""

from __future__ import annotations

import json
import sys
from typing import IO

PROG = "jupyter recap"
EXIT_OK, EXIT_NO_RECAP, EXIT_USAGE = 0, 1, 2

#: Sessions listed by ``--sessions`` unless ``--limit`` says otherwise.
DEFAULT_LIMIT = 15


class UsageError(Exception):
    """Bad usage found after parsing; carries the one-line message."""


def print_json(payload: dict[str, str | None]) -> None:
    print(json.dumps(payload, ensure_ascii=False))


def fail(message: str, code: int, stream: IO[str] | None = None) -> int:
    # One line, whatever the message holds: scripts read stderr line by line.
    line = " ".join(message.split())
    print(f"{PROG}: {line}", file=stream or sys.stderr)
    return code
