"""Shared by the browser tests: one offline JupyterLab for the modules that can share it.

Starting ``jupyter lab`` costs about 3 s and 3.5 CPU-s. Modules whose tests each open their
own notebooks (by names no other sharing module uses) and read nothing server-wide take this
one, by using a ``lab`` fixture they do not define themselves (``test_lab.py``, ``test_lab_day.py``,
``test_lab_focus.py``, ``test_lab_review.py``, ``reliability/test_banner_layout.py`` and
more). Modules that read server-wide state (the agents board, notifications over every
notebook, the usage ledger) or need other server options define their own ``lab``, which
overrides this one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labserver import LabServer, offline_lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One offline lab for a worker's session (each xdist worker starts its own)."""
    yield from offline_lab(tmp_path_factory.mktemp("sharedlab"))
