"""The ``skrate`` command: demo, fit, audit and predict on CSV files.

Exit codes: 0 success; 2 a wrong command line (including an unparseable ``--constraint``,
``--objective`` or ``--metric``);
65 the input data is unusable (missing column, non-binary target, empty values, constraints
that do not fit the data); 66 an input file is missing or unreadable.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

EXIT_USAGE, EXIT_DATA, EXIT_NOINPUT = 2, 65, 66
MODEL_FORMAT = "skrate-model/1"


class CLIError(Exception):
    """An error to report in one line and exit with ``code``."""

    def __init__(self, message: str, code: int = EXIT_DATA):
        super().__init__(message)
        self.code = code


def _say(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr)


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _pandas(purpose: str = "reading CSV files"):
    try:
        import pandas as pd
    except ImportError:
        raise CLIError(f"{purpose} needs pandas: pip install pandas", EXIT_USAGE) from None
    return pd


def _read_csv(path: str):
    pd = _pandas()
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{path}: no such file", EXIT_NOINPUT)
    try:
        frame = pd.read_csv(p, skipinitialspace=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot read the file ({exc})", EXIT_NOINPUT) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CLIError(f"{path}: not a readable CSV file ({str(exc).strip()})") from None
    if frame.shape[0] == 0:
        raise CLIError(f"{path}: the file has a header but no rows")
    return frame


def _need_columns(frame, columns: list[str], path: str, role: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise CLIError(f"{path}: no column {', '.join(map(repr, missing))} ({role}); the file's columns are "
                       f"{', '.join(map(str, frame.columns))}")


def _no_empty(frame, columns: list[str], path: str) -> None:
    for col in columns:
        empty = frame[col].isna().to_numpy()
        if empty.any():
            line = int(np.flatnonzero(empty)[0]) + 2  # 1-based, after the header
            raise CLIError(f"{path}: column {col!r} has {int(empty.sum())} empty value(s), the first on line "
                           f"{line}; fill or drop those rows")


def _target(frame, name: str, path: str, classes=None) -> np.ndarray:
    y = frame[name]
    _no_empty(frame, [name], path)
    values = sorted(y.unique().tolist(), key=str)
    if classes is None and len(values) != 2:
        shown = ", ".join(map(repr, values[:6])) + (", ..." if len(values) > 6 else "")
        raise CLIError(f"{path}: the target column {name!r} has {len(values)} distinct value(s) ({shown}); "
                       "skrate trains binary classifiers and needs exactly two")
    if classes is not None:
        unknown = [v for v in values if v not in classes]
        if unknown:
            raise CLIError(f"{path}: the target column {name!r} holds {unknown[:3]} that the model never saw "
                           f"(its classes: {classes})")
    return y.to_numpy()


def _parse_constraints(texts: list[str]):
    from .rates import SpecParseError, as_constraints

    try:
        return as_constraints(list(texts))
    except SpecParseError as exc:
        raise CLIError(f"invalid --constraint: {exc}", EXIT_USAGE) from None


def _groups(frame, names: list[str]):
    # as read: the groups layer names a 0.0/1.0 column's groups 0 and 1, as for an int column
    return frame[names] if names else None


# -- fit ------------------------------------------------------------------------------------------
def _pipeline(frame, features: list[str], estimator):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [c for c in features if frame[c].dtype.kind in "biuf"]
    categorical = [c for c in features if c not in numeric]
    prep = ColumnTransformer([
        ("numeric", StandardScaler(), numeric),
        ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
    ])
    return Pipeline([("prepare", prep), ("classifier", estimator)])


def _estimator(args, constraints):
    """The estimator the command line asks for; a wrong --objective or --metric is refused here,
    before the data is read."""
    import skrate
    from ._metric_optimizer import _as_loss
    from .rates import Ratio, SpecParseError, as_expression

    if args.metric is not None:
        optimizer = getattr(skrate, "MetricOptimizer", None)
        if optimizer is None:
            raise CLIError(f"--metric {args.metric} needs skrate.MetricOptimizer, which this version of skrate "
                           f"(skrate {skrate.__version__}) does not include; minimise a rate with --objective "
                           "instead (e.g. --objective error)", EXIT_USAGE)
        if args.objective is not None:
            raise CLIError("give either --metric or --objective, not both", EXIT_USAGE)
        try:
            _as_loss(args.metric)
        except ValueError as exc:  # its message lists the metric names, or names the loss of a score
            raise CLIError(f"invalid --metric: {exc}", EXIT_USAGE) from None
        return optimizer(metric=args.metric, constraints=constraints or None, max_iter=args.max_iter,
                         random_state=args.random_state)
    objective = args.objective or "error"
    try:
        parsed = as_expression(objective)
    except SpecParseError as exc:  # its message lists the rate names
        raise CLIError(f"invalid --objective: {exc}", EXIT_USAGE) from None
    if isinstance(parsed, Ratio):
        raise CLIError(f"invalid --objective: {objective!r} is a ratio of rates, which --objective does not "
                       "minimise (it takes rates and their linear combinations, e.g. fpr + fnr); optimise "
                       "ratios with --metric", EXIT_USAGE)
    return skrate.ConstrainedClassifier(constraints=constraints or None, objective=objective,
                                        max_iter=args.max_iter, random_state=args.random_state)


def cmd_fit(args) -> int:
    import joblib

    from .model_selection._progress import Progress
    from .problem._groups import ROUTING_HINT

    constraints = _parse_constraints(args.constraint)
    estimator = _estimator(args, constraints)
    frame = _read_csv(args.data)
    groups = _columns(args.groups)
    excluded = _columns(args.exclude)
    _need_columns(frame, [args.target], args.data, "--target")
    _need_columns(frame, groups, args.data, "--groups")
    _need_columns(frame, excluded, args.data, "--exclude")
    features = [c for c in frame.columns if c != args.target and c not in excluded]
    if not features:
        raise CLIError(f"{args.data}: no feature column is left besides the target {args.target!r}")
    y = _target(frame, args.target, args.data)
    _no_empty(frame, features + groups, args.data)
    _say(args, f"skrate fit: {frame.shape[0]} rows, {len(features)} feature columns, "
               f"{len(constraints)} constraint(s), target {args.target!r}")
    bar = Progress(args.max_iter, "fit", enabled=not args.quiet)
    step = max(1, args.max_iter // 50)

    def callback(t, params, values):
        if (t + 1) % step == 0:
            bar.update(step)

    if "callback" in estimator.get_params():
        estimator.set_params(callback=callback)
    model = _pipeline(frame, features, estimator)
    try:
        with bar, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(frame[features], y, classifier__groups=_groups(frame, groups))
    except ValueError as exc:
        message = str(exc).replace(ROUTING_HINT, "")  # no Pipeline to route through here
        hint = " (list the group columns the constraints name in --groups)" if "Unknown group column" in message else ""
        raise CLIError(f"{args.data}: cannot fit: {message}{hint}") from None
    for w in caught:  # even with -q: a script must hear that the model breaks its constraints
        print(f"warning: {w.message}", file=sys.stderr)
    if "callback" in model[-1].get_params():
        model[-1].set_params(callback=None)  # a closure over the terminal; not part of the model
    payload = {"format": MODEL_FORMAT, "model": model, "target": args.target, "groups": groups,
               "features": features, "constraints": [str(c) for c in constraints],
               "classes": model.classes_.tolist()}
    try:
        joblib.dump(payload, args.out)
    except OSError as exc:
        raise CLIError(f"{args.out}: cannot write the model ({exc})", EXIT_NOINPUT) from None
    _say(args, f"wrote {args.out}")
    return 0


# -- audit and predict --------------------------------------------------------------------------
def _load(path: str) -> dict:
    import joblib

    if not Path(path).is_file():
        raise CLIError(f"{path}: no such file", EXIT_NOINPUT)
    try:
        payload = joblib.load(path)
    except Exception as exc:  # joblib raises many kinds on foreign files
        raise CLIError(f"{path}: not a model file written by 'skrate fit' ({type(exc).__name__}: {exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise CLIError(f"{path}: not a model file written by 'skrate fit'")
    return payload


def cmd_audit(args) -> int:
    from .metrics import audit
    from .metrics._report import format_audit

    payload = _load(args.model)
    frame = _read_csv(args.data)
    target = args.target or payload["target"]
    groups = _columns(args.groups) if args.groups is not None else payload["groups"]
    constraints = _parse_constraints(args.constraint) if args.constraint else payload["constraints"]
    _need_columns(frame, payload["features"], args.data, "a feature of the model")
    _need_columns(frame, [target], args.data, "the target")
    _need_columns(frame, groups, args.data, "--groups")
    y = _target(frame, target, args.data, payload["classes"])
    _no_empty(frame, payload["features"] + groups, args.data)
    try:
        report = audit(payload["model"], frame[payload["features"]], y, groups=_groups(frame, groups),
                       constraints=constraints or None, n_bootstrap=args.n_bootstrap,
                       random_state=args.random_state)
    except ValueError as exc:
        raise CLIError(f"{args.data}: cannot audit: {exc}") from None
    print(format_audit(report))
    if args.out:
        import pandas as pd

        pd.DataFrame(report).to_csv(args.out, index=False)
        _say(args, f"wrote {args.out}")
    return 0


def cmd_predict(args) -> int:
    payload = _load(args.model)
    frame = _read_csv(args.data)
    _need_columns(frame, payload["features"], args.data, "a feature of the model")
    _no_empty(frame, payload["features"], args.data)
    model = payload["model"]
    out = _pandas().DataFrame({"prediction": model.predict(frame[payload["features"]])})
    if args.proba:
        out["probability"] = model.predict_proba(frame[payload["features"]])[:, 1]
    if args.out:
        out.to_csv(args.out, index=False)
        _say(args, f"wrote {args.out} ({out.shape[0]} rows)")
    else:
        out.to_csv(sys.stdout, index=False)
    return 0


def cmd_demo(args) -> int:
    from ._demo import run_demo

    _pandas("the demo prints its audits as pandas DataFrames; it")  # before minutes of training, not after
    run_demo(figure=None if args.no_figure else args.figure, n_bootstrap=args.n_bootstrap)
    return 0


# -- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="skrate", description="Train, audit and apply classifiers whose goals are rates.",
        epilog="Exit codes: 0 success, 2 wrong command line, 65 unusable input data, 66 missing input file.")
    parser.add_argument("--version", action="version", version=f"skrate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="train and audit models on the bundled COMPAS data (the default)")
    demo.add_argument("--figure", default="skrate-demo-tradeoff.png",
                      help="where to write the trade-off figure (needs matplotlib; default: %(default)s)")
    demo.add_argument("--no-figure", action="store_true", help="do not write the figure")
    demo.add_argument("--n-bootstrap", type=int, default=200, help="bootstrap resamples of the audits")
    demo.set_defaults(func=cmd_demo)

    fit = sub.add_parser("fit", help="train a constrained classifier on a CSV file")
    fit.add_argument("data", help="CSV file with a header row")
    fit.add_argument("--target", required=True,
                     help="the binary label column; the positive class is the larger of its two values")
    fit.add_argument("--groups", help="comma-separated group columns the constraints name, e.g. race,sex")
    fit.add_argument("--constraint", action="append", default=[],
                     help='a rate constraint, e.g. "tpr[race] >= 0.95 * tpr" (repeatable)')
    fit.add_argument("--objective", help="the rate, or linear combination of rates, to minimise, e.g. "
                                          "'fpr + fnr' (default: error)")
    fit.add_argument("--metric", help="a generalized rate metric to optimise with MetricOptimizer instead, "
                                       "e.g. f1, g_mean, h_mean, q_mean, kld")
    fit.add_argument("--exclude", help="comma-separated columns that are not features (e.g. an id); "
                                        "every other column, group columns included, is a feature")
    fit.add_argument("--max-iter", type=int, default=1000, help="training iterations (default: %(default)s)")
    fit.add_argument("--random-state", type=int, default=0)
    fit.add_argument("--out", required=True, help="where to write the model (joblib)")
    fit.add_argument("-q", "--quiet", action="store_true",
                     help="no progress output; warnings (e.g. constraints the model does not meet) are still printed")
    fit.set_defaults(func=cmd_fit)

    aud = sub.add_parser("audit", help="per-group rates and constraint violations of a model on a CSV file")
    aud.add_argument("model", help="a model written by 'skrate fit'")
    aud.add_argument("data", help="CSV file with the model's features and the target")
    aud.add_argument("--target", help="the label column (default: the one the model was fitted on)")
    aud.add_argument("--groups", help="comma-separated group columns (default: the model's)")
    aud.add_argument("--constraint", action="append", default=[],
                     help="a constraint to evaluate (repeatable; default: the model's)")
    aud.add_argument("--n-bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    aud.add_argument("--random-state", type=int, default=0)
    aud.add_argument("--out", help="also write the tidy audit table to this CSV file")
    aud.add_argument("-q", "--quiet", action="store_true")
    aud.set_defaults(func=cmd_audit)

    pred = sub.add_parser("predict", help="predict labels for a CSV file")
    pred.add_argument("model", help="a model written by 'skrate fit'")
    pred.add_argument("data", help="CSV file with the model's features")
    pred.add_argument("--proba", action="store_true", help="also write the probability of predicting the positive class")
    pred.add_argument("--out", help="CSV file to write (default: standard output)")
    pred.add_argument("-q", "--quiet", action="store_true")
    pred.set_defaults(func=cmd_predict)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``skrate`` command; returns its exit code. No arguments runs the demo."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv or ["demo"])
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    for name in ("max_iter", "n_bootstrap"):
        if getattr(args, name, 1) < (1 if name == "max_iter" else 0):
            parser.error(f"--{name.replace('_', '-')} must be {'positive' if name == 'max_iter' else '>= 0'}")
    try:
        return args.func(args)
    except CLIError as exc:
        print(f"skrate {args.command}: error: {exc}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`): not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
