"""Writing a recap: the capped, redacted context; the prompt; the recap writers (a model through
a provider, or the offline engine) and the service that chooses and calls them. Pure: no IPython,
tornado or widgets."""
