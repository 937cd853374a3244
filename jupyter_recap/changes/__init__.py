"""What changed in a notebook while the person was away, and who changed it.

:mod:`.cells` fingerprints a notebook's cells (ids and hashes only), :mod:`.diff` compares what
the person last saw with the notebook now and words it as one line, :mod:`.touches` remembers
which agents worked on which notebook, when. Pure: the server extension drives it.
"""
