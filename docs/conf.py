"""Sphinx configuration of the mklopt documentation (Markdown pages via MyST).

Build with ``python -m sphinx -W -b html docs docs/_build/html``.
"""

import os
import sys

# Document the source tree beside this file, installed or not.
sys.path.insert(0, os.path.abspath(".."))

import mklopt  # noqa: E402

project = "mklopt"
author = "the mklopt developers"
copyright = "the mklopt developers"
release = mklopt.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: $...$ maths and ::: fences; anchors for "page.md#section" links.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# autodoc + numpydoc: one page of API reference from the docstrings.
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

html_theme = "alabaster"
html_title = f"mklopt {release}"
html_theme_options = {
    "description": "Composable multiple kernel learning certified by duality gaps",
    "fixed_sidebar": True,
}
