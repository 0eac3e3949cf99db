"""Constraints on new data: held-out multiplier updates and confidence margins, side by side.

Usage::

    python benchmarks/bench_generalization.py DATA_DIR [--quick]

Tasks T1-T4 of BENCHMARKS.md (task definitions and violation functions shared with
``bench_constrained.py``). COMPAS tasks over 10 stratified split seeds, Adult on its fixed
split. Methods, all fitted on the same splits: LogisticRegression, fairlearn's
ExponentiatedGradient, and ConstrainedClassifier as the unmodified proxy-Lagrangian, with
``validation_fraction=0.3``, with ``margin="auto"``, and with both; and the oracle
proxy-Lagrangian over LogisticRegression, unmodified and with ``margin="auto"``. Each variant's
error is compared with its own unmodified solver. Rates in expectation from P(predict 1).

How much of a split's test violation is the noise of the test sample itself: for the oracle
model with margins, the standard deviation of the test violation over bootstrap resamples of
the test rows (no refit), and the true slack a model would need for the worst of 10 independent
splits to stay at or below +0.01 with probability 1/2 and 0.9 were the violation normal with
that spread (``sd * Phi^-1(p^(1/10)) - 0.01``). ``--quick``: 2 seeds, Adult tasks skipped.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import datetime  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import norm  # noqa: E402
from fairlearn.reductions import ExponentiatedGradient  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line, load_adult, load_compas  # noqa: E402
from _environment import versions  # noqa: E402
from bench_constrained import LR_PARAMS, TASKS, expected_error, table  # noqa: E402

from skrate import ConstrainedClassifier  # noqa: E402
from skrate.exceptions import InfeasibleConstraintsWarning  # noqa: E402

VARIANTS = {
    "skrate proxy-Lagrangian (unmodified)": {},
    "skrate validation_fraction=0.3": {"validation_fraction": 0.3},
    "skrate margin='auto'": {"margin": "auto"},
    "skrate margin='auto', margin_confidence=0.99": {"margin": "auto", "margin_confidence": 0.99},
    "skrate validation_fraction=0.3 + margin='auto'": {"validation_fraction": 0.3, "margin": "auto"},
    "skrate oracle over LogisticRegression (unmodified)": {"solver": "oracle_proxy_lagrangian"},
    "skrate oracle over LogisticRegression + margin='auto'": {"solver": "oracle_proxy_lagrangian", "margin": "auto"},
    # the confidence trades test error for reliability on new data: a sweep, not a tuned choice
    **{f"skrate oracle over LogisticRegression + margin='auto', margin_confidence={c}":
       {"solver": "oracle_proxy_lagrangian", "margin": "auto", "margin_confidence": c} for c in (0.99, 0.999)},
}
BASE = "skrate proxy-Lagrangian (unmodified)"
ORACLE_BASE = "skrate oracle over LogisticRegression (unmodified)"
NOISE_MODEL = "skrate oracle over LogisticRegression + margin='auto'"
N_BOOT = 200


def unmodified(name: str) -> str:
    """The variant a method's error is compared with: the same solver without the changes."""
    return ORACLE_BASE if "oracle" in name else BASE


def test_noise(task, p_te, y_te, g_te, rng) -> float:
    """Standard deviation of the test violation over bootstrap resamples of the test rows."""
    draws = rng.integers(0, y_te.shape[0], size=(N_BOOT, y_te.shape[0]))
    return float(np.std([task.violation(y_te[i], p_te[i], g_te.iloc[i].reset_index(drop=True)) for i in draws]))


def run_split(task, split, seed) -> list[dict]:
    X_tr, y_tr, g_tr, X_te, y_te, g_te = split
    out = []

    def record(method, p_tr, p_te, secs, **extra):
        out.append(dict(task=task.name, seed=seed, method=method, fit_s=secs,
                        test_error=expected_error(y_te, p_te), train_vio=task.violation(y_tr, p_tr, g_tr),
                        test_vio=task.violation(y_te, p_te, g_te), **extra))

    t = time.perf_counter()
    lr = LogisticRegression(**LR_PARAMS).fit(X_tr, y_tr)
    record("LogisticRegression", lr.predict(X_tr), lr.predict(X_te), time.perf_counter() - t)
    t = time.perf_counter()
    eg = ExponentiatedGradient(LogisticRegression(**LR_PARAMS), constraints=task.fairlearn_moment())
    eg.fit(X_tr, y_tr, sensitive_features=task.fairlearn_features(g_tr))
    record("fairlearn ExponentiatedGradient", eg._pmf_predict(X_tr)[:, 1], eg._pmf_predict(X_te)[:, 1],
           time.perf_counter() - t)
    for name, params in VARIANTS.items():
        if "oracle" in name:
            params = dict(params, estimator=LogisticRegression(**LR_PARAMS))
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleConstraintsWarning)
            clf = ConstrainedClassifier(list(task.constraints), random_state=seed, **params).fit(X_tr, y_tr, groups=g_tr)
        secs = time.perf_counter() - t
        p_te = clf.predict_proba(X_te)[:, 1]
        extra = {}
        if name == NOISE_MODEL:
            extra["noise_sd"] = test_noise(task, p_te, y_te, g_te, np.random.default_rng(seed))
        record(name, clf.predict_proba(X_tr)[:, 1], p_te, secs, **extra)
    return out


def main(argv=None) -> None:
    parser = command_line(__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = [0, 1] if args.quick else list(range(10))
    rows = []
    adult = None if args.quick else load_adult(args.data_dir)
    compas = {s: load_compas(args.data_dir, s) for s in seeds}
    for task in TASKS:
        if task.data == "adult" and adult is None:
            continue
        for seed in (seeds if task.data == "compas" else [0]):
            rows += run_split(task, adult if task.data == "adult" else compas[seed], seed)
            print(f"  [{task.name} seed {seed} done]", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    agg = df.groupby(["task", "method"], sort=False).agg(
        fit_s=("fit_s", "median"), test_error=("test_error", "mean"), train_vio=("train_vio", "mean"),
        test_vio=("test_vio", "mean"), worst_test_vio=("test_vio", "max"), splits=("seed", "count")).reset_index()

    print("# Constraints on new data: held-out updates and margins\n")
    print(f"Command: `python benchmarks/bench_generalization.py {args.data_dir}{' --quick' if args.quick else ''}`  ")
    print(f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; 2 shared cores, BLAS 1 thread; {versions()}.  ")
    print(f"COMPAS tasks over split seeds {seeds[0]}..{seeds[-1]} (means, and the worst split); Adult on its fixed split.\n")
    for task in TASKS:
        sub = agg[agg.task == task.name]
        if sub.empty:
            continue
        print(f"## {task.name} (`{'`, `'.join(task.constraints)}`)\n")
        body = [[r.method, f"{r.fit_s:.2f}", f"{r.test_error:.4f}", f"{r.train_vio:+.4f}", f"{r.test_vio:+.4f}",
                 f"{r.worst_test_vio:+.4f}", str(r.splits)] for r in sub.itertuples()]
        print(table(["method", "fit s (median)", "test error", "train vio", "mean test vio", "worst test vio",
                     "splits"], body))
        print()
    print("## Targets (mean test violation <= 0, worst split <= +0.01, test error <= unmodified + 0.005)\n")
    print("`error vs unmodified` compares a method with the same solver without held-out updates or margins "
          "(for the oracle rows, the oracle solver), which `all three` uses; `error vs core` compares it with the "
          "core proxy-Lagrangian, `ConstrainedClassifier` at its defaults, and `all three vs core` uses that.\n")
    body = []
    for task in TASKS:
        sub = agg[agg.task == task.name].set_index("method")
        if sub.empty:
            continue
        for name in [v for v in VARIANTS if v not in (BASE, ORACLE_BASE)]:
            r = sub.loc[name]
            base_err, core_err = sub.loc[unmodified(name), "test_error"], sub.loc[BASE, "test_error"]
            vio_ok = r.test_vio <= 0 and r.worst_test_vio <= 0.01
            body.append([task.name, name, f"{r.test_vio:+.4f}", f"{r.worst_test_vio:+.4f}",
                         f"{r.test_error - base_err:+.4f}", "met" if vio_ok and r.test_error <= base_err + 0.005 else "NOT met",
                         f"{r.test_error - core_err:+.4f}", "met" if vio_ok and r.test_error <= core_err + 0.005 else "NOT met"])
    print(table(["task", "method", "mean test vio", "worst test vio", "error vs unmodified", "all three",
                 "error vs core", "all three vs core"], body))
    print()
    print(f"## The test sample's own noise ({NOISE_MODEL}, {N_BOOT} bootstrap resamples of each split's test rows)\n")
    body = []
    for task in TASKS:
        sub = df[(df.task == task.name) & (df.method == NOISE_MODEL)]
        if sub.empty:
            continue
        sd, n_test = float(sub.noise_sd.mean()), (15060 if task.data == "adult" else 1584)
        need = [sd * norm.ppf(p ** 0.1) - 0.01 for p in (0.5, 0.9)]
        body.append([task.name, str(n_test), f"{sd:.4f}", f"{need[0]:+.3f}", f"{need[1]:+.3f}"])
    print(table(["task", "test rows", "sd of the test violation", "slack for worst-of-10 <= +0.01, p = 1/2",
                 "p = 0.9"], body))


if __name__ == "__main__":
    main()
