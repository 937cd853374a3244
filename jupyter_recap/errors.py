"""The exceptions jupyter_recap raises internally, translated once at each boundary.

::

    RecapError                     anything the recap machinery can report
    ├── ConfigError                a setting or model id that cannot be used
    ├── InputError                 a task list or memory note that cannot be stored (a ValueError)
    ├── NotebookError              a notebook file that is missing or not a notebook
    │   └── RefusedFile            a file nobody vouched for, refused (a FIFO, too large, too deep)
    ├── Cancelled                  the draft was cancelled (input arrived, extension unloaded)
    ├── StoreError                 a session id that is unknown, ambiguous or not an id
    │   ├── UnsafeStoreError       a store directory someone else could write (refused)
    │   └── StoreWriteError        a record or note could not be written (an OSError too)
    ├── ServerError                a jupyter_recap server answered with an error or not at all
    │   └── LinkError              a kernel's request to its own server failed (``ipython/link``)
    │       ├── LinkRefused        HTTP 401 / 403: this kernel may not use the route      (final)
    │       ├── LinkNotFound       HTTP 404: not this server's kernel, or no jupyter_recap (final)
    │       ├── LinkUnreachable    no answer: connection refused, DNS, timeout
    │       ├── LinkBusy           HTTP 429: the server holds all it will; come back later
    │       └── LinkBadAnswer      another status, or an answer that is not a JSON object
    └── ProviderError              one model call failed; ``reason`` is a short user-facing line
        ├── ProviderUnavailable    no connection (refused, DNS, TLS)
        ├── ProviderTimeout        no complete answer within ``timeout_seconds``
        ├── ProviderAuthError      HTTP 401 / 403
        ├── ProviderRateLimited    HTTP 429
        ├── ProviderHTTPError      any other non-2xx answer
        └── ProviderBadResponse    an answer that is not the wire format we asked for

``generate_recap`` catches all of them and returns ``None`` with the reason; nothing here ever
reaches a notebook as a traceback. The link errors never leave the kernel's two clients of its
server (the focus feed and the state reporter), which stop on a ``final`` one and retry the others.
"""

from __future__ import annotations


class RecapError(Exception):
    """Base class: a recap could not be produced; ``str(error)`` is a one-line reason."""


class ConfigError(RecapError):
    """A setting, model id or command-line option that cannot be used as given."""


class InputError(RecapError, ValueError):
    """A task list or memory note that cannot be stored as given; nothing was changed.

    It is also a ``ValueError``, so an agent's tool wrapper can catch it as bad arguments.
    """


class NotebookError(RecapError):
    """A notebook (or chat) file that does not exist or cannot be read as one."""


class RefusedFile(NotebookError):
    """A file nobody vouched for (a notebook, a chat, a spool or span file) refused by
    :mod:`jupyter_recap.untrusted`: not a regular file, over its cap, nested too deep, not JSON.

    ``str(error)`` is one line, ``"<name>: <what>"``; ``what`` alone says what the file is
    ("not a regular file (a FIFO)", "over 64 MiB", "nested too deep"); ``kind`` is one of
    ``"not regular"``, ``"too large"``, ``"too deep"``, ``"not text"``, ``"not JSON"``.
    """

    def __init__(self, name: str, what: str, *, kind: str) -> None:
        super().__init__(f"{name}: {what}")
        self.name = name
        self.what = what
        self.kind = kind


class Cancelled(RecapError):
    """The draft was cancelled before it finished."""


class StoreError(RecapError):
    """A session id or prefix that is malformed, unknown or matches several sessions."""


class UnsafeStoreError(StoreError):
    """The store, or a directory above it, could be written by someone else: not trusted.

    The message says which directory, why, and how to fix it. Nothing in it is read or written;
    recaps go on from the live transcript.
    """


class StoreWriteError(StoreError, OSError):
    """A session record or memory note could not be written (disk full, read-only, a file
    replaced by a directory). Also an ``OSError``, so code that caught that still does; what
    was not written is kept in memory and retried where that is possible."""


class ServerError(RecapError):
    """A call to a jupyter_recap server failed (:mod:`jupyter_recap.client`, or a kernel's
    link to its own server: :class:`LinkError`).

    ``status`` is the HTTP status, or 0 when no answer arrived (connection refused, timeout).
    """

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class LinkError(ServerError):
    """A kernel's request to the Jupyter server that started it failed
    (:class:`jupyter_recap.ipython.link.ServerLink`); ``str(error)`` is one line saying why.

    A ``final`` error ends the client that got it (the focus feed, the state reporter): asking
    again would be refused again. The others are retried after a backoff. ``status`` is the
    HTTP status, or 0 when no answer arrived.
    """

    final = False


class LinkRefused(LinkError):
    """HTTP 401 or 403: the server does not let this kernel in."""

    final = True


class LinkNotFound(LinkError):
    """HTTP 404: not a kernel of this server, or a server without jupyter_recap."""

    final = True


class LinkUnreachable(LinkError):
    """No answer: the connection was refused or failed, or the deadline passed."""


class LinkBusy(LinkError):
    """HTTP 429: the server holds all the long polls it will."""


class LinkBadAnswer(LinkError):
    """Any other status, or an answer that is not a JSON object (or far too large)."""


class ProviderError(RecapError):
    """A model call failed. ``provider`` names the engine, e.g. ``openai:gpt-4o-mini``."""

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message)
        self.provider = provider


class ProviderUnavailable(ProviderError):
    """The provider could not be reached (connection refused, DNS, TLS)."""


class ProviderTimeout(ProviderError):
    """The provider did not answer completely within the timeout backstop."""


class ProviderAuthError(ProviderError):
    """The provider rejected the credentials (HTTP 401 or 403)."""


class ProviderRateLimited(ProviderError):
    """The provider asked us to slow down (HTTP 429)."""


class ProviderHTTPError(ProviderError):
    """The provider answered with another non-success HTTP status."""

    def __init__(self, message: str, *, provider: str = "", status: int = 0) -> None:
        super().__init__(message, provider=provider)
        self.status = status


class ProviderBadResponse(ProviderError):
    """The answer was not what the wire format promises (bad JSON, no text, far too large)."""
