"""jupyter_recap: short "where was I?" recaps of the LLM agent sessions run in a notebook.

``%load_ext jupyter_recap`` records agent cells; ``%recap`` shows a recap now. The public Python
API is loaded on first use so that importing the package in a kernel stays cheap: the transcript
(``Transcript``, ``current``), recaps (``build_context``, ``draft_recap``, ``generate_recap``) and
the agent's working state, meant to be offered to a model as tools (``todo_write``,
``tasks_prompt``, ``remember``, ``recall``, ``forget``, ``memory_prompt``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .errors import InputError, StoreError, StoreWriteError, UnsafeStoreError
    from .pipeline.context import build_context
    from .pipeline.service import RecapResult, WrittenRecap, draft_recap, generate_recap
    from .record.transcript import Transcript, current
    from .stores.tasks import Task
    from .stores.workstate import (
        forget,
        memory_prompt,
        recall,
        remember,
        tasks_prompt,
        todo_write,
    )

__all__ = [
    "InputError",
    "RecapResult",
    "StoreError",
    "StoreWriteError",
    "Task",
    "Transcript",
    "UnsafeStoreError",
    "WrittenRecap",
    "__version__",
    "build_context",
    "current",
    "draft_recap",
    "forget",
    "generate_recap",
    "load_ipython_extension",
    "memory_prompt",
    "recall",
    "remember",
    "tasks_prompt",
    "todo_write",
    "unload_ipython_extension",
]

_LAZY = {
    "Transcript": "record.transcript",
    "current": "record.transcript",
    "build_context": "pipeline.context",
    "WrittenRecap": "pipeline.service",
    "RecapResult": "pipeline.service",
    "draft_recap": "pipeline.service",
    "generate_recap": "pipeline.service",
    "InputError": "errors",
    "StoreError": "errors",
    "StoreWriteError": "errors",
    "UnsafeStoreError": "errors",
    "Task": "stores.tasks",
    "todo_write": "stores.workstate",
    "tasks_prompt": "stores.workstate",
    "remember": "stores.workstate",
    "recall": "stores.workstate",
    "forget": "stores.workstate",
    "memory_prompt": "stores.workstate",
}


#: Old names, still answered with a DeprecationWarning (and not cached, so that every use warns):
#: ``Recap`` was the 0.1 name of ``WrittenRecap``, the recap a model wrote, while ``c.Recap`` is
#: the settings.
_DEPRECATED = {"Recap": "WrittenRecap"}


def __getattr__(name: str) -> Any:
    new_name = _DEPRECATED.get(name)
    if new_name is not None:
        import warnings

        warnings.warn(
            f"jupyter_recap.{name} is deprecated: use jupyter_recap.{new_name} (the recap a "
            f"model wrote; c.{name} is the settings)",
            DeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(new_name)
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'jupyter_recap' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the built labextension."""
    return [{"src": "labextension", "dest": "jupyter-recap"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The server extension (focus hub, kernel feed, recap routes), an extension app so that
    jupyter_server stops it when the server shuts down."""
    from .server import RecapExtension

    return [{"module": "jupyter_recap.server", "app": RecapExtension}]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_recap``: start recording this kernel's agent cells."""
    from .ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_recap``: remove every hook, widget and thread."""
    from .ipython.extension import unload

    unload(ipython)
