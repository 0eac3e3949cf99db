"""The software a benchmark ran on, for the header of its page: results move with these releases."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

_PACKAGES = ("numpy", "scipy", "scikit-learn", "cvxpy", "fairlearn")


def versions() -> str:
    """``"Python 3.11.7, numpy 2.4.6, scipy 1.17.1, ..."`` for the packages installed."""
    found = []
    for name in _PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join([f"Python {platform.python_version()}", *found])
