"""Adapters that plug the recap core into IPython: recorder, magics, extension lifecycle."""
