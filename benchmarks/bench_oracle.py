"""Oracle solvers of ConstrainedClassifier against fairlearn's ExponentiatedGradient, side by side.

Usage::

    python benchmarks/bench_oracle.py DATA_DIR [--quick]

Both wrap the same base estimator -- LogisticRegression and HistGradientBoostingClassifier --
and reduce the constrained problem to a sequence of weighted fits. Tasks T2a, T2b and T4 of
BENCHMARKS.md are the ones fairlearn expresses exactly; T1 and T3 are run for skrate alone.
COMPAS tasks are averaged over the split seeds 0 .. 9 (``--seeds``); the targets table adds the
paired difference to fairlearn with its standard error over the seeds, since a COMPAS test
split of 1,584 rows moves a test error by about 0.01 and a group's rate by 0.02. Rates are computed by the functions of
``bench_constrained.py`` from the probability that a model predicts 1 (stochastic models in
expectation); skrate's m-stochastic model is also scored from its reproducible ``predict``.

``--quick`` is a smoke run: one seed, one repetition, Adult subsampled to 4000 training rows.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from fairlearn.reductions import ExponentiatedGradient  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line, load_task_data  # noqa: E402
from _verdict import verdict  # noqa: E402
from bench_constrained import TASKS, Report, expected_error, fmt, run_header, table, timed  # noqa: E402

import skrate  # noqa: E402
from skrate import ConstrainedClassifier  # noqa: E402

BASES = {
    "LogisticRegression": lambda: LogisticRegression(max_iter=1000),
    "HistGradientBoosting": lambda: HistGradientBoostingClassifier(max_iter=20, random_state=0),
}
# (label, solver, lambda_learning_rate, run on Adult too)
SKRATE = [
    ("skrate oracle proxy-Lagrangian", "oracle_proxy_lagrangian", "auto", True),
    ("skrate oracle Lagrangian", "oracle_lagrangian", 0.3, False),
]
EG = "fairlearn ExponentiatedGradient"
EXACT = ("T2a", "T2b", "T4")


def fit_skrate(task, base, solver, eta, X, y, g, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", skrate.exceptions.InfeasibleConstraintsWarning)
        return ConstrainedClassifier(list(task.constraints), estimator=BASES[base](), solver=solver,
                                     lambda_learning_rate=eta, random_state=seed).fit(X, y, groups=g)


def fit_fairlearn(task, base, X, y, g):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ExponentiatedGradient(BASES[base](), constraints=task.fairlearn_moment()).fit(
            X, y, sensitive_features=task.fairlearn_features(g))


def run_split(task, split, seed: int, reps: int, on_adult: bool) -> list[dict]:
    X_tr, y_tr, g_tr, X_te, y_te, g_te = split
    rows = []

    def score(method, base, p_tr, p_te, wall, cpu, predict_fn, support, **extra):
        _, pred_wall, _ = timed(lambda: predict_fn(X_te), reps)
        rows.append(dict(task=task.name, seed=seed, base=base, method=method, fit_wall=wall, fit_cpu=cpu,
                         train_error=expected_error(y_tr, p_tr), test_error=expected_error(y_te, p_te), train_vio=task.violation(y_tr, p_tr, g_tr),
                         test_vio=task.violation(y_te, p_te, g_te), predict_ms=1e3 * pred_wall,
                         support=support, **extra))

    for base in BASES:
        if task.name in EXACT:
            eg, wall, cpu = timed(lambda: fit_fairlearn(task, base, X_tr, y_tr, g_tr), reps)
            score(EG, base, eg._pmf_predict(X_tr)[:, 1], eg._pmf_predict(X_te)[:, 1], wall, cpu,
                  lambda X: eg.predict(X, random_state=0), int((eg.weights_ > 0).sum()),
                  n_fits=len(eg.predictors_), kept=len(eg.predictors_))
        for label, solver, eta, adult_too in SKRATE:
            if on_adult and not adult_too:
                continue
            clf, wall, cpu = timed(lambda: fit_skrate(task, base, solver, eta, X_tr, y_tr, g_tr, seed), reps)
            weights = clf.solutions_["m_stochastic"]
            score(label, base, clf.predict_proba(X_tr)[:, 1], clf.predict_proba(X_te)[:, 1], wall, cpu,
                  clf.predict, int((weights > 0).sum()), n_fits=clf.n_iter_,
                  kept=sum(e is not None for e in clf.estimators_),
                  m_plus_1=len(clf.constraints_) + 1, feasible=bool(clf.feasible_))
            lab_tr, lab_te = clf.predict(X_tr).astype(float), clf.predict(X_te).astype(float)
            rows.append(dict(rows[-1], method=label + ", predict labels", train_error=expected_error(y_tr, lab_tr),
                             test_error=expected_error(y_te, lab_te),
                             train_vio=task.violation(y_tr, lab_tr, g_tr), test_vio=task.violation(y_te, lab_te, g_te)))
    return rows


def main(argv=None) -> None:
    parser = command_line(__doc__)
    parser.add_argument("--quick", action="store_true", help="one seed, one repetition, small Adult")
    parser.add_argument("--seeds", type=int, default=10, help="COMPAS split seeds 0 .. SEEDS-1 (default 10)")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else 3
    say = Report()
    adult, compas, seeds = load_task_data(args.data_dir, args.quick, args.seeds)

    say("# Oracle solvers benchmark: ConstrainedClassifier(estimator=...) vs fairlearn ExponentiatedGradient")
    say()
    for line in run_header(f"python benchmarks/bench_oracle.py {args.data_dir}{' --quick' if args.quick else ''}"
                           f"{'' if args.seeds == 10 else f' --seeds {args.seeds}'}"):
        say(line)
    say(f"Adult: {adult[0].shape[0]} train / {adult[3].shape[0]} test rows. COMPAS: seeds {seeds} (means).  ")
    say(f"Fit and predict times: median of {reps} run(s). Base estimators, identical on both sides: "
        "`LogisticRegression(max_iter=1000)` and `HistGradientBoostingClassifier(max_iter=20, random_state=0)`. "
        "fairlearn: `ExponentiatedGradient(base, constraints)` with its defaults (eps=0.01, max_iter=50). "
        "skrate: `ConstrainedClassifier(constraints, estimator=base, solver=..., lambda_learning_rate=..., "
        "random_state=seed)` with the other parameters at their defaults (early stopping tol=1e-4, at most "
        "100 fits); proxy-Lagrangian with lambda_learning_rate='auto' (10), Lagrangian with 0.3 (COMPAS "
        "only, to keep the run short). Columns: `fits` = base-estimator fits (skrate: `n_iter_`, fairlearn: "
        "`len(predictors_)`); `kept` = fitted models held after fit (fairlearn keeps every fit; skrate keeps "
        "those of the m-stochastic, best and last solutions, at most m+3); `support` = models with "
        "positive weight in the returned mixture (skrate: the m-stochastic LP solution, at most m+1).")
    if args.quick:
        say("**Smoke run (`--quick`)**: Adult subsampled to 4000 training rows, one seed, one repetition.")
    say()

    rows = []
    for task in TASKS:
        for seed in (seeds if task.data == "compas" else [0]):
            split = adult if task.data == "adult" else compas[seed]
            rows += run_split(task, split, seed, reps, on_adult=task.data == "adult")
            print(f"  [{task.name} seed {seed} done]", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    numeric = ["fit_wall", "fit_cpu", "train_error", "test_error", "train_vio", "test_vio", "predict_ms", "support", "n_fits", "kept"]
    means = df.groupby(["task", "base", "method"], sort=False)[numeric].mean().reset_index()

    say("## Comparison (violation > 0 means the constraint is broken)")
    for task in TASKS:
        say()
        exact = "fairlearn: " + task.fairlearn_note if task.name in EXACT else "skrate only (fairlearn cannot express it exactly)"
        say(f"### {task.name} ({task.data}; `{'`, `'.join(task.constraints)}`; {exact})")
        say()
        body = []
        for _, r in means[means.task == task.name].iterrows():
            labels = r.method.endswith("predict labels")
            body.append([r.base, r.method, "same fit" if labels else fmt(r.fit_wall, "{:.2f}"),
                         "same fit" if labels else fmt(r.fit_cpu, "{:.2f}"), fmt(r.train_error), fmt(r.test_error),
                         fmt(r.train_vio, "{:+.4f}"), fmt(r.test_vio, "{:+.4f}"), fmt(r.predict_ms, "{:.1f}"),
                         fmt(r.n_fits, "{:.1f}"), fmt(r.kept, "{:.1f}"), fmt(r.support, "{:.1f}")])
        say(table(["base", "method", "fit wall s", "fit CPU s", "train error", "test error", "train vio", "test vio",
                   "predict ms", "fits", "kept", "support"], body))

    sk_rows = df[df.method.isin([s[0] for s in SKRATE])]
    say()
    say(f"m-stochastic support <= m+1 in {int((sk_rows.support <= sk_rows.m_plus_1).sum())}/{len(sk_rows)} skrate "
        f"fits; models kept <= m+3 in {int((sk_rows.kept <= sk_rows.m_plus_1 + 2).sum())}/{len(sk_rows)}; feasible on train (`feasible_`) in {int(sk_rows.feasible.sum())}/{len(sk_rows)}.")

    # -- targets: the issue's, per exact task and base, for the main skrate method
    def value(task, base, method, col):
        sel = means[(means.task == task) & (means.base == base) & (means.method == method)]
        return float(sel[col].iloc[0])

    main_method = SKRATE[0][0]

    def paired(task, base, col):
        """Mean and standard error over seeds of skrate minus fairlearn."""
        sel = df[(df.task == task) & (df.base == base)].pivot_table(index="seed", columns="method", values=col)
        diff = (sel[main_method] - sel[EG]).to_numpy()
        return diff.mean(), (diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else np.nan)

    def pm(d, se):
        return f"{d:+.4f}" if np.isnan(se) else f"{d:+.4f} ± {se:.4f}"

    body = []
    for task in EXACT:
        for base in BASES:
            e_sk, e_eg = value(task, base, main_method, "test_error"), value(task, base, EG, "test_error")
            v_sk, v_eg = value(task, base, main_method, "test_vio"), value(task, base, EG, "test_vio")
            w_sk, w_eg = value(task, base, main_method, "fit_wall"), value(task, base, EG, "fit_wall")
            c_sk, c_eg = value(task, base, main_method, "fit_cpu"), value(task, base, EG, "fit_cpu")
            (de, se_e), (dv, se_v) = paired(task, base, "test_error"), paired(task, base, "test_vio")
            body.append([task, base, f"{e_sk:.4f} vs {e_eg:.4f}", pm(de, se_e),
                         verdict(e_sk <= e_eg, de, se_e),
                         f"{v_sk:+.4f} vs {v_eg:+.4f}", pm(dv, se_v),
                         verdict(v_sk <= max(v_eg, 0.0), dv, se_v),
                         f"{w_sk:.2f} / {c_sk:.2f} vs {w_eg:.2f} / {c_eg:.2f}",
                         "met" if w_sk <= w_eg and c_sk <= c_eg else "NOT met"])
    say()
    say(f"## Targets ({main_method} vs {EG})")
    say()
    say("Test violation counts as met when it is at most fairlearn's or not positive. `diff` is skrate minus "
        "fairlearn, paired by split, mean ± standard error over the seeds (Adult: one split, no error bar). "
        "`tie`: missed by no more than one standard error of the paired difference, i.e. no measurable "
        "difference from fairlearn (Adult, without an error bar, is judged strictly).")
    say()
    say(table(["task", "base", "test error", "diff", "error target", "test violation", "diff", "violation target",
               "fit wall / CPU s", "time target"], body))
    say()

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "doc", "benchmarks", "oracle.md")
    if not args.quick:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write("\n".join(say.lines) + "\n")
        print(f"written to {os.path.normpath(path)}", file=sys.stderr)


if __name__ == "__main__":
    main()
