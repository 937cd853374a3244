"""The server adapters of the outside sources, and the one list of them the server runs.

Each source hears one kind of agent outside the person's kernel and talks to the server only
through its :class:`~.sink.ServerSink` (the contract: :mod:`jupyter_recap.outside.source`):

- ``hooks`` (:mod:`.hooks`): CLI agents' hook events read from the hook spool;
- ``oneshot`` (:mod:`.oneshot`): the tool calls of the personas a kernel's ``%%ai`` cell asks;
- ``mcp-hooks``, ``mcp-spans``, ``server-mcp`` (:mod:`.mcp_hooks`, :mod:`.mcp_spans`,
  :mod:`.mcp_tools`): notebook changes made through MCP servers;
- ``chats`` and ``changes`` (``server/chats.py``, ``server/changes.py``): Jupyter AI's chats and
  what changed in a notebook while the person was away.

They are found through the entry-point group ``jupyter_recap.outside`` (:mod:`.plugins`; the
project's own register there in ``pyproject.toml``, each module's ``make_source``), and run by
a :class:`~.running.SourceList`, which starts them in order (one that raises is turned off with
one warning and the others go on), stops them, and merges their lines of what happened in
notebooks by each source's declared precedence.
"""
