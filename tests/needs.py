"""What a test needs: packages installed (missing is a failure that says what to install, never
a skip: a run that skipped a suite for want of a package would pass as if it had run it), and
a day that does not end while it runs."""

from __future__ import annotations

import datetime
import importlib.util
import time

import pytest

#: How the test dependencies get installed.
SETUP = "scripts/setup (it installs the `test` extra of pyproject.toml)"


def installed(name: str) -> bool:
    """Whether module ``name`` can be imported (a missing parent package counts as missing)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def modules(*names: str, why: str = "") -> None:
    """Fail the calling test (or fixture) in one line when any of ``names`` is missing."""
    missing = [name for name in names if not installed(name)]
    if missing:
        reason = f" ({why})" if why else ""
        pytest.fail(f"{', '.join(missing)} not installed{reason}: run {SETUP}", pytrace=False)


def a_day_that_lasts(seconds: float = 90) -> None:
    """Wait, if today ends within ``seconds``, until tomorrow has begun: for a test that reads
    "today" from the wall clock in several places (a subprocess, a kernel), so midnight
    cannot fall between them."""
    now = datetime.datetime.now()
    midnight = datetime.datetime.combine(now.date() + datetime.timedelta(days=1), datetime.time())
    left = (midnight - now).total_seconds()
    if left < seconds:
        time.sleep(left + 1)
