"""Scaling in the number of rows, side by side with fairlearn's ExponentiatedGradient.

Usage::

    python benchmarks/bench_rows.py [--quick]

Synthetic data (seed 0): ``n`` rows of 20 standard normal features and a column ``group`` of
three values (60 / 30 / 10%) that shifts the labels, ``y = 1[x0 + x1 / 2 + s_group + e > 1/2]`` with
``s = 1, 0, -1.5``, which feature 2 also carries (so the rule binds on the smallest group),
for ``n`` in 100,000, 300,000 and 1,000,000 (no data folder: the point is the row count). The
goal is the four-fifths rule in every group, ``ppr[group] >= 0.8 * ppr``.

* skrate's ConstrainedClassifier at its defaults (``batch_size="auto"``: beyond 50,000 rows,
  minibatches of ``max(10_000, n // 100)`` rows; the candidates and the LP read every row), and
  full-batch (``batch_size=None``: each of the 500 iterations reads ``X`` twice);
* fairlearn's ExponentiatedGradient(LogisticRegression, DemographicParity(ratio_bound=0.8)), the
  same rule as fairlearn states it, its defaults otherwise;
* scikit-learn's LogisticRegression alone, for scale.

Reported: fit time (wall and CPU, one fit each), the training error and the largest training
violation of the rule, ``max_g (0.8 ppr - ppr[g])``, in expectation over the randomised models.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import datetime
import platform
import sys
import warnings

import numpy as np
import pandas as pd
from fairlearn.reductions import DemographicParity, ExponentiatedGradient
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _environment import versions
from bench_metrics import markdown
from bench_scaling import _cell, rule_violation, timed

from skrate import ConstrainedClassifier

RULE = "ppr[group] >= 0.8 * ppr"


def synthetic(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    group = rng.choice(np.array(["a", "b", "c"]), n, p=[0.6, 0.3, 0.1])
    shift = np.select([group == "a", group == "c"], [1.0, -1.5], 0.0)
    y = (X[:, 0] + 0.5 * X[:, 1] + shift + rng.normal(size=n) > 0.5).astype(int)
    X[:, 2] += shift  # a feature the model can read the group from
    return X, y, group


def run(n: int) -> list[dict]:
    X, y, group = synthetic(n)
    rows = []

    def row(method, p, wall, cpu):
        rows.append({"n": n, "method": method, "fit_s": wall, "cpu_s": cpu, "train_error": float(np.mean(np.abs(y - p))),
                     "train_violation": rule_violation(p, group)})

    for params in ({}, {"batch_size": None}):
        clf = ConstrainedClassifier(constraints=RULE, random_state=0, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, wall, cpu = timed(lambda: clf.fit(X, y, groups=group))
        name = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "defaults, batch_size='auto'"
        row(f"skrate ConstrainedClassifier ({name})", clf.predict_proba(X)[:, 1], wall, cpu)
    eg = ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity(ratio_bound=0.8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, wall, cpu = timed(lambda: eg.fit(X, y, sensitive_features=group))
        row("fairlearn ExponentiatedGradient", eg._pmf_predict(X)[:, 1], wall, cpu)
    lr = LogisticRegression(max_iter=1000)
    _, wall, cpu = timed(lambda: lr.fit(X, y))
    row("LogisticRegression (no constraint, its labels)", lr.predict(X).astype(float), wall, cpu)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000 and 30,000 rows")
    args = parser.parse_args()
    ns = (10_000, 30_000) if args.quick else (100_000, 300_000, 1_000_000)
    rows = [r for n in ns for r in run(n)]
    print(f"# Scaling in the number of rows\n\n`python benchmarks/bench_rows.py{' --quick' if args.quick else ''}`, "
          f"{datetime.date.today()}, {platform.machine()}, {versions()}, BLAS 1 thread, one fit each. Synthetic "
          f"rows of 20 features and a column `group` of three values (60/30/10%), the rule `{RULE}`. Violation: "
          "the largest `0.8 ppr - ppr[group]` on the training rows, in expectation over the randomised models.\n")
    cols = ["n", "method", "fit_s", "cpu_s", "train_error", "train_violation"]
    print(markdown(pd.DataFrame(rows).reindex(columns=cols), _cell))


if __name__ == "__main__":
    main()
