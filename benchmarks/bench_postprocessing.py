"""Post-processing a fitted model for fairness, side by side with fairlearn's ThresholdOptimizer.

Usage::

    python benchmarks/bench_postprocessing.py DATA_DIR [--quick]

A LogisticRegression is fitted on the training rows; each method then picks (randomised)
thresholds of its probability per group to minimise the training error subject to exact
parity: demographic parity (equal rates of positive predictions), equal opportunity (equal true
positive rates) and equalized odds (equal true and false positive rates), over sex on Adult and
race on COMPAS (split seeds 0, 1, 2, means reported), per ../shared/BENCHMARKS.md.

* the exact optimum: a linear program over every cut of the probability in each group, the
  least training error any per-group randomised threshold of this model reaches;
* fairlearn's ThresholdOptimizer (``prefit=True``, accuracy, the groups passed at predict time);
* skrate's MetricOptimizer(metric="error", estimator=FrozenEstimator(lr)): the plug-in oracle
  game, then column generation; it reads the groups from X's one-hot columns at predict time.

Errors and violations (the largest gap between a group's rate and the overall rate) are in
expectation over the randomisation. Fit times: median of ``reps`` runs, the LogisticRegression
fit excluded, wall and CPU.
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
from fairlearn.postprocessing import ThresholdOptimizer
from scipy.optimize import linprog
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line, load_adult, load_compas
from _environment import versions
from bench_metrics import _four_decimals, markdown, timed

from skrate import MetricOptimizer
from skrate.rates import equal_odds, equal_opportunity, statistical_parity

SETTINGS = {"adult": "sex", "compas": "race"}
# task -> (fairlearn's constraint, skrate's goal, the rates held equal)
TASKS = {
    "demographic parity": ("demographic_parity", lambda col: statistical_parity(col, 0.0), ("ppr",)),
    "equal opportunity": ("true_positive_rate_parity", lambda col: equal_opportunity(col, 0.0, two_sided=True),
                          ("tpr",)),
    "equalized odds": ("equalized_odds", lambda col: equal_odds(col, 0.0), ("tpr", "fpr")),
}


def rates(y, p, g):
    """Each group's and the overall expected ppr, tpr and fpr of the probabilities ``p``."""
    def of(mask):
        return {"ppr": p[mask].mean(), "tpr": p[mask & (y == 1)].mean(), "fpr": p[mask & (y == 0)].mean()}
    return {v: of(g == v) for v in np.unique(g)}, of(np.ones_like(y, bool))


def violation(y, p, g, kinds):
    per, overall = rates(y, p, g)
    return max(abs(r[k] - overall[k]) for r in per.values() for k in kinds)


def exact_optimum(score, y, g, kinds):
    """Least training error over per-group randomised thresholds with every group's rates equal to
    the overall ones: a linear program over every cut of each group's scores."""
    groups = np.unique(g)
    cols, err, blocks = [], [], []
    for v in groups:
        s, yy = score[g == v], y[g == v]
        pred = s[None, :] >= np.r_[np.unique(s), np.inf][:, None]
        cols.append({"ppr": pred.sum(1), "tpr": (pred & (yy == 1)).sum(1), "fpr": (pred & (yy == 0)).sum(1)})
        err.append((pred != yy[None, :]).sum(1) / y.size)
        blocks.append(pred.shape[0])
    edges = np.r_[0, np.cumsum(blocks)]
    size = {"ppr": [np.sum(g == v) for v in groups], "tpr": [np.sum((g == v) & (y == 1)) for v in groups],
            "fpr": [np.sum((g == v) & (y == 0)) for v in groups]}
    A_eq, b_eq = [], []
    for i in range(len(groups)):  # each group's mixture sums to 1
        row = np.zeros(edges[-1])
        row[edges[i]:edges[i + 1]] = 1.0
        A_eq.append(row)
        b_eq.append(1.0)
    for k in kinds:
        total = np.zeros(edges[-1])  # the overall rate: counts over the overall denominator
        for i in range(len(groups)):
            total[edges[i]:edges[i + 1]] = cols[i][k] / sum(size[k])
        for i in range(len(groups) - 1):  # the last group's equality follows from the others'
            row = -total.copy()
            row[edges[i]:edges[i + 1]] += cols[i][k] / size[k][i]
            A_eq.append(row)
            b_eq.append(0.0)
    res = linprog(np.concatenate(err), A_eq=np.array(A_eq), b_eq=b_eq, bounds=(0, None), method="highs")
    return res.fun


def run_split(name, split, reps):
    col = SETTINGS[name]
    Xtr, ytr, gtr, Xte, yte, gte = split
    g_tr, g_te = gtr[col].to_numpy(), gte[col].to_numpy()
    lr = LogisticRegression(max_iter=10_000).fit(Xtr, ytr)
    s_tr = lr.predict_proba(Xtr)[:, 1]
    rows = []
    for task, (fl_constraint, goal, kinds) in TASKS.items():
        def add(method, p_tr, p_te, wall=np.nan, cpu=np.nan, support=np.nan):
            rows.append({"data": name, "task": task, "method": method,
                         "train_error": np.mean(np.abs(p_tr - ytr)), "train_violation": violation(ytr, p_tr, g_tr, kinds),
                         "test_error": np.mean(np.abs(p_te - yte)), "test_violation": violation(yte, p_te, g_te, kinds),
                         "support": support, "fit_s": wall, "cpu_s": cpu})

        t0 = time.perf_counter()
        optimum = exact_optimum(s_tr, ytr, g_tr, kinds)
        rows.append({"data": name, "task": task, "method": "exact optimum (LP over every cut)", "train_error": optimum,
                     "train_violation": 0.0, "fit_s": time.perf_counter() - t0})
        to = ThresholdOptimizer(estimator=lr, constraints=fl_constraint, objective="accuracy_score", prefit=True,
                                predict_method="predict_proba")
        _, wall, cpu = timed(lambda: to.fit(Xtr, ytr, sensitive_features=g_tr), reps)
        add("fairlearn ThresholdOptimizer", to._pmf_predict(Xtr, sensitive_features=g_tr)[:, 1],
            to._pmf_predict(Xte, sensitive_features=g_te)[:, 1], wall, cpu)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mo, wall, cpu = timed(lambda: MetricOptimizer(metric="error", constraints=goal(col),
                                                          estimator=FrozenEstimator(lr), random_state=0)
                                  .fit(Xtr, ytr, groups={col: g_tr}), reps)
        add(f"skrate MetricOptimizer ({mo.solver_})", mo.predict_proba(Xtr)[:, 1], mo.predict_proba(Xte)[:, 1],
            wall, cpu, int(np.count_nonzero(mo.weights_)))
    return rows


def _cell(column, v):
    if column == "train_error_above_optimum" and isinstance(v, float):  # near rounding: the magnitude matters
        return "0" if v == 0 else f"{v:+.1e}"
    return _four_decimals(column, v)


def main():
    parser = command_line(__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 1 if args.quick else 3
    adult = load_adult(args.data_dir)
    if args.quick:
        idx = np.random.default_rng(0).choice(len(adult[1]), 6000, replace=False)
        adult = (adult[0][idx], adult[1][idx], adult[2].iloc[idx].reset_index(drop=True), *adult[3:])
    rows = run_split("adult", adult, reps)
    seeds = (0,) if args.quick else (0, 1, 2)
    compas = [r for seed in seeds for r in run_split("compas", load_compas(args.data_dir, seed), reps)]
    rows += pd.DataFrame(compas).groupby(["data", "task", "method"], sort=False).mean(numeric_only=True) \
        .reset_index().to_dict("records")
    df = pd.DataFrame(rows)
    best = df[df.method.str.startswith("exact")].set_index(["data", "task"]).train_error
    df["train_error_above_optimum"] = df.train_error - [best[(d, t)] for d, t in zip(df.data, df.task)]
    print(f"# Post-processing benchmark\n\n`python benchmarks/bench_postprocessing.py DATA_DIR"
          f"{' --quick' if args.quick else ''}`, {datetime.date.today()}, {platform.machine()}, "
          f"{versions()}, BLAS 1 thread, median of {reps} fits. COMPAS: mean over split seeds "
          f"{', '.join(map(str, seeds))}. Errors and violations in expectation over the randomisation; violation: "
          "the largest gap between a group's rate and the overall rate.\n")
    cols = ["method", "train_error", "train_error_above_optimum", "train_violation", "test_error", "test_violation",
            "support", "fit_s", "cpu_s"]
    for data in df.data.unique():
        for task in TASKS:
            print(f"\n## {data}: {task}\n")
            print(markdown(df[(df.data == data) & (df.task == task)][cols], _cell))


if __name__ == "__main__":
    main()
