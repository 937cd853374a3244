"""Capture source for jupyter-ai's ``%ai`` line magic (v2 ``jupyter_ai_magics``, v3 magic commands).

``%%ai`` cells are agent turns through ``Recap.agent_magics`` already. The line form is recorded
by the recorder too, once this source is on: ``%ai error`` (v2) and ``%ai fix`` (v3) ask the
model about the latest error, so they are turns whose prompt is that request; ``%ai MODEL …``
(which jupyter-ai refuses, asking for ``%%ai``) is a failed turn rather than a lost one. There
is nothing to register with jupyter-ai: the source only follows whether it was loaded.

The magics come in packages of their own, whose versions are not jupyter-ai's: v2's
``jupyter-ai-magics`` shares the version of the ``jupyter-ai`` 2 it ships with, while v3's
``jupyter-ai-magic-commands`` (0.0.x) is installed by ``jupyter-ai`` 3 or on its own. So
``%recap status`` names the package it found ("jupyter-ai-magic-commands 0.0.4"), and the
``jupyter-ai`` it came with when that is installed ("jupyter-ai 3.2.0 (magic commands 0.0.4)").
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .sources import Source, installed_version

V2_MODULE = "jupyter_ai_magics"
V3_MODULE = "jupyter_ai_magic_commands"
V2_DISTRIBUTION = "jupyter-ai-magics"
V3_DISTRIBUTION = "jupyter-ai-magic-commands"
#: The meta-package that brings either generation of the magics with it.
META_DISTRIBUTION = "jupyter-ai"


class JupyterAISource(Source):
    """Turns ``%ai`` line magics that address a model into agent turns."""

    name = "jupyter-ai"
    module = V2_MODULE
    also_modules = (V3_MODULE,)
    distribution = V2_DISTRIBUTION
    also_distributions = (V3_DISTRIBUTION,)

    def install(self, module: ModuleType) -> None:
        """Nothing to hook: the recorder asks :attr:`on` before treating ``%ai`` as a turn."""

    def version(self) -> str | None:
        """The version of the magics package in use (loaded, else installed; v3 first)."""
        found = _magics()
        return found[0][1] if found else None

    def label(self) -> str:
        """The magics package in use and its version, with the jupyter-ai it belongs to."""
        found = _magics()
        if not found:
            return self.name
        return ", ".join(_package_label(distribution, version) for distribution, version in found)


def _magics() -> list[tuple[str, str]]:
    """(distribution, version) of the magics that run here: the generation whose module is
    imported, else every generation installed (v3 first)."""
    generations = ((V3_MODULE, V3_DISTRIBUTION), (V2_MODULE, V2_DISTRIBUTION))
    loaded = [dist for module, dist in generations if module in sys.modules]
    candidates = loaded or [dist for _, dist in generations]
    found = []
    for distribution in candidates:
        version = installed_version(distribution)
        if version is not None:
            found.append((distribution, version))
    return found


def _package_label(distribution: str, version: str) -> str:
    """``jupyter-ai-magic-commands 0.0.4``, or ``jupyter-ai 3.2.0 (magic commands 0.0.4)``
    when the jupyter-ai of that generation is installed too."""
    meta = installed_version(META_DISTRIBUTION)
    v3 = distribution == V3_DISTRIBUTION
    if meta is None or _major(meta) != (3 if v3 else 2):
        return f"{distribution} {version}"
    if not v3 and meta == version:
        return f"{META_DISTRIBUTION} {meta}"  # v2's magics carry jupyter-ai's own version
    part = "magic commands" if v3 else "magics"
    return f"{META_DISTRIBUTION} {meta} ({part} {version})"


def _major(version: str) -> int | None:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def latest_error(user_ns: dict[str, Any], before: int) -> str | None:
    """The text jupyter-ai stored for the latest failed cell before ``before`` (its ``Err``)."""
    errors = user_ns.get("Err")
    if not isinstance(errors, dict):
        return None
    counts = [n for n in errors if isinstance(n, int) and n < before]
    if not counts:
        return None
    value = errors[max(counts)]
    return value if isinstance(value, str) else None
