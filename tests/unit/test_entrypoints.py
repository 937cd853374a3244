"""An entry-point group read one distribution at a time: one broken distribution anywhere in the
environment hides no plugin (jupyter_recap.entrypoints)."""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_recap.entrypoints import group_entries

GROUP = "jupyter_recap.test_group"


def write_dist(site: Path, name: str, version: str, entry_points: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


class Unreadable:
    """A distribution whose files cannot be read (its folder replaced, permissions lost)."""

    _path = Path("broken_dist-1.0.dist-info")
    version = "1.0"

    def read_text(self, filename: str) -> str:
        raise PermissionError(f"[Errno 13] Permission denied: '{filename}'")


def test_a_distribution_that_cannot_be_read_hides_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dist(tmp_path, "plug-one", "0.1", f"[{GROUP}]\nalpha = plug_one:make\n")
    write_dist(tmp_path, "Plug_Two", "2.0", f"[{GROUP}]\nbeta = plug_two:make\n[other]\nx = y:z\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    real = importlib.metadata.distributions

    def with_a_broken_one() -> Iterator[object]:
        yield Unreadable()
        yield from real()

    monkeypatch.setattr(importlib.metadata, "distributions", with_a_broken_one)
    entries, problems = group_entries(GROUP)
    assert sorted((e.name, e.value, e.distribution, e.version) for e in entries) == [
        ("alpha", "plug_one:make", "plug-one", "0.1"),
        ("beta", "plug_two:make", "plug-two", "2.0"),
    ]
    assert problems == [
        "broken-dist: PermissionError: [Errno 13] Permission denied: 'entry_points.txt'"
    ]
    assert "plug_one" not in sys.modules  # nothing loaded


def test_a_malformed_entry_costs_its_distribution_nothing_even_with_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """importlib_metadata (which many packages install, and which then answers the standard
    library's lookups too) refuses a value that is not ``module:attr`` as it reads the file:
    through it, one such entry lost every entry point of the environment's group."""
    import importlib_metadata  # a test dependency (several frameworks bring it)

    # The distributions as importlib_metadata reads them, whoever asks.
    monkeypatch.setattr(importlib.metadata, "distributions", importlib_metadata.distributions)
    write_dist(
        tmp_path,
        "plug-mixed",
        "0.3",
        f"[{GROUP}]\ngood = plug_mixed:make\nbad = not a module: at all\n# note\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entries, problems = group_entries(GROUP)
    assert ("good", "plug_mixed:make") in [(e.name, e.value) for e in entries]
    bad = [e for e in entries if e.name == "bad"]
    # Kept for the loader to refuse with its reason, or reported here: never raised.
    assert bad or any("'bad'" in line for line in problems)


def test_the_first_copy_of_a_distribution_on_the_path_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_dist(first, "plug-dup", "2.0", f"[{GROUP}]\ngamma = new:make\n")
    write_dist(second, "plug-dup", "1.0", f"[{GROUP}]\ngamma = old:make\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(second))
        patch.syspath_prepend(str(first))
        entries, _ = group_entries(GROUP)
    assert [(e.value, e.version) for e in entries] == [("new:make", "2.0")]
