"""Agents outside the person's kernel: the contract a source of their activity meets
(:mod:`.source`) and the pure readers of what they leave behind (:mod:`.mcp`: MCP tool calls and
spans). The server adapters that drive them are in :mod:`jupyter_recap.server`."""
