"""Capture source for jupyter-ai's ``%ai`` line magic (v2 ``jupyter_ai_magics``, v3 magic commands).

``%%ai`` cells are agent turns through ``Recap.agent_magics`` already. The line form is recorded
by the recorder too, once this source is on: ``%ai error`` (v2) and ``%ai fix`` (v3) ask the
model about the latest error, so they are turns whose prompt is that request; ``%ai MODEL …``
(which jupyter-ai refuses, asking for ``%%ai``) is a failed turn rather than a lost one. There
is nothing to register with jupyter-ai: the source only follows whether it was loaded.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .sources import Source

V3_MODULE = "jupyter_ai_magic_commands"


class JupyterAISource(Source):
    """Turns ``%ai`` line magics that address a model into agent turns."""

    name = "jupyter-ai"
    module = "jupyter_ai_magics"
    also_modules = (V3_MODULE,)
    distribution = "jupyter-ai-magics"
    also_distributions = ("jupyter-ai-magic-commands",)

    def install(self, module: ModuleType) -> None:
        """Nothing to hook: the recorder asks :attr:`on` before treating ``%ai`` as a turn."""


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
