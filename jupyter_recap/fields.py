"""Reading the fields of a JSON object someone sent us: one reader per kind of field.

Every check of what a browser or a kernel sends the server goes through these: the bodies of the
routes (``server/handlers``, ``server/sessions``), their query arguments, and a kernel's agent
report (:mod:`.validate`). So do the files and payloads the recap only reads (a chat document,
an agent's hook payload, the hook spool), where a bad field is passed over (:func:`or_default`)
rather than answered. A reader takes the object holding the field and the field's dotted
path, which names the field in a message (its last part is the key); it returns the value or
raises :class:`FieldError`, whose message is one line: ``"<path>: <why>"``.

A field that is absent reads like ``null``: an optional field is then ``None`` (or its
default), a required one is refused. :func:`require` tells "absent" apart where that matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any, ParamSpec, TypeVar

_S = TypeVar("_S", bound=str)
_P = ParamSpec("_P")
_T = TypeVar("_T")
_D = TypeVar("_D")

MOST_SECONDS = 1e11
"""A moment is less than this many seconds either side of 1970 (past the year 5000): beyond it,
a time is a mistake, not a date."""


class FieldError(ValueError):
    """One field is bad; ``str(error)`` is the line that says which and why."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def get(data: Mapping[str, Any], path: str, default: object = None) -> Any:
    """The raw value of the field ``path`` (its last part is the key)."""
    return data.get(path.rpartition(".")[2], default)


def require(data: Mapping[str, Any], *paths: str) -> None:
    """Each field must be there (``null`` counts as there)."""
    for path in paths:
        if path.rpartition(".")[2] not in data:
            raise FieldError(path, "missing")


def string(data: Mapping[str, Any], path: str, cap: int, *, blank: bool = True) -> str:
    """A required string of at most ``cap`` characters (not only spaces, unless ``blank``)."""
    value = get(data, path)
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise FieldError(path, "must be a string" if blank else "must be a non-empty string")
    if len(value) > cap:
        raise FieldError(path, f"longer than {cap} characters")
    return value


def text(data: Mapping[str, Any], path: str, cap: int, *, blank: bool = True) -> str | None:
    """An optional string: :func:`string`, or None when the field is null or absent."""
    if get(data, path) is None:
        return None
    return string(data, path, cap, blank=blank)


def one_of(data: Mapping[str, Any], path: str, choices: Collection[_S]) -> _S | None:
    """One of ``choices``, or None when the field is null or absent."""
    value = get(data, path)
    # Only a string can be a choice: a list or an object is refused before it is looked up
    # (a set of choices would raise TypeError on it, being unhashable).
    chosen = isinstance(value, str) and value in choices
    if value is not None and not chosen:
        raise FieldError(path, f"must be one of {', '.join(choices)} or null")
    return value  # type: ignore[no-any-return]


def flag(data: Mapping[str, Any], path: str) -> bool:
    """true or false; absent is false."""
    value = get(data, path, False)
    if not isinstance(value, bool):
        raise FieldError(path, "must be true or false")
    return value


def count(data: Mapping[str, Any], path: str, most: int) -> int:
    """A required integer from 0 to ``most``."""
    value = get(data, path)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise FieldError(path, f"must be an integer from 0 to {most}")
    return value


def seconds(data: Mapping[str, Any], path: str) -> float | None:
    """A non-negative, finite number of seconds (to the millisecond), or None."""
    value = get(data, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(path, "must be a number of seconds or null")
    try:
        finite = math.isfinite(value)  # an integer of 400 digits overflows a float here
    except OverflowError:
        finite = False
    if not finite:
        raise FieldError(path, "must be a number of seconds or null")
    if value < 0:
        raise FieldError(path, "must not be negative")
    return round(float(value), 3)


def timestamp(data: Mapping[str, Any], path: str) -> float | None:
    """A moment in UNIX seconds (a finite number within :data:`MOST_SECONDS` of 1970), or
    None when the field is null or absent."""
    value = get(data, path)
    if value is None:
        return None
    # abs(value) < MOST_SECONDS also refuses NaN and the infinities, and compares a huge integer
    # exactly (no float overflow).
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not abs(value) < MOST_SECONDS
    ):
        raise FieldError(path, "must be a time in seconds or null")
    return float(value)


def obj(data: Mapping[str, Any], path: str) -> dict[str, Any] | None:
    """A JSON object, or None."""
    value = get(data, path)
    if value is not None and not isinstance(value, dict):
        raise FieldError(path, "must be an object or null")
    return value


def or_default(
    default: _D, read: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T | _D:
    """What ``read`` makes of a field, or ``default`` when the field is bad.

    For what the recap reads without being asked (a chat document, an agent's hook payload):
    there is nobody to answer, so a bad field is passed over in silence, as if it were absent.
    """
    try:
        return read(*args, **kwargs)
    except FieldError:
        return default


# -- query arguments: the same, from the text of a URL -------------------------------------------


def number_argument(name: str, raw: str | None, default: float) -> float:
    """A non-negative, finite number; ``default`` when the argument is absent."""
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise FieldError(name, "not a number") from None
    if not math.isfinite(value) or value < 0:
        raise FieldError(name, "must be a non-negative number")
    return value


def integer_argument(name: str, raw: str | None, default: int, least: int, most: int) -> int:
    """An integer from ``least`` to ``most``; ``default`` when the argument is absent."""
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise FieldError(name, "not an integer") from None
    if not least <= value <= most:
        raise FieldError(name, f"must be between {least} and {most}")
    return value
