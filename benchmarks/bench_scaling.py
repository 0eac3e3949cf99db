"""Scaling in the number of group values, side by side with fairlearn's ExponentiatedGradient.

Usage::

    python benchmarks/bench_scaling.py DATA_DIR [--quick]

Audits often hold a column of many values (a region, a site, an intersection of attributes).
The Adult training rows get a column ``region`` of ``k`` values, drawn uniformly at random
(seed 0), for ``k`` in 2, 20, 200 and 2,000 (about 15 rows per value at 2,000). The goal is
the four-fifths rule in every region, ``ppr[region] >= 0.8 * ppr``: ``k`` constraints.

* skrate's ConstrainedClassifier (defaults: linear model, proxy-Lagrangian game, the LP's
  stochastic model) with the swap-regret lambda-player (the default, ``(m + 1)^2`` state, a
  pass over it and a Krylov solve for its stationary distribution per step), with the
  external-regret one (``"proxy_lagrangian_ext"``, O(m) per step), and with the external-regret
  one and ``margin="auto"`` (each constraint tightened by a confidence margin, widened to hold
  for every mixture of the candidates at once: a Monte Carlo per constraint); for each fit its
  ``constraint_report`` on the training rows and ``skrate.metrics.audit`` of the fitted model
  (200 bootstrap resamples: each region's ``ppr`` and the constraints);
* fairlearn's ExponentiatedGradient(LogisticRegression, DemographicParity(ratio_bound=0.8)),
  the same rule as fairlearn states it (both ``ppr[g] >= 0.8 ppr`` and ``ppr >= 0.8 ppr[g]``,
  so twice the constraints), its defaults otherwise.

Reported: fit time (wall and CPU, one fit each), the report and audit times, the training
error and the largest training violation of the skrate rule, ``max_g (0.8 ppr - ppr[g])``,
in expectation over the randomised models. Larger ``k`` is harder to meet on 15 rows a value;
the point is the time, which grows with the rows the slices hold, not with ``k`` times n.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import datetime
import platform
import sys
import time
import warnings

import numpy as np
import pandas as pd
from fairlearn.reductions import DemographicParity, ExponentiatedGradient
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line, load_adult
from _environment import versions
from bench_metrics import markdown

from skrate import ConstrainedClassifier
from skrate.metrics import audit

RULE = "ppr[region] >= 0.8 * ppr"


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def rule_violation(p: np.ndarray, region: np.ndarray) -> float:
    """``max_g (0.8 ppr - ppr[g])`` for probabilities of predicting 1, by group sums."""
    codes, inverse = np.unique(region, return_inverse=True)
    per = np.bincount(inverse, weights=p) / np.bincount(inverse)
    return float(0.8 * p.mean() - per.min())


def run(X, y, k: int, skip_fairlearn: bool) -> list[dict]:
    region = np.random.default_rng(0).integers(0, k, len(y)).astype(str)
    groups = pd.DataFrame({"region": region})
    rows = []
    for solver, margin in (("proxy_lagrangian", None), ("proxy_lagrangian_ext", None), ("proxy_lagrangian_ext", "auto")):
        clf = ConstrainedClassifier(constraints=RULE, solver=solver, margin=margin, random_state=0)
        _, wall, cpu = timed(lambda: clf.fit(X, y, groups=groups))
        _, report_wall, _ = timed(lambda: clf.constraint_report(X, y, groups=groups))
        _, audit_wall, _ = timed(lambda: audit(clf, X, y, groups=groups, metrics=["ppr"], constraints=RULE,
                                               n_bootstrap=200, random_state=0))
        p = clf.predict_proba(X)[:, 1]
        name = solver if margin is None else f"{solver}, margin={margin!r}"
        rows.append({"k": k, "method": f"skrate ConstrainedClassifier ({name})", "fit_s": wall, "cpu_s": cpu,
                     "report_s": report_wall, "audit_s": audit_wall, "train_error": float(np.mean(np.abs(y - p))),
                     "train_violation": rule_violation(p, region)})
    if skip_fairlearn:
        rows.append({"k": k, "method": "fairlearn ExponentiatedGradient", "fit_s": np.nan, "cpu_s": np.nan})
        return rows
    eg = ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity(ratio_bound=0.8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, wall, cpu = timed(lambda: eg.fit(X, y, sensitive_features=region))
        p = eg._pmf_predict(X)[:, 1]
    rows.append({"k": k, "method": "fairlearn ExponentiatedGradient", "fit_s": wall, "cpu_s": cpu,
                 "train_error": float(np.mean(np.abs(y - p))), "train_violation": rule_violation(p, region)})
    return rows


def _cell(column: str, v) -> str:
    if isinstance(v, float) and np.isnan(v):
        return "-"
    if column.endswith("_s"):
        return f"{v:.2f}"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def main() -> None:
    parser = command_line(__doc__)
    parser.add_argument("--quick", action="store_true", help="4,000 rows, k up to 200")
    parser.add_argument("--fairlearn-max-k", type=int, default=2000,
                        help="largest k fairlearn is run at (default 2000)")
    args = parser.parse_args()
    X, y = load_adult(args.data_dir)[:2]
    ks = (2, 20, 200, 2000)
    if args.quick:
        idx = np.random.default_rng(0).choice(len(y), 4000, replace=False)
        X, y, ks = X[idx], y[idx], (2, 20, 200)
    rows = [r for k in ks for r in run(X, y, k, k > args.fairlearn_max_k)]
    print(f"# Scaling in the number of group values\n\n`python benchmarks/bench_scaling.py DATA_DIR"
          f"{' --quick' if args.quick else ''}`, {datetime.date.today()}, {platform.machine()}, {versions()}, "
          f"BLAS 1 thread, one fit each. Adult training rows ({len(y)}), a column `region` of k values drawn at "
          f"random, the rule `{RULE}` (k constraints). Violation: the largest `0.8 ppr - ppr[region]` on the "
          "training rows, in expectation over the randomised models; report and audit: skrate's "
          "`constraint_report` and `audit` (200 resamples) of the fitted model.\n")
    df = pd.DataFrame(rows)
    cols = ["k", "method", "fit_s", "cpu_s", "report_s", "audit_s", "train_error", "train_violation"]
    print(markdown(df.reindex(columns=cols), _cell))


if __name__ == "__main__":
    main()
