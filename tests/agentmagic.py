"""A stand-in for an agent cell magic, scripted by each test.

``%%agent`` is one of the default ``Recap.agent_magics`` ("your own agent code"); ``%%ai``
here mimics jupyter-ai's observable behaviour: a Markdown answer carrying jupyter-ai metadata,
``-f code`` putting the answer into the next cell, failures raised as exceptions.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.display import HTML, Markdown

Behaviour = Callable[[str], Any]


@magics_class
class FakeAgentMagics(Magics):
    """``%%agent`` runs the next scripted behaviour; ``%%ai`` answers in Markdown."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.script: list[Behaviour] = []
        self.answers: list[str | BaseException] = []

    @cell_magic
    def agent(self, line: str, cell: str) -> Any:
        behaviour = self.script.pop(0) if self.script else (lambda prompt: f"done: {prompt}")
        return behaviour(cell.strip())

    @cell_magic
    def ai(self, line: str, cell: str) -> Any:
        args = shlex.split(line)
        fmt = args[args.index("-f") + 1] if "-f" in args else "markdown"
        answer = self.answers.pop(0) if self.answers else f"Answer to: {cell.strip()}"
        if isinstance(answer, BaseException):
            raise answer
        # IPython's display classes have no annotations.
        if fmt == "code":
            assert self.shell is not None  # registered on a shell by install()
            self.shell.set_next_input(answer, replace=False)
            return HTML("AI generated code inserted below &#11015;&#65039;")  # type: ignore[no-untyped-call]
        provider, _, model = (args[0] if args else "openai-chat:gpt-4o-mini").partition(":")
        return Markdown(  # type: ignore[no-untyped-call]
            answer, metadata={"jupyter_ai": {"provider_id": provider, "model_id": model}}
        )


def install(shell: Any) -> FakeAgentMagics:
    """Register the fake magics on ``shell`` and return them for scripting."""
    magics = FakeAgentMagics(shell)
    shell.register_magics(magics)
    return magics
