"""A capture plugin's spec module that fails to import: jupyter_recap must leave it out, say so
once, and go on with the other sources."""

raise RuntimeError("recap_capture_broken is broken on purpose")
