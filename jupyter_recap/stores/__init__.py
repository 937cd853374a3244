"""What lasts across kernels: session records, the task list, project memory, all under the
private store directory, and their listings; the framing a recap takes from them (the task and
note lines). Pure: no IPython, tornado or widgets. Compacting the memory is a model call, so it
is in :mod:`jupyter_recap.pipeline.compaction`."""
