"""Writing a recap: the capped, redacted context; the prompt; the recap writers (a model through
a provider, or the offline engine) and the service that chooses and calls them, prices, and the
compaction of project memory (also a model call). Pure: no IPython, tornado or widgets."""
