"""How often a constraint met with ``margin="auto"`` holds in the population.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_margin_coverage.py DATA_DIR [N_FITS]

``DATA_DIR`` is accepted for the common benchmark interface; the data are simulated, so the
population's rates are known (measured on 200,000 fresh rows). Each fit draws 2,000 training rows,
a quarter of them in group ``b``, and trains ``ConstrainedClassifier`` with one constraint on
that group: ``ppr[group=b] >= 0.5`` binds at a rate of one half, where the margin's worst-case
variance is the true one, and ``tpr[group=b] >= 0.8`` binds far from it. The table gives the
fraction of fits (``N_FITS``, default 200, seeds 0, 1, ...) whose solution (the default,
``"m_stochastic"``) meets the constraint in the population, beside the stated
``margin_confidence``, with and without held-out multiplier updates, and the fraction of fits
that met the constraint with its margin on the rows the solution was chosen on (``feasible_``).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line  # noqa: E402

from skrate import ConstrainedClassifier  # noqa: E402

N_TRAIN = 2000
TASKS = {"ppr[group=b] >= 0.5": ("ppr", 0.5), "tpr[group=b] >= 0.8": ("tpr", 0.8)}


def draw(n: int, rng: np.random.Generator):
    X = rng.normal(size=(n, 2))
    g = np.where(rng.random(n) < 0.25, "b", "a")
    X[g == "b", 0] -= 0.5
    y = (X[:, 0] + 0.8 * rng.normal(size=n) > 0.6).astype(int)
    return X, y, g


def population_rate(clf, kind: str, X, y, g) -> float:
    rows = (g == "b") & ((y == 1) if kind == "tpr" else True)
    return float(clf.predict_proba(X[rows])[:, 1].mean())


def main(n_fits: int = 200) -> None:
    X_pop, y_pop, g_pop = draw(200_000, np.random.default_rng(123))
    print(f"{n_fits} fits per row, {N_TRAIN} training rows each. `held`: the fraction of fits whose solution meets the "
          "constraint in the population, with its standard error; `feasible_`: the fraction that met it with "
          "the margin on the rows the solution was chosen on.\n")
    print("| constraint | margin_confidence | validation_fraction | held | standard error | feasible_ | fit s |")
    print("|---|---|---|---|---|---|---|")
    for spec, (kind, bound) in TASKS.items():
        for confidence in (0.95, 0.99):
            for fraction in (None, 0.3):
                held, feasible = [], []
                start = time.perf_counter()
                for seed in range(n_fits):
                    X, y, g = draw(N_TRAIN, np.random.default_rng(seed))
                    clf = ConstrainedClassifier(spec, margin="auto", margin_confidence=confidence,
                                                validation_fraction=fraction, random_state=seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # a fit short of its margin is counted, not shown
                        clf.fit(X, y, groups=g)
                    held.append(population_rate(clf, kind, X_pop, y_pop, g_pop) >= bound)
                    feasible.append(clf.feasible_)
                seconds = (time.perf_counter() - start) / n_fits
                rate = np.mean(held)
                print(f"| `{spec}` | {confidence} | {fraction} | {rate:.3f} | {np.sqrt(rate * (1 - rate) / n_fits):.3f} "
                      f"| {np.mean(feasible):.3f} | {seconds:.3f} |")

if __name__ == "__main__":
    parser = command_line(__doc__)
    parser.add_argument("n_fits", nargs="?", type=int, default=200, help="fits per row (default 200)")
    main(parser.parse_args().n_fits)
