"""The debug log stays bounded and private, however many kernels write to it for how long.

What used to happen: every kernel of the person appended to one log file forever (at debug
level), created with the umask's mode.
"""

from __future__ import annotations

import errno
import logging
import stat
from pathlib import Path

import pytest

from jupyter_recap import debuglog


def test_the_log_is_rotated_and_private(isolated_env: Path) -> None:
    log = debuglog.get_logger()
    line = "x" * 1000
    for _ in range(5000):  # about 5 MB of diagnostics
        log.debug("%s", line)
    debuglog.reset()
    files = [isolated_env, isolated_env.with_name(isolated_env.name + ".1")]
    sizes = [p.stat().st_size for p in files]
    assert all(size <= debuglog.MAX_BYTES + 2000 for size in sizes), sizes
    assert sorted(p.name for p in isolated_env.parent.glob(isolated_env.name + "*")) == [
        f.name for f in files
    ]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


class _FullDisk:
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_log_that_cannot_be_written_says_nothing(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk under the log must not print logging's traceback into a cell."""
    log = debuglog.get_logger()
    log.warning("first")
    (handler,) = [h for h in log.handlers if isinstance(h, logging.FileHandler)]
    real, handler.stream = handler.stream, _FullDisk()  # type: ignore[assignment]
    try:
        log.warning("second")
    finally:
        handler.stream = real
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_log_lines_carry_no_terminal_escapes(isolated_env: Path) -> None:
    """People read the log in a terminal: a model id or server answer quoted in it is inert."""
    debuglog.get_logger().warning("model %s failed", "evil\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e")
    debuglog.reset()
    text = isolated_env.read_text()
    assert "model evil failed" in text and "\x1b" not in text and "\u202e" not in text
