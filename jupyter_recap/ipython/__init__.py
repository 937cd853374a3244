"""Adapters that plug the recap core into IPython: the extension and its collaborators."""
