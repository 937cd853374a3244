"""Recording a notebook's agent session: the transcript, which cells are agent turns, and reading
saved notebooks. Pure: no IPython, tornado or widgets (the recorder that feeds it is in
:mod:`jupyter_recap.ipython`)."""
