"""The ``skrate`` command: demo, fit, audit and predict on CSV files.

Exit codes: 0 success; 2 a wrong command line (including an unparseable or meaningless
``--constraint``, ``--objective`` or ``--metric``, a rate that needs a baseline model, an
``--id`` that an output column would overwrite, and an output path that cannot be written);
65 the input data is unusable (missing column, non-binary target, empty values, a word in a
numeric column, constraints that do not fit the data); 66 an input file is missing or
unreadable; 73 an output file (or standard output) could not be written after all.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import sys
import warnings

import numpy as np

from ._cli_csv import (EXIT_CANTCREAT, EXIT_USAGE, PIPED, STDIO, CLIError, categorical_features, check_writable,
                       existing_file, line_of, model_input, need_columns, no_empty_cells, read_csv, require_pandas,
                       target_01, target_classes, writing)

# /3: categorical features are read as written ("01" and "1" are two categories); /2 read them as
# whole numbers where they were numbers, and is read so still. /2: the model is trained on y as 0/1,
# "classes" is [negative, positive] (as the file writes them; earlier /3 files may hold the
# numbers read) and "categorical" lists the one-hot encoded features; /1 files
# (trained on the labels themselves) still load
MODEL_FORMAT, OLD_FORMATS = "skrate-model/3", ("skrate-model/2", "skrate-model/1")


class _ReaderMayLeave:
    """A standard stream whose reader may go away (``skrate fit ... 2>&1 | head -1``): after a
    broken pipe the rest of its output is dropped, so the command still finishes its work (a
    model nobody watches being trained must still be written). Any other failure to write
    (a full disk behind ``> predictions.csv``) is the output file's that could not be written:
    a :class:`CLIError` with exit 73 when the stream is ``fatal`` (standard output), dropped
    otherwise (standard error, which reports it)."""

    def __init__(self, stream, fatal: bool = False):
        self._stream, self._gone, self._fatal = stream, False, fatal

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _guard(self, method, *args) -> None:
        if self._gone:
            return
        try:
            method(*args)
        except OSError as exc:
            self._gone = True
            # what Python still holds buffered goes to /dev/null at exit instead of failing again
            with contextlib.suppress(OSError, ValueError):  # a stream without a file descriptor
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._stream.fileno())
                os.close(null)
            if self._fatal and not isinstance(exc, BrokenPipeError):
                raise CLIError(f"standard output: cannot write ({exc.strerror or exc})",
                               EXIT_CANTCREAT) from None

    def write(self, text: str) -> int:
        self._guard(self._stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._guard(self._stream.flush)


@contextlib.contextmanager
def _streams_may_close():
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayLeave(sys.stdout, fatal=True), _ReaderMayLeave(sys.stderr)
    try:
        yield
    finally:
        sys.stdout.flush()  # a buffered write to a closed pipe fails here, not at exit
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved


def _say(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr)


# Library messages give Python API advice; on the command line the same advice reads differently.
_CLI_WORDS = [
    (r"no groups were given: pass groups=\.\.\. as a DataFrame, a dict of arrays or a 1-D array \(the column "
     r"'group'\)", "no --groups were given: list the group columns the constraints name in --groups"),
    (r"no groups were given, and X's columns (.*?) do not include it: pass groups=\.\.\. as a DataFrame, a dict "
     r"of arrays or a 1-D array \(the column 'group'\), or add the column to X",
     r"no --groups were given, and the feature columns \1 do not include it"),
    (r" X reached the estimator as an array, whose columns have no names:.*?\)\)\.", ""),  # here it always does
    (r"filter on a value with \w+\(where=\{[^}]*\}\) or ", "filter on a value with "),
    (r" \(fit_report_ lists each constraint's margin and violation on each part\)", " ('skrate audit' lists each constraint)"),
    (r", train longer \(max_iter\) or with a larger model(, or choose the \w+ solution, which meets them)?",
     " or train longer (--max-iter)"),
    (r"\(max_iter\)", "(--max-iter)"),
    (r"constraints go in constraints=", "constraints go in --constraint"),
    (r"such as precision\(\) for quotients", "such as precision for quotients"),
    (r", a metric such as skrate\.generalized\.f_measure\(beta=2\),", " (f2: the F-measure with beta 2),"),
    (r"build it with skrate\.generalized\.(\w+)\(.*?\) \(any rate expressions\) and pass that as the metric",
     r"the skrate command cannot build it; use \1 of the Python API"),
]


@functools.cache
def _baseline_names() -> tuple[str, ...]:
    """The rate and metric names that need a baseline model's decisions, which the command line
    has no input for: its messages do not offer them."""
    from .generalized._names import METRICS
    from .rates._functions import RATE_FUNCTIONS

    rates = [n for n, make in RATE_FUNCTIONS.items() if any(r.needs_baseline for r in make().rates)]
    return tuple(rates + [n for n, make in METRICS.items() if n not in RATE_FUNCTIONS
                          and any(r.needs_baseline for r in _metric_rates(make()))])


def _cli_text(exc) -> str:
    """A library error or warning in command-line words."""
    from .problem._groups import ROUTING_HINT

    text = str(exc).replace(ROUTING_HINT, "")  # no Pipeline routes the groups here
    for python, cli in _CLI_WORDS:
        text = re.sub(python, cli, text)
    if "Unknown group column" in text and "--groups" not in text:
        text += " (list the group columns the constraints name in --groups)"
    return _without_baseline_names(text)


def _without_baseline_names(text: str) -> str:
    """``text`` without the names that need a baseline in its lists of names ("among ['a', 'b']",
    "(one of a, b)") and suggestions ("(did you mean 'churn'?)"); the user's spec stays as written."""
    names = _baseline_names()

    def listed(match):
        items = [item for item in match.group(2).split(", ") if item.strip("'") not in names]
        return match.group(1) + ", ".join(items) + match.group(3)

    text = re.sub(r"(among \[)([^\]]*)(\])", listed, text)
    text = re.sub(r"(\(one of )([^)]*)(\))", listed, text)
    return re.sub(r" \(did you mean '(\w+)'\?\)", lambda m: "" if m.group(1) in names else m.group(0), text)


@contextlib.contextmanager
def _warnings_to_stderr():
    """Library warnings as ``warning:`` lines, once each and even with -q: a script must hear that
    a model breaks its constraints."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for text in dict.fromkeys(_cli_text(w.message) for w in caught):
                print(f"warning: {text}", file=sys.stderr)


def _int_in(low: int, high: int | None = None):
    """An argparse type: an integer from ``low`` to ``high``, else the subcommand's usage error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f">= {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"must be an integer {span}, got {value}")
        return value
    return parse


def _columns(text: str | None, option: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()] if text else []
    twice = sorted({c for c in names if names.count(c) > 1})
    if twice:
        raise CLIError(f"{option} names {', '.join(map(repr, twice))} more than once", EXIT_USAGE)
    return names


def _parse_constraints(texts: list[str]):
    from .rates import as_constraints

    try:
        constraints = as_constraints(list(texts))
    except ValueError as exc:  # SpecParseError: its message points at the position
        raise CLIError(f"invalid --constraint: {_cli_text(exc)}", EXIT_USAGE) from None
    _refuse_baseline([r for c in constraints for r in c.rates], "--constraint")
    return constraints


def _refuse_baseline(rates, option: str) -> None:
    """The command line has no input for a baseline model's decisions: refuse the rates that need
    them before the data is read, rather than let the library ask for baseline=."""
    for rate in rates:
        if rate.needs_baseline:
            raise CLIError(f"invalid {option}: the rate {rate} compares the model with a baseline model's "
                           "decisions, which the skrate command has no input for; use the Python API "
                           "(fit(..., baseline=...))", EXIT_USAGE)


def _groups(frame, names: list[str]):
    # as read: the groups layer names a 0.0/1.0 column's groups 0 and 1, as for an int column
    return frame[names] if names else None


# -- fit ------------------------------------------------------------------------------------------
def _pipeline(features: list[str], categorical: list[str], estimator):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    prep = ColumnTransformer([
        ("numeric", StandardScaler(), [c for c in features if c not in categorical]),
        ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical),
    ])
    # arrays, sparse where the one-hot columns make it so, in a session that asks scikit-learn
    # for pandas output too (a model file loaded in a notebook)
    prep.set_output(transform="default")
    return Pipeline([("prepare", prep), ("classifier", estimator)])


def _metric_rates(metric) -> list:
    """The rates a --metric measures. pr_auc is no sum of atoms (it stacks one score at several
    thresholds) and measures only the model's precision and recall."""
    from .generalized._pr_auc import PRAUC

    if isinstance(metric, PRAUC):
        return []
    return [r for _, atom in metric.as_sum().terms for e in atom.exprs for r in e.rates]


def _estimator(args, constraints):
    """The estimator the command line asks for; a wrong --objective or --metric is refused here,
    before the data is read."""
    import skrate
    from ._metric_optimizer import _as_loss
    from .generalized._names import as_metric, refuse_score
    from .generalized._pr_auc import PRAUC
    from .rates import Ratio, as_expression

    if args.metric is not None:
        if args.objective is not None:
            raise CLIError("give either --metric or --objective, not both", EXIT_USAGE)
        try:
            metric = _as_loss(args.metric)
        except ValueError as exc:  # its message lists the metric names, or names the loss of a score
            raise CLIError(f"invalid --metric: {_cli_text(exc)}", EXIT_USAGE) from None
        _refuse_baseline(_metric_rates(metric), "--metric")
        if constraints and isinstance(metric, PRAUC):  # one score stacked at several thresholds
            raise CLIError(f"invalid --metric: {args.metric} is optimised alone, with no --constraint; "
                           "drop the constraints, or choose another metric", EXIT_USAGE)
        return skrate.MetricOptimizer(metric=args.metric, constraints=constraints or None, max_iter=args.max_iter,
                         random_state=args.random_state)
    objective = "error" if args.objective is None else args.objective
    try:
        parsed = as_expression(objective)
    except ValueError as exc:  # SpecParseError: its message lists the rate names, or says what is wrong where
        raise CLIError(f"invalid --objective: {_cli_text(exc)}", EXIT_USAGE) from None
    if isinstance(parsed, Ratio):
        raise CLIError(f"invalid --objective: {objective!r} is a ratio of rates; --objective takes rates and "
                       "their linear combinations, e.g. fpr + fnr. --metric takes ratios but also minimises "
                       "them: give it a loss, a ratio that is lower when better (e.g. 'fpr / tpr'), or a "
                       "metric name such as f1 or precision, which stand for their losses", EXIT_USAGE)
    _refuse_baseline(parsed.rates, "--objective")
    spread = sorted({k for r in parsed.rates for k in r.slice.expand})
    if spread:
        raise CLIError(f"invalid --objective: {objective!r} expands over the group column "
                       f"{', '.join(spread)}, which a single objective cannot; name a value (e.g. "
                       f"{spread[0]}=<value>), or constrain every value with --constraint", EXIT_USAGE)
    try:
        refuse_score(objective, as_metric(parsed), "skrate fit minimises its --objective")
    except ValueError as exc:  # names the score's loss
        raise CLIError(f"invalid --objective: {_cli_text(exc)}", EXIT_USAGE) from None
    return skrate.ConstrainedClassifier(constraints=constraints or None, objective=objective,
                                        max_iter=args.max_iter, random_state=args.random_state)


def cmd_fit(args) -> int:
    import joblib

    from .model_selection._progress import Progress

    constraints = _parse_constraints(args.constraint)
    estimator = _estimator(args, constraints)
    groups = _columns(args.groups, "--groups")
    excluded = _columns(args.exclude, "--exclude")
    declared = _columns(args.categorical, "--categorical")
    if args.out == STDIO:
        raise CLIError("--out -: a model is a binary file; name the file to write it to", EXIT_USAGE)
    check_writable(args.out, "--out", (args.data,))
    frame, written = read_csv(args.data)
    need_columns(frame, [args.target], args.data, "--target")
    for names, option in ((groups, "--groups"), (excluded, "--exclude"), (declared, "--categorical")):
        need_columns(frame, names, args.data, option)
    features = [c for c in frame.columns if c != args.target and c not in excluded]
    if not features:
        raise CLIError(f"{args.data}: no feature column is left besides the target {args.target!r}")
    for col in declared:
        if col not in features:  # an option that would change nothing is a mistake said
            role = "the target" if col == args.target else "excluded by --exclude"
            raise CLIError(f"--categorical {col}: that column is {role}, not a feature", EXIT_USAGE)
    no_empty_cells(frame, [args.target] + features + groups, args.data)
    classes = target_classes(frame, args.target, args.data, args.positive_class)
    y = target_01(frame, args.target, args.data, classes)
    # as the file writes them, so that predict writes them back so: a class 02 stays 02, not 2
    classes = [written[args.target][frame[args.target] == c].iloc[0] for c in classes]
    categorical = categorical_features(frame, features, declared)
    X = model_input(frame, written, features, categorical, args.data,
                     "fix or drop those rows, or pass --categorical {col} if the column holds categories")
    _say(args, f"skrate fit: {frame.shape[0]} rows, {len(features)} feature columns ({len(categorical)} "
               f"one-hot encoded), {len(constraints)} constraint(s), target {args.target!r} with positive "
               f"class {classes[1]!r}")
    bar = Progress(args.max_iter, "fit", enabled=not args.quiet)
    step, played = max(1, args.max_iter // 50), [0]

    def callback(t, params, values):
        played[0] = t + 1
        if played[0] % step == 0:
            bar.update(played[0] - bar.done)

    if "callback" in estimator.get_params():
        estimator.set_params(callback=callback)
    model = _pipeline(features, categorical, estimator)
    try:
        with _warnings_to_stderr(), bar:  # the bar ends its line before the warnings print
            model.fit(X, y, classifier__groups=_groups(frame, groups))
            bar.update(played[0] - bar.done)  # a solver that converges early stops short of --max-iter
    except ValueError as exc:
        raise CLIError(f"{args.data}: cannot fit: {_cli_text(exc)}") from None
    if 0 < played[0] < args.max_iter:
        _say(args, f"converged after {played[0]} of {args.max_iter} iterations")
    if "callback" in model[-1].get_params():
        model[-1].set_params(callback=None)  # a closure over the terminal; not part of the model
    payload = {"format": MODEL_FORMAT, "model": model, "target": args.target, "groups": groups,
               "features": features, "categorical": categorical, "constraints": [str(c) for c in constraints],
               "classes": classes}
    with writing(args.out):
        joblib.dump(payload, args.out)
    _say(args, f"wrote {args.out}")
    return 0


# -- audit and predict --------------------------------------------------------------------------
def _load(path: str) -> dict:
    import joblib

    if path == STDIO:
        raise CLIError("the model cannot come from standard input (- is for the data); name its file", EXIT_USAGE)
    existing_file(path)
    try:
        payload = joblib.load(path)
    except Exception as exc:  # joblib raises many kinds on foreign files
        raise CLIError(f"{path}: not a model file written by 'skrate fit' ({type(exc).__name__}: {exc})") from None
    if not isinstance(payload, dict) or payload.get("format") not in (MODEL_FORMAT, *OLD_FORMATS):
        raise CLIError(f"{path}: not a model file written by 'skrate fit'")
    if "categorical" not in payload:  # /1 kept the split only in the pipeline
        split = {name: columns for name, _, columns in payload["model"].named_steps["prepare"].transformers_}
        payload["categorical"] = split["categorical"]
    return payload


def _data_for(payload: dict, data: str, needed: dict[str, list[str]], text: tuple[str, ...] = ()):
    """The CSV file ``data`` and the model's input from it; the columns of ``needed`` (by role) must be
    there and filled, as the features must. The columns ``text`` are read as written."""
    frame, written = read_csv(data, text)
    features = payload["features"]
    for role, columns in {"a feature of the model": features, **needed}.items():
        need_columns(frame, columns, data, role)
    no_empty_cells(frame, [c for columns in needed.values() for c in columns] + features, data)
    X = model_input(frame, written if payload["format"] == MODEL_FORMAT else None, features,
                     payload["categorical"], data,
                     "the model was trained on numbers in this column; fix or drop those rows")
    _warn_unseen(payload, X, data)
    return frame, X


def _warn_unseen(payload: dict, X, data: str) -> None:
    """Warn of category values the model never saw in training: it encodes them as none of its
    categories, which is right for a rare new value and wrong for a column coded anew (sex as 0/1)."""
    if not payload["categorical"]:
        return
    from .utils._categories import unseen_rows
    from .utils._warnings import listed

    encoder = payload["model"].named_steps["prepare"].named_transformers_["categorical"]
    onehot = encoder.transform(X[payload["categorical"]])
    for index, unseen in unseen_rows(onehot, encoder.categories_):
        col, known = payload["categorical"][index], encoder.categories_[index]
        values = sorted({str(v) for v in X[col].to_numpy()[unseen]})
        print(f"warning: {data}: column {col!r} holds value(s) the model never saw in training, {listed(values, 5)}, "
              f"in {int(unseen.sum())} row(s), the first on {line_of(data, int(np.argmax(unseen)))}; "
              f"the model reads them as none of its categories {listed(known, 5)}", file=sys.stderr)


def cmd_audit(args) -> int:
    from .metrics import audit
    from .metrics._report import format_audit

    constraints = _parse_constraints(args.constraint)  # a wrong command line before any file is read
    groups = _columns(args.groups, "--groups") if args.groups is not None else None
    if args.out == STDIO:
        raise CLIError("--out -: the audit itself goes to standard output; name a file for the tidy table",
                       EXIT_USAGE)
    if args.out:
        check_writable(args.out, "--out", (args.model, args.data))
    payload = _load(args.model)
    target = args.target or payload["target"]
    groups = payload["groups"] if groups is None else groups
    frame, X = _data_for(payload, args.data, {"the target": [target], "--groups": groups})
    model = payload["model"]
    y = np.asarray(model.classes_)[target_01(frame, target, args.data, payload["classes"])]  # 0/1 for /2 models
    try:
        with _warnings_to_stderr():
            report = audit(model, X, y, groups=_groups(frame, groups),
                           constraints=constraints or payload["constraints"] or None,
                           n_bootstrap=args.n_bootstrap, random_state=args.random_state)
    except ValueError as exc:
        raise CLIError(f"{args.data}: cannot audit: {_cli_text(exc)}") from None
    if args.out:  # before the report: a reader of the report that goes away must not cost the file
        with writing(args.out):
            require_pandas().DataFrame(report).to_csv(args.out, index=False)
        _say(args, f"wrote {args.out}")
    print(f"Positive class: {target} = {payload['classes'][1]!r}")
    print(format_audit(report))
    return 0


def cmd_predict(args) -> int:
    if args.out == STDIO:
        args.out = None  # standard output, as without --out
    if args.out:
        check_writable(args.out, "--out", (args.model, args.data))
    payload = _load(args.model)
    model, (negative, positive) = payload["model"], payload["classes"]
    prediction, probability = "prediction", f"probability_{positive}"
    if args.id in ([prediction, probability] if args.proba else [prediction]):  # would overwrite the ids
        raise CLIError(f"--id {args.id}: predict writes a column {args.id!r} of its own, which would overwrite "
                       f"the ids; rename that column of {args.data} and pass its new name to --id", EXIT_USAGE)
    frame, X = _data_for(payload, args.data, {}, (args.id,) if args.id else ())
    if args.id:  # copied as written: it may have empty cells
        need_columns(frame, [args.id], args.data, "--id")
    out = require_pandas().DataFrame({args.id: frame[args.id]} if args.id else {})
    try:
        out[prediction] = np.where(model.predict(X) == model.classes_[1], positive, negative)
        if args.proba:
            out[probability] = model.predict_proba(X)[:, 1]
    except ValueError as exc:
        raise CLIError(f"{args.data}: cannot predict: {_cli_text(exc)}") from None
    if args.out:
        with writing(args.out):
            out.to_csv(args.out, index=False)
        _say(args, f"wrote {args.out} ({out.shape[0]} rows)")
    else:
        out.to_csv(sys.stdout, index=False)
    return 0


def cmd_demo(args) -> int:
    from ._demo import figure_file, run_demo

    require_pandas("the demo prints its audits as pandas DataFrames; it")  # before minutes of training, not after
    figure = None if args.no_figure else args.figure
    if figure is not None:
        try:
            figure = figure_file(figure)
        except ValueError as exc:
            raise CLIError(f"--figure {args.figure}: {exc}", EXIT_USAGE) from None
        check_writable(figure, "--figure")
    run_demo(figure=figure, n_bootstrap=args.n_bootstrap)
    return 0


# -- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    # no abbreviated options: "--obj -tpr" would escape _join_spec_values
    parser = argparse.ArgumentParser(
        prog="skrate", allow_abbrev=False, description="Train, audit and apply classifiers whose goals are rates.",
        epilog="Exit codes: 0 success, 2 wrong command line, 65 unusable input data, 66 missing input file, "
               "73 an output file could not be written.")
    parser.add_argument("--version", action="version", version=f"skrate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, **kwargs) -> argparse.ArgumentParser:
        return sub.add_parser(name, allow_abbrev=False, **kwargs)

    seed = {"type": _int_in(0, 2 ** 32 - 1), "default": 0, "help": "seed of the randomness (default: %(default)s)"}

    demo = command("demo", help="train and audit models on the bundled COMPAS data (the default)")
    demo.add_argument("--figure", default="skrate-demo-tradeoff.png",
                      help="where to write the trade-off figure (needs matplotlib; the extension names the "
                           "format, .png when there is none; default: %(default)s)")
    demo.add_argument("--no-figure", action="store_true", help="do not write the figure")
    demo.add_argument("--n-bootstrap", type=_int_in(0), default=200,
                      help="bootstrap resamples of the audits (default: %(default)s)")
    demo.set_defaults(func=cmd_demo)

    fit = command("fit", help="train a constrained classifier on a CSV file")
    fit.add_argument("data", help="CSV file (UTF-8) with a header row; - reads standard input")
    fit.add_argument("--target", type=str.strip, required=True, help="the binary label column")
    fit.add_argument("--positive-class", metavar="VALUE",
                     help="the target value that rates count as positive (tpr, ppr, ...) and --proba gives "
                          "the probability of; default: the larger of the two values: 1 of 0/1, yes of no/yes, "
                          "but no of Yes/no (upper case sorts first)")
    fit.add_argument("--groups", help="comma-separated group columns the constraints name, e.g. race,sex")
    fit.add_argument("--constraint", action="append", default=[],
                     help='a rate constraint, e.g. "tpr[race] >= 0.95 * tpr" (repeatable)')
    fit.add_argument("--objective", help="the rate, or linear combination of rates, to minimise, e.g. "
                                          "'fpr + fnr' or -tpr (default: error)")
    fit.add_argument("--metric", help="a loss to minimise with MetricOptimizer instead: a metric name (f1, "
                                       "f<beta> such as f2, g_mean, h_mean, q_mean, kld, precision, pr_auc; each "
                                       "stands for its loss, so f1 trains for a high F1; pr_auc takes no "
                                       "--constraint) or a rate expression, minimised as written, e.g. 'fpr / tpr'")
    fit.add_argument("--exclude", help="comma-separated columns that are not features (e.g. an id); "
                                        "every other column, group columns included, is a feature")
    fit.add_argument("--categorical", help="comma-separated feature columns to one-hot encode although they "
                                            "hold numbers (e.g. a zip code); text columns always are, numeric "
                                            "ones are standardized")
    fit.add_argument("--max-iter", type=_int_in(1), default=1000, help="training iterations (default: %(default)s)")
    fit.add_argument("--random-state", **seed)
    fit.add_argument("--out", required=True, help="where to write the model (joblib)")
    fit.add_argument("-q", "--quiet", action="store_true",
                     help="no progress output; warnings (e.g. constraints the model does not meet) are still printed")
    fit.set_defaults(func=cmd_fit)

    aud = command("audit", help="per-group rates and constraint violations of a model on a CSV file")
    aud.add_argument("model", help="a model written by 'skrate fit'")
    aud.add_argument("data", help="CSV file with the model's features and the target; - reads standard input")
    aud.add_argument("--target", type=str.strip, help="the label column (default: the one the model was fitted on)")
    aud.add_argument("--groups", help="comma-separated group columns (default: the model's)")
    aud.add_argument("--constraint", action="append", default=[],
                     help="a constraint to evaluate (repeatable; default: the model's)")
    aud.add_argument("--n-bootstrap", type=_int_in(0), default=1000,
                     help="bootstrap resamples (0: no intervals; default: %(default)s)")
    aud.add_argument("--random-state", **seed)
    aud.add_argument("--out", help="also write the tidy audit table to this CSV file")
    aud.add_argument("-q", "--quiet", action="store_true",
                     help="no 'wrote' line; warnings are still printed")
    aud.set_defaults(func=cmd_audit)

    pred = command("predict", help="predict labels for a CSV file")
    pred.add_argument("model", help="a model written by 'skrate fit'")
    pred.add_argument("data", help="CSV file with the model's features; - reads standard input")
    pred.add_argument("--proba", action="store_true",
                      help="also write the probability of predicting the positive class, in the column "
                           "probability_<positive class>")
    pred.add_argument("--id", type=str.strip, metavar="COLUMN",
                      help="copy this column (e.g. a row id) into the predictions")
    pred.add_argument("--out", help="CSV file to write (default, or -: standard output)")
    pred.add_argument("-q", "--quiet", action="store_true",
                      help="no 'wrote' line; warnings are still printed")
    pred.set_defaults(func=cmd_predict)
    return parser


# options whose value is a rate spec, which may start with '-' (--objective -tpr)
SPEC_OPTIONS = ("--constraint", "--objective", "--metric")


def _join_spec_values(argv: list[str]) -> list[str]:
    """``--objective -tpr`` as ``--objective=-tpr``: argparse takes a value that starts with '-' for
    an option and stops with "expected one argument". A value shaped like one of the command's
    options, ``-q`` or ``--out``, is left alone, for that error (``--objective --out m.joblib``)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--":  # the rest is positional
            return out + argv[i:]
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if argv[i] in SPEC_OPTIONS and value.startswith("-") and len(value) > 2 and not value.startswith("--"):
            out.append(f"{argv[i]}={value}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the ``skrate`` command; returns its exit code. No arguments runs the demo."""
    argv = sys.argv[1:] if argv is None else list(argv)
    PIPED.clear()  # a pipe of an earlier call (tests call main repeatedly) is not this one's
    with _streams_may_close():  # a closed output stream costs its output, never the work
        parser = build_parser()
        args = parser.parse_args(_join_spec_values(argv) or ["demo"])
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        try:
            code = args.func(args)
            sys.stdout.flush()  # a write that fails is reported here, not at exit
            return code
        except CLIError as exc:
            print(f"skrate {args.command}: error: {exc}", file=sys.stderr)
            return exc.code
