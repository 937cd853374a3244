"""The server's picture of the person and the agents: focus and execution state per kernel (the
hub the kernel's feed reads), the agents board, the report a kernel sends to it and how the
server reads that (and every other body it is sent: ``fields``). Pure state and rules, without
I/O: the server adapter drives them."""
