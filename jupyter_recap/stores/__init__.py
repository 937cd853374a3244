"""What lasts across kernels: session records, the task list, project memory and its compaction,
all under the private store directory, and their listings. Pure: no IPython, tornado or
widgets."""
