"""What the recorder and the output tap use of an IPython shell, as a type.

The extension itself holds IPython's ``InteractiveShell`` (typed by IPython); the parts that only
read a few of its members take this Protocol, so mypy checks every member they touch, and a
test can hand them a small stand-in. ipykernel's ``ZMQInteractiveShell`` satisfies it too.
"""

from __future__ import annotations

from typing import Any, Protocol


class Shell(Protocol):
    """An IPython shell, as far as the recorder and the output tap use one."""

    @property
    def events(self) -> Any:
        """``register(event, callback)`` / ``unregister(event, callback)``."""

    @property
    def display_formatter(self) -> Any:
        """``format(value)`` → (MIME bundle, metadata)."""

    @property
    def magics_manager(self) -> Any:
        """Its ``registry`` maps magics class names to instances."""

    @property
    def user_ns(self) -> Any: ...

    @property
    def execution_count(self) -> Any: ...

    def set_next_input(self, s: str, replace: bool = False) -> None: ...
