"""The README's main job: train with and without fairness constraints on COMPAS, audit both."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from .datasets import load_compas

TEMPLATE = ["tpr[race] <= tpr + {slack}", "tpr[race] >= tpr - {slack}",
            "fpr[race] <= fpr + {slack}", "fpr[race] >= fpr - {slack}"]
SLACK = 0.05
CONSTRAINTS = [t.format(slack=SLACK) for t in TEMPLATE]
TRADEOFF_SLACKS = (0.0, 0.02, 0.05, 0.1, 0.2)


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        return matplotlib
    except ImportError:
        return None


def figure_file(figure: str) -> str:
    """The file matplotlib writes for ``figure``: it appends its default format to a name without
    an extension. Raises ValueError for an empty name, a folder, or an extension it cannot write (without
    matplotlib, no check: the demo draws no figure)."""
    if not figure.strip():
        raise ValueError("the file name is empty; give one such as tradeoff.png, or pass --no-figure")
    if Path(figure).is_dir() or figure.endswith(("/", os.sep)):  # else a hidden file ".png" in it
        raise ValueError(f"a folder, not a file name; name a file in it, e.g. {Path(figure) / 'tradeoff.png'}")
    matplotlib = _matplotlib()
    if matplotlib is None:
        return figure
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(figure).suffix[1:].lower()
    if not suffix:
        return f"{figure}.{matplotlib.rcParams['savefig.format']}"
    if suffix not in kinds:
        raise ValueError(f"matplotlib cannot write .{suffix} files; end the name with one of "
                         f"{', '.join('.' + k for k in sorted(kinds))}")
    return figure


def run_demo(print_fn=print, random_state: int = 0, figure: str | None = None, n_bootstrap: int = 200) -> dict:
    """Fit an unconstrained and an equalized-odds ConstrainedClassifier on COMPAS; print their audits.

    Audits are on a held-out 30% split, in expectation over the randomised predictions, with
    bootstrap intervals. When ``figure`` is a path and matplotlib is installed, the error /
    violation trade-off over several slacks is plotted there (see :func:`figure_file`; a wrong
    extension is refused before training). Returns the fitted models under
    ``"unconstrained"`` and ``"constrained"`` (and the trade-off curve under ``"tradeoff"``
    when computed).
    """
    from ._constrained import ConstrainedClassifier
    from .metrics import audit

    figure = None if figure is None else figure_file(figure)
    data = load_compas()
    X, y = data.data, data.target
    tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=random_state)
    g_tr = {k: v[tr] for k, v in data.groups.items()}
    g_te = {k: v[te] for k, v in data.groups.items()}
    print_fn(f"skrate demo: ProPublica COMPAS two-year recidivism ({len(tr)} training rows, {len(te)} test rows)")
    print_fn(f"Goal: equalized odds over race, |TPR_g - TPR| <= {SLACK} and |FPR_g - FPR| <= {SLACK}\n")
    out = {}
    for name, constraints in (("unconstrained", None), ("constrained", CONSTRAINTS)):
        start = time.perf_counter()
        clf = ConstrainedClassifier(constraints=constraints, random_state=random_state)
        clf.fit(X[tr], y[tr], groups=g_tr)
        secs = time.perf_counter() - start
        print_fn(f"== {name}: fitted in {secs:.2f} s, a mixture of {int((clf.weights_ > 0).sum())} "
                 "linear model(s); test-set audit ==")
        report = audit(clf, X[te], y[te], groups=g_te, constraints=CONSTRAINTS, metrics=("ppr", "tpr", "fpr", "accuracy"),
                       n_bootstrap=n_bootstrap, random_state=random_state)
        print_fn(str(report))
        print_fn("")
        out[name] = clf
    if figure is not None:
        if _matplotlib() is None:
            print_fn("matplotlib is not installed: no trade-off figure (pip install matplotlib).")
            return out
        import matplotlib.pyplot as plt

        from .metrics import plot_tradeoff
        from .model_selection import tradeoff_curve

        curve = tradeoff_curve(ConstrainedClassifier(random_state=random_state), X, y, groups=data.groups,
                               constraints=TEMPLATE, slacks=TRADEOFF_SLACKS, test_size=0.3,
                               random_state=random_state)
        ax = plot_tradeoff(curve, violation="gap")
        ax.set_title("COMPAS, equalized odds over race: error vs. gap")
        ax.figure.tight_layout()
        ax.figure.savefig(figure, dpi=120)
        plt.close(ax.figure)
        print_fn(f"Trade-off over slacks {', '.join(f'{s:g}' for s in TRADEOFF_SLACKS)} written to {figure}")
        out["tradeoff"] = curve
    return out
