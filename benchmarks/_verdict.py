"""The verdict of a paired comparison against a target, read with its standard error."""

from __future__ import annotations

import numpy as np


def verdict(met: bool, excess: float, se: float) -> str:
    """``"met"``; ``"tie"`` when missed by at most one standard error of the paired difference
    (no error bar, e.g. one split: strict); else ``"NOT met"``.

    ``excess`` is by how much the result is on the wrong side of the target.
    """
    if met:
        return "met"
    return "tie" if np.isfinite(se) and excess <= se else "NOT met"
