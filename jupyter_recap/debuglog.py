"""The debug log: a file of ``[jupyter_recap]`` lines, never the notebook.

Automatic recaps must fail silently in the notebook, but a developer still needs to see why. All
diagnostics go to ``jupyter_recap.log`` in the Jupyter runtime directory (``JUPYTER_RECAP_LOG``
names another file; ``JUPYTER_RECAP_LOG=0`` turns the file off). The logger never propagates, so
nothing reaches stderr, which in a kernel is a cell's output.

Every kernel of the person appends to the same file for as long as it runs, so the file is
bounded: past :data:`MAX_BYTES` it is rotated once (``jupyter_recap.log.1``), whatever the
number of kernels (a rotation racing another process's costs a few lines, never the bound).
It is created private (0600): diagnostics name notebooks and models.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import threading
from pathlib import Path

from .textutil import printable

LOGGER_NAME = "jupyter_recap"
#: Size at which the log is rotated; with the one rotated file, the log never passes twice this.
MAX_BYTES = 1 << 20
_FORMAT = "%(asctime)s [jupyter_recap] %(levelname)s %(message)s"
_lock = threading.Lock()
_configured = False


def log_path() -> Path | None:
    """Where the debug log goes, or None when it is turned off."""
    configured = os.environ.get("JUPYTER_RECAP_LOG", "").strip()
    if configured.lower() in {"0", "off", "false", "no"}:
        return None
    if configured:
        return Path(configured).expanduser()
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / "jupyter_recap.log"


def get_logger() -> logging.Logger:
    """The package logger, set up on first use with the file handler (or none)."""
    global _configured
    logger = logging.getLogger(LOGGER_NAME)
    if _configured:
        return logger
    with _lock:
        if not _configured:
            logger.propagate = False
            logger.setLevel(logging.DEBUG)
            handler: logging.Handler = logging.NullHandler()
            path = log_path()
            if path is not None:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
                    handler = _PrivateRotatingHandler(
                        path, maxBytes=MAX_BYTES, backupCount=1, encoding="utf-8", delay=True
                    )
                    handler.setFormatter(_InertFormatter(_FORMAT))
                except OSError:
                    handler = logging.NullHandler()
            logger.addHandler(handler)
            _configured = True
    return logger


class _InertFormatter(logging.Formatter):
    """Log lines quote model ids, server answers and notebook names: people read the file in a
    terminal, so escape sequences and control characters are removed from them too."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler whose new files are 0600 and which never raises into a caller."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return io.TextIOWrapper(
            io.FileIO(fd, "a"), encoding=self.encoding, errors=self.errors, line_buffering=False
        )

    def handleError(self, record: logging.LogRecord) -> None:
        # A full disk or a vanished runtime directory must not print a traceback to stderr,
        # which in a kernel is a cell's output.
        return


def reset() -> None:
    """Drop the handlers so the next :func:`get_logger` reads the environment again (tests)."""
    global _configured
    with _lock:
        logger = logging.getLogger(LOGGER_NAME)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        _configured = False
