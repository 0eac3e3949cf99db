"""AUCClassifier benchmark: exact, SPAM and VRSPAM side by side with LogisticRegression (C by CV).

Usage: ``python benchmarks/bench_auc.py DATA_DIR [--out doc/benchmarks]``

Datasets: Adult and COMPAS (protocol of BENCHMARKS.md; COMPAS averaged over the split seeds
0, 1, 2), scikit-learn's breast_cancer and digits (even vs odd), both with a stratified 70/30
split (random_state=0) and features standardised on the training part. All AUC solvers use the
estimator's defaults (``alpha=0.01``, ``eta0="auto"``, ``batch_size=16``); the objective gap is
``(P(w) - P(w_exact)) / P(w_exact)`` on the training data.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import SplineTransformer, StandardScaler  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import command_line, load_adult, load_compas  # noqa: E402
from _verdict import verdict  # noqa: E402

from skrate import AUCClassifier  # noqa: E402
from skrate._auc_objective import ClassStatistics, smooth_objective  # noqa: E402
from skrate._auc_solvers import column_scale, minibatch_smoothness  # noqa: E402
from skrate._prox import elastic_net_penalty  # noqa: E402

REPEATS = 3
TARGET_GAP = 1e-3
TARGET_AUC = 0.002
ALPHA = 0.01


def _split_standardise(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xte), yte


def datasets(data_dir):
    """``name -> list of (X_train, y_train, X_test, y_test)`` (several splits for COMPAS)."""
    Xa, ya, _, Xat, yat, _ = load_adult(data_dir)
    compas = []
    for seed in (0, 1, 2):
        Xc, yc, _, Xct, yct, _ = load_compas(data_dir, seed)
        compas.append((Xc, yc, Xct, yct))
    bc = load_breast_cancer()
    dg = load_digits()
    return {
        "Adult": [(Xa, ya, Xat, yat)],
        "COMPAS": compas,
        "breast_cancer": [_split_standardise(bc.data, bc.target)],
        "digits even/odd": [_split_standardise(dg.data, (dg.target % 2 == 0).astype(int))],
    }


def timed(make, X, y):
    """Median wall and CPU time of at least ``REPEATS`` fits (more for fits under 0.1 s, where
    the machine's noise is of the order of the fit), and the last fitted estimator."""
    walls, cpus = [], []
    while len(walls) < REPEATS or (len(walls) < 25 and np.median(walls) < 0.1):
        est = make()
        w0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, y)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus)), est


class Streamed:
    """``partial_fit`` over ``n_chunks`` consecutive chunks, ``epochs`` times (streaming use)."""

    def __init__(self, n_chunks=10, epochs=5):
        self.n_chunks, self.epochs = n_chunks, epochs

    def fit(self, X, y):
        self.est = AUCClassifier(alpha=ALPHA, random_state=0)
        for _ in range(self.epochs):
            for chunk in np.array_split(np.arange(len(y)), self.n_chunks):
                self.est.partial_fit(X[chunk], y[chunk], classes=[0, 1])
        self.coef_ = self.est.coef_
        self.decision_function = self.est.decision_function
        return self


def objective(w, X, y, l1_ratio):
    return smooth_objective(w, X, y) + elastic_net_penalty(w, ALPHA, l1_ratio)


def trace(solver, X, y, Xt, yt, ref, l1_ratio, max_iter=30):
    """Objective gap and test AUC after every pass (SPAM) or outer loop (VRSPAM)."""
    points = []

    def record(info):
        w = info["coef"]
        points.append((info["n_iter"], (objective(w, X, y, l1_ratio) - ref) / ref,
                       roc_auc_score(yt, Xt @ w)))

    penalty = "l2" if l1_ratio == 0 else "elasticnet"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        AUCClassifier(solver=solver, penalty=penalty, l1_ratio=l1_ratio or 0.5, alpha=ALPHA,
                      max_iter=max_iter, tol=0.0, random_state=0, callback=record).fit(X, y)
    return points


def first_pass_below(points, level):
    hits = [k for k, gap, _ in points if gap <= level]
    return f"{hits[0]:g}" if hits else f"> {points[-1][0]:g}"


def run_split(X, y, Xt, yt, l1_ratio=0.0):
    """All methods on one split; returns rows of metrics and the pass traces."""
    penalty = "l2" if l1_ratio == 0 else "elasticnet"
    out = {}
    if l1_ratio == 0:
        wall, cpu, lrcv = timed(lambda: LogisticRegressionCV(
            Cs=10, cv=5, scoring="roc_auc", max_iter=5000, l1_ratios=(0.0,),
            use_legacy_attributes=False), X, y)
        out["LogisticRegressionCV (10 C x 5 folds)"] = dict(
            wall=wall, cpu=cpu, auc=roc_auc_score(yt, lrcv.decision_function(Xt)), gap=None,
            passes=None, nnz=None)
        scores = {"LogisticRegressionCV": lrcv.decision_function(Xt)}
        C = float(np.ravel(lrcv.C_)[0])
        wall, cpu, lr = timed(lambda: LogisticRegression(C=C, max_iter=5000), X, y)
        out["LogisticRegression (one fit at the CV's C)"] = dict(
            wall=wall, cpu=cpu, auc=roc_auc_score(yt, lr.decision_function(Xt)), gap=None,
            passes=None, nnz=None)
    ref = None
    for solver in ("exact", "spam", "vrspam"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            wall, cpu, est = timed(lambda: AUCClassifier(
                solver=solver, penalty=penalty, l1_ratio=l1_ratio or 0.5, alpha=ALPHA,
                random_state=0), X, y)
        if solver == "exact":
            ref = est.objective_
        if l1_ratio == 0:
            scores[solver] = est.decision_function(Xt)
        out[f"AUCClassifier {solver}"] = dict(
            wall=wall, cpu=cpu, auc=roc_auc_score(yt, est.decision_function(Xt)),
            gap=(est.objective_ - ref) / ref, passes=est.n_iter_,
            nnz=int(np.count_nonzero(est.coef_)))
    if l1_ratio == 0:
        wall, cpu, st = timed(Streamed, X, y)
        out["AUCClassifier partial_fit (10 chunks x 5 epochs)"] = dict(
            wall=wall, cpu=cpu, auc=roc_auc_score(yt, st.decision_function(Xt)),
            gap=(objective(st.coef_.ravel(), X, y, 0.0) - ref) / ref, passes=5.0,
            nnz=int(np.count_nonzero(st.coef_)))
    traces = {s: trace(s, X, y, Xt, yt, ref, l1_ratio) for s in ("spam", "vrspam")}
    if l1_ratio == 0:
        out["paired variance"] = paired_auc_variance(yt, scores)
    return out, traces


def paired_auc_variance(yt, scores, n_boot=200):
    """Per solver, the variance of ``AUC(solver) - AUC(LogisticRegressionCV)`` over bootstrap
    resamples of the test rows (both models scored on the same resample)."""
    rng = np.random.default_rng(0)
    ref = scores["LogisticRegressionCV"]
    diffs = {k: [] for k in scores if k != "LogisticRegressionCV"}
    for _ in range(n_boot):
        i = rng.integers(0, len(yt), len(yt))
        base = roc_auc_score(yt[i], ref[i])
        for k in diffs:
            diffs[k].append(roc_auc_score(yt[i], scores[k][i]) - base)
    return {k: float(np.var(v)) for k, v in diffs.items()}


def average(rows_list):
    keys = rows_list[0].keys()
    avg = {}
    for k in keys:
        avg[k] = {}
        for field in rows_list[0][k]:
            vals = [r[k][field] for r in rows_list]
            avg[k][field] = None if vals[0] is None else float(np.mean(vals))
    return avg


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def main():
    parser = command_line(__doc__)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "doc",
                                                      "benchmarks"))
    args = parser.parse_args()
    data = datasets(args.data_dir)
    all_traces = {}
    print(f"alpha={ALPHA}, l2 penalty; times in seconds, median of >= {REPEATS} fits (up to 25 "
          "when a fit takes under 0.1 s); gap = relative objective gap to `exact` on the "
          "training data.\n")
    summary, paired = [], []
    for name, splits in data.items():
        results = [run_split(*s) for s in splits]
        variances = [r[0].pop("paired variance") for r in results]
        rows = average([r[0] for r in results])
        for solver in ("exact", "spam", "vrspam"):
            diff = rows[f"AUCClassifier {solver}"]["auc"] - rows["LogisticRegressionCV (10 C x 5 folds)"]["auc"]
            se = float(np.sqrt(sum(v[solver] for v in variances)) / len(variances))
            paired.append((name, solver, diff, se))
        lr_auc = rows["LogisticRegressionCV (10 C x 5 folds)"]["auc"]
        first = results[0][0]  # the plot shows the first split
        all_traces[name] = (results[0][1], first["AUCClassifier exact"]["auc"],
                            first["LogisticRegressionCV (10 C x 5 folds)"]["auc"])
        X = splits[0][0]
        print(f"### {name} (n_train={X.shape[0]}, d={X.shape[1]}"
              + (f", mean of {len(splits)} splits)" if len(splits) > 1 else ")"))
        print("| method | fit wall | fit CPU | passes | objective gap | test AUC | AUC - LR-CV |")
        print("|---|---|---|---|---|---|---|")
        for method, r in rows.items():
            print(f"| {method} | {r['wall']:.3f} | {r['cpu']:.3f} | {fmt(r['passes'], '.1f')} | "
                  f"{fmt(r['gap'], '.1e')} | {r['auc']:.4f} | {r['auc'] - lr_auc:+.4f} |")
        tr = results[0][1]
        lr_single = [v for k, v in rows.items() if k.startswith("LogisticRegression (")][0]
        y0 = splits[0][1]
        # condition number of the (preconditioned) minibatch steps per example: passes
        # needed per digit
        kappa_n = minibatch_smoothness(X, y0, ClassStatistics.from_data(X, y0), 16,
                                       column_scale(X)) / (ALPHA * X.shape[0])
        summary.append((name, kappa_n, first_pass_below(tr["vrspam"], TARGET_GAP),
                        first_pass_below(tr["spam"], TARGET_GAP),
                        min(tr["vrspam"][-1][1], 1.0), tr["spam"][-1][1],
                        max(abs(rows[f"AUCClassifier {s}"]["auc"] - lr_auc)
                            for s in ("exact", "spam", "vrspam")),
                        rows["AUCClassifier exact"]["wall"], rows["AUCClassifier exact"]["cpu"],
                        lr_single["wall"], lr_single["cpu"]))
        print()
    print("### Targets (first split of each dataset for the pass counts)")
    print("| dataset | L_b / (alpha n) | VRSPAM passes to gap <= 1e-3 | SPAM passes to gap "
          "<= 1e-3 | VRSPAM gap at max_iter=30 | SPAM gap at max_iter=30 | max abs AUC diff to LR-CV | "
          "exact wall / CPU | LR wall / CPU (one fit at the CV's C) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in summary:
        print(f"| {s[0]} | {s[1]:.2g} | {s[2]} | {s[3]} | {s[4]:.1e} | {s[5]:.1e} | "
              f"{s[6]:.4f} | {s[7]:.4f} / {s[8]:.4f} | {s[9]:.4f} / {s[10]:.4f} |")
    print()
    print("### Test AUC within 0.002 of LogisticRegressionCV, read with the paired standard error")
    print("Standard error of the (mean over splits) difference from 200 bootstrap resamples of each split's "
          "test rows, both models scored on the same resample; a miss within one standard error is a tie.\n")
    print("| dataset | solver | AUC - LR-CV | standard error | verdict |")
    print("|---|---|---|---|---|")
    for name, solver, diff, se in paired:
        print(f"| {name} | {solver} | {diff:+.4f} | {se:.4f} | "
              f"{verdict(abs(diff) <= TARGET_AUC, abs(diff) - TARGET_AUC, se)} |")
    print()

    # elastic net: exact (proximal gradient on the quadratic) vs the stochastic solvers
    print("### Elastic net (alpha=0.01, l1_ratio=0.5)")
    print("| dataset | method | fit wall | passes | objective gap | nonzeros | test AUC | "
          "VRSPAM / SPAM passes to gap <= 1e-3 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, splits in data.items():
        rows, tr = run_split(*splits[0], l1_ratio=0.5)
        for method, r in rows.items():
            extra = ""
            if method.endswith("vrspam"):
                extra = f"{first_pass_below(tr['vrspam'], TARGET_GAP)} / " \
                        f"{first_pass_below(tr['spam'], TARGET_GAP)}"
            print(f"| {name} | {method} | {r['wall']:.3f} | {fmt(r['passes'], '.0f')} | "
                  f"{fmt(r['gap'], '.1e')} | {r['nnz']} | {r['auc']:.4f} | {extra} |")
    print()
    alpha_check(data)
    spline_check(*data["Adult"][0])
    plot(all_traces, os.path.join(args.out, "auc_passes.png"))


def alpha_check(data):
    """Test AUC of `exact` across alpha (first split): the surrogate, not the tuning."""
    alphas = (0.0, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1)
    print("### `exact` test AUC against alpha (diagnostic, first split)")
    print("| dataset | " + " | ".join(f"alpha={a:g}" for a in alphas) + " |")
    print("|---|" + "---|" * len(alphas))
    for name, splits in data.items():
        X, y, Xt, yt = splits[0]
        aucs = [roc_auc_score(yt, AUCClassifier(solver="exact", alpha=a).fit(X, y)
                              .decision_function(Xt)) for a in alphas]
        print(f"| {name} | " + " | ".join(f"{v:.4f}" for v in aucs) + " |")
    print()


def spline_check(X, y, Xt, yt):
    """Adult's AUC gap with the numeric columns (the first five) expanded in cubic splines.

    Same features for both models; a diagnostic of the square surrogate, not a timed run.
    """
    spl = SplineTransformer(n_knots=8, degree=3, knots="quantile").fit(X[:, :5])
    scale = StandardScaler().fit(spl.transform(X[:, :5]))

    def expand(Z):
        return np.hstack([scale.transform(spl.transform(Z[:, :5])), Z[:, 5:]])

    print("### Adult with spline-expanded numeric features (diagnostic, one fit each)")
    print("| features | d | LogisticRegressionCV test AUC | AUCClassifier exact test AUC | "
          "difference |")
    print("|---|---|---|---|---|")
    for label, A, B in (("protocol (standardised numerics)", X, Xt),
                        ("numerics as cubic splines, 8 quantile knots", expand(X), expand(Xt))):
        lr = LogisticRegressionCV(Cs=10, cv=5, scoring="roc_auc", max_iter=5000,
                                  l1_ratios=(0.0,), use_legacy_attributes=False).fit(A, y)
        ex = AUCClassifier(solver="exact", alpha=ALPHA).fit(A, y)
        a_lr = roc_auc_score(yt, lr.decision_function(B))
        a_ex = roc_auc_score(yt, ex.decision_function(B))
        print(f"| {label} | {A.shape[1]} | {a_lr:.4f} | {a_ex:.4f} | {a_ex - a_lr:+.4f} |")
    print()


def plot(all_traces, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(all_traces), figsize=(4 * len(all_traces), 6.5))
    for j, (name, (tr, exact_auc, lr_auc)) in enumerate(all_traces.items()):
        for solver, style in (("spam", "o--"), ("vrspam", "s-")):
            k, gap, auc = map(np.array, zip(*tr[solver]))
            axes[0, j].semilogy(k, np.maximum(gap, 1e-12), style, ms=3,
                                label=solver.upper())
            axes[1, j].plot(k, auc, style, ms=3, label=solver.upper())
        axes[0, j].axhline(TARGET_GAP, color="grey", lw=0.8, ls=":")
        axes[1, j].axhline(exact_auc, color="black", lw=0.8, ls="-.", label="exact")
        axes[1, j].axhline(lr_auc, color="green", lw=0.8, ls=":", label="LogisticRegressionCV")
        axes[0, j].set_title(name)
        axes[1, j].set_xlabel("passes over the data")
    axes[0, 0].set_ylabel("relative objective gap to exact")
    axes[1, 0].set_ylabel("test ROC-AUC")
    axes[0, 0].legend()
    axes[1, 0].legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot written to {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
