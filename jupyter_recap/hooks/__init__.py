"""CLI agents' hook events: what Claude Code, Codex and VS Code's agent hooks report, and what
a notebook's record gets of them.

:mod:`.events` reads one hook payload (the JSON an agent hands its hook command on stdin) into
one bounded, redacted :class:`~.events.HookEvent` (a tool call's input and answer through
:mod:`.calls`, texts and paths through :mod:`.reading`); ``jupyter recap hook`` appends it to
the spool (:mod:`jupyter_recap.stores.hookspool`). :mod:`.sessions` turns the events of a
session into the entries of the notebooks it worked on (its asks, its notebook edits, its
answer), which the server extension sends to the kernels serving them, and says which of its
tool calls waits for the person's approval. Pure: no IPython, tornado or server.
The package's ``__init__`` imports nothing, so the hook command loads only what it needs.
"""
