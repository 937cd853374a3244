"""What a test needs installed. Missing is a failure that says what to install, never a skip: a
run that skipped a suite for want of a package would pass as if it had run it."""

from __future__ import annotations

import importlib.util

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
