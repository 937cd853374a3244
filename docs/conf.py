"""Sphinx configuration of the jupyter_recap documentation (MyST Markdown, pydata theme).

Built by ``scripts/test`` with warnings as errors (``sphinx-build -W -n``): a broken link, a
heading anchor that does not exist, a page in no table of contents or a reference autodoc
cannot resolve fails the build. Nothing here reaches the network (no intersphinx) and no
notebook is executed, so the build takes seconds. The reference pages under ``reference/``
that name settings, the command line, the magics and the wire shapes are written from the
code by ``docs/_ext/refgen.py``; ``tests/unit/test_docs.py`` fails when they are out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # jupyter_recap from this checkout, for autodoc

from jupyter_recap import __version__  # noqa: E402

project = "jupyter_recap"
author = "the jupyter_recap authors"
copyright = "the jupyter_recap authors, BSD 3-Clause"
release = __version__
version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

# Links to headings of other pages (`page.md#a-heading`) resolve as they do on GitHub.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# autodoc: the public names in the order their module lists them, type hints in the signature.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options = {"show-inheritance": True}

# -n (nitpicky) checks every cross-reference. The standard library's and other packages' types
# have no page here (no intersphinx: the build never goes online). The package's own names
# below are internal seams that public signatures and docstrings mention but that are not part
# of the public API, so the site does not document them (the JSON shapes of wire.py are on
# reference/wire.md, as Markdown). A new unresolved reference fails the build: document it, or
# add it here on purpose.
nitpick_ignore_regex = [
    ("py:.*", r"(typing|collections|contextlib|pathlib|os|builtins|traitlets|IPython)\..*"),
]
nitpick_ignore = [
    ("py:class", "jupyter_recap.wire.OutsideEntry"),
    ("py:class", "jupyter_recap.wire.OutsideActivity"),
    ("py:class", "jupyter_recap.outside.source._T"),
    ("py:mod", "jupyter_recap.untrusted"),
    ("py:mod", "jupyter_recap.client"),
    ("py:class", "jupyter_recap.ipython.link.ServerLink"),
    ("py:class", "Recap"),
    ("py:class", "jupyter_recap.settings.Recap"),
    ("py:class", "CancelToken"),
    ("py:class", "Framing"),
    ("py:mod", "jupyter_recap.stores.framing"),
    ("py:class", "RecapStats"),
    ("py:class", "ProviderFactory"),
    ("py:class", "UsageLedger"),
    ("py:data", "AUTOMATIC_TRIGGERS"),
    ("py:class", "InputError"),
]

# The HTTP routes page sketches JSON with `|` between the values a field may take: not JSON, so
# Pygments highlights those blocks in its relaxed mode, which is what they need.
suppress_warnings = ["misc.highlighting_failure"]

html_theme = "pydata_sphinx_theme"
html_title = "jupyter_recap"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
