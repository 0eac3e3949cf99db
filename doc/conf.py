"""Sphinx configuration of the skrate documentation (builds offline)."""

import os
import re
import sys
import warnings

sys.path.insert(0, os.path.abspath(".."))

import skrate  # noqa: E402

project = "skrate"
copyright = "2026, the skrate developers"
author = "the skrate developers"
release = version = skrate.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json"]
html_theme = "alabaster"
html_theme_options = {"description": "classifiers whose goals are rates", "page_width": "1100px"}
html_static_path = []
templates_path = []

autodoc_typehints = "none"  # numpydoc sections already state the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# Benchmark pages are markdown whose first heading may be of any level.
suppress_warnings = ["myst.header"]
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "show_memory": False,
    "plot_gallery": "True",
    "write_computation_times": False,
}



def _quote_shapes(app, what, name, obj, options, lines):
    """Quote fitted-attribute names inside ``of shape (...)`` so rst does not read them as links."""
    def quote(match):
        return re.sub(r"(?<![`\w])([A-Za-z]\w*_)(?![`\w])", r"``\1``", match.group(0))

    lines[:] = [re.sub(r"of shape \([^)]*\)", quote, line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _quote_shapes)


os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "agg")
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")
