"""A plugin module that fails to import: jupyter_recap must leave it out and go on."""

raise ImportError("recap_toy_broken needs a library that is not installed")
