"""The server's picture of the person and the agents: focus and execution state per kernel (the
hub the kernel's feed reads, each kernel's tabs in ``clients``), the agents board (its rows in
``rows``, what it remembers of rows that left in ``departed``), and the report a kernel sends to
it and its validation. Pure state and rules, without I/O: the server adapter drives them."""
