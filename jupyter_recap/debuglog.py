"""The debug log: a file of ``[jupyter_recap]`` lines, never the notebook.

Automatic recaps must fail silently in the notebook, but a developer still needs to see why. All
diagnostics go to ``jupyter_recap.log`` in the Jupyter runtime directory (``JUPYTER_RECAP_LOG``
names another file; ``JUPYTER_RECAP_LOG=0`` turns the file off). The logger never propagates, so
nothing reaches stderr, which in a kernel is a cell's output.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

LOGGER_NAME = "jupyter_recap"
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
                    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
                    handler.setFormatter(logging.Formatter(_FORMAT))
                except OSError:
                    handler = logging.NullHandler()
            logger.addHandler(handler)
            _configured = True
    return logger


def reset() -> None:
    """Drop the handlers so the next :func:`get_logger` reads the environment again (tests)."""
    global _configured
    with _lock:
        logger = logging.getLogger(LOGGER_NAME)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        _configured = False
