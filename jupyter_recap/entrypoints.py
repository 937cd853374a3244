"""Reading an entry-point group over the installed distributions, one distribution at a time.

``importlib.metadata.entry_points(group=…)`` reads every distribution's entry points in one go,
and one malformed entry anywhere in the environment (a value that is not ``module:attr``, which
``importlib_metadata`` — installed by many packages, and then answering for the standard
library's lookups too — refuses as it reads it) raises out of the whole call: every plugin of the
group is lost, ours included. :func:`group_entries` reads each distribution's
``entry_points.txt`` itself, keeps each entry it can, and reports the rest, one line each.

Nothing is loaded here: an entry's module is imported only when the caller loads it.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

MAX_PROBLEM_CHARS = 300


@dataclass(frozen=True)
class Entry:
    """One entry point of a group, and the distribution that declares it."""

    name: str
    value: str
    distribution: str
    version: str
    entry: importlib.metadata.EntryPoint


def group_entries(group: str) -> tuple[list[Entry], list[str]]:
    """The entries of ``group`` (each distribution once, the first found on the path) and one
    line per distribution, or entry, that could not be read."""
    entries: list[Entry] = []
    problems: list[str] = []
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        name = _name(dist)
        if name in seen:
            continue  # an older copy further down the path, as importlib.metadata skips it
        seen.add(name)
        try:
            text = dist.read_text("entry_points.txt") or ""
        except Exception as error:  # noqa: BLE001 - one broken distribution must not hide the rest
            problems.append(_line(f"{name or 'a distribution'}: {type(error).__name__}: {error}"))
            continue
        version = ""
        for section, key, value in _entries(text):
            if section != group:
                continue
            try:
                entry = importlib.metadata.EntryPoint(name=key, value=value, group=group)
            except Exception as error:  # noqa: BLE001 - a newer library checks the value here
                problems.append(_line(f"{name}: entry point {key!r}: {error}"))
                continue
            version = version or str(dist.version or "")
            entries.append(Entry(key, value, name, version, entry))
    return entries, problems


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(section, name, value) of each ``name = value`` line of an ``entry_points.txt`` (an INI
    file: ``[group]`` headers, ``#`` and ``;`` comments), read the way importlib.metadata reads
    it, without checking the values."""
    found: list[tuple[str, str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, equals, value = line.partition("=")
        if equals and section:
            found.append((section, key.strip(), value.strip()))
    return found


def _line(text: str) -> str:
    return text.splitlines()[0][:MAX_PROBLEM_CHARS] if text else text


def _name(dist: importlib.metadata.Distribution) -> str:
    """The distribution's name as packaging compares them (``Jupyter_Recap`` is
    ``jupyter-recap``); read from its folder's name when it has one, which costs no parse of
    its METADATA (jupyter_recap's holds the whole README)."""
    folder = getattr(dist, "_path", None)
    stem = getattr(folder, "name", "")
    if isinstance(stem, str) and stem.endswith((".dist-info", ".egg-info")):
        raw = stem.rsplit(".", 1)[0].split("-")[0]
    else:
        raw = str(dist.metadata["Name"] or "")
    parts = raw.lower().replace("_", "-").replace(".", "-").split("-")
    return "-".join(part for part in parts if part)
