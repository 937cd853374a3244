"""pytest-jupyter's server fixtures for one test module, not for the whole session.

Registering ``pytest_jupyter.jupyter_server`` as a plugin (``pytest_plugins``, in a conftest or
a test module) makes its autouse fixtures global: every test then gets a fresh asyncio loop that
is closed afterwards, which breaks the Playwright (browser) tests. Star-importing the fixtures
into a test module instead keeps them, the autouse ones included, local to that module:

    from server_fixtures import *  # noqa: F403
    from server_fixtures import asynctest

The plugin's hook that runs ``async def`` tests is then absent too; :func:`asynctest` does its job
for one test.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from pytest_jupyter import jupyter_server as _plugin
from pytest_jupyter.jupyter_server import *  # noqa: F403 - the fixtures, by name

# Only the fixtures travel on to the test module (not the plugin's hooks and imports).
_FIXTURE_TYPE = type(_plugin.jp_fetch)
__all__ = [name for name, value in vars(_plugin).items() if isinstance(value, _FIXTURE_TYPE)]
__all__ += ["asynctest"]

_LOOP = "jp_asyncio_loop"


def asynctest(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an ``async def`` test on pytest-jupyter's event loop, as its plugin hook would."""
    signature = inspect.signature(test)
    wants_loop = _LOOP in signature.parameters
    parameters = list(signature.parameters.values())
    if not wants_loop:
        parameters.append(inspect.Parameter(_LOOP, inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(test)
    def run(**kwargs: Any) -> None:
        loop = kwargs[_LOOP] if wants_loop else kwargs.pop(_LOOP)
        loop.run_until_complete(test(**kwargs))

    # pytest reads the fixtures to pass from the signature: the test's own, plus the loop.
    del run.__wrapped__
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return run
