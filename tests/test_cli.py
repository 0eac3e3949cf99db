"""The skrate command end to end, through subprocesses, including bad input files."""

import io
import os
import re
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest

import skrate
from skrate.datasets import load_compas

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
TARGET = "two_year_recid"


def run(*args, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "skrate", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=300, **kw)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    frame = load_compas(as_frame=True).frame.iloc[:1200]
    frame.to_csv(folder / "data.csv", index=False)
    frame.drop(columns=["race"]).to_csv(folder / "norace.csv", index=False)
    multi = frame.copy()
    multi[TARGET] = multi["age"].astype(int) % 3
    multi.to_csv(folder / "multi.csv", index=False)
    holes = frame.copy()
    holes.loc[6, "sex"] = None
    holes.to_csv(folder / "holes.csv", index=False)
    (folder / "empty.csv").write_text("")
    coded = frame.assign(young=(frame["age"] < 30).astype(int))
    coded.to_csv(folder / "young_int.csv", index=False)
    coded.assign(young=coded["young"].astype(float)).to_csv(folder / "young_float.csv", index=False)  # 0.0/1.0
    return folder


@pytest.fixture(scope="module")
def fitted(files):
    res = run("fit", "data.csv", "--target", TARGET, "--groups", "race,sex", "--constraint",
              "tpr[race] >= 0.95 * tpr", "--max-iter", 300, "--out", "model.joblib", cwd=files)
    assert res.returncode == 0, res.stderr
    return res


def test_fit_writes_a_model_meeting_its_constraint(files, fitted):
    assert "fit [" in fitted.stderr and "wrote model.joblib" in fitted.stderr
    payload = joblib.load(files / "model.joblib")
    assert payload["target"] == TARGET and payload["groups"] == ["race", "sex"]
    assert payload["constraints"] == ["tpr[race] >= 0.95 * tpr"]
    model = payload["model"]
    assert model[-1].callback is None and model[-1].feasible_
    frame = pd.read_csv(files / "data.csv")
    report = model[-1].constraint_report(model[:-1].transform(frame[payload["features"]]), frame[TARGET],
                                         groups=frame[["race", "sex"]])
    assert report["violation"].iloc[:-1].max() <= 1e-3


def test_audit_prints_the_tables_and_writes_the_tidy_csv(files, fitted):
    res = run("audit", "model.joblib", "data.csv", "--n-bootstrap", 50, "--out", "audit.csv", cwd=files)
    assert res.returncode == 0, res.stderr
    for piece in ("Audit of Pipeline on 1200 rows", "race=African-American", "sex=Female",
                  "tpr[race=Caucasian] >= 0.95 * tpr", "50 resamples"):
        assert piece in res.stdout
    tidy = pd.read_csv(files / "audit.csv")
    assert {"attribute", "group", "metric", "value", "value_low", "violation"} <= set(tidy.columns)
    assert (tidy["attribute"] == "constraint").sum() == 2
    other = run("audit", "model.joblib", "data.csv", "--groups", "sex", "--constraint", "ppr[sex] >= ppr - 0.5",
                "--n-bootstrap", 0, cwd=files)
    assert other.returncode == 0, other.stderr
    assert "race=" not in other.stdout and "ppr[sex=Male] >= ppr - 0.5" in other.stdout


def test_predict_writes_one_row_per_input_row(files, fitted):
    res = run("predict", "model.joblib", "data.csv", "--proba", cwd=files)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0] == "prediction,probability_1" and len(lines) == 1201
    ok = run("predict", "model.joblib", "data.csv", "--out", "pred.csv", "-q", cwd=files)
    assert ok.returncode == 0 and ok.stderr == ""
    pred = pd.read_csv(files / "pred.csv")
    payload = joblib.load(files / "model.joblib")
    frame = pd.read_csv(files / "data.csv")
    np.testing.assert_array_equal(pred["prediction"], payload["model"].predict(frame[payload["features"]]))



def test_a_model_file_predicts_in_a_session_that_asks_for_pandas_output(files, fitted):
    # its one-hot columns are sparse, which scikit-learn's pandas output refuses
    import sklearn

    payload = joblib.load(files / "model.joblib")
    frame = pd.read_csv(files / "data.csv")[payload["features"]]
    expected = payload["model"].predict_proba(frame)
    with sklearn.config_context(transform_output="pandas"):
        np.testing.assert_array_equal(payload["model"].predict_proba(frame), expected)

BAD = [
    (["fit", "norace.csv", "--target", TARGET, "--groups", "race", "--out", "m.joblib"], 65,
     "norace.csv: no column 'race' (--groups); the file's columns are age"),
    (["fit", "data.csv", "--target", "label", "--out", "m.joblib"], 65, "no column 'label' (--target)"),
    (["fit", "multi.csv", "--target", TARGET, "--out", "m.joblib"], 65,
     "target column 'two_year_recid' has 3 distinct value(s) (0, 1, 2)"),
    (["fit", "holes.csv", "--target", TARGET, "--out", "m.joblib"], 65,
     "column 'sex' has 1 empty value(s), the first on line 8"),
    (["fit", "empty.csv", "--target", TARGET, "--out", "m.joblib"], 65, "empty.csv: not a readable CSV file"),
    (["fit", "missing.csv", "--target", TARGET, "--out", "m.joblib"], 66, "missing.csv: no such file"),
    (["fit", "data.csv", "--target", TARGET, "--constraint", "tpr[race >= tpr", "--out", "m.joblib"], 2,
     "invalid --constraint: Cannot parse 'tpr[race >= tpr'"),
    (["fit", "data.csv", "--target", TARGET, "--groups", "sex", "--constraint", "tpr[race] >= tpr", "--out",
      "m.joblib"], 65, "Unknown group column 'race'; known group columns: 'sex'. (list the group columns"),
    (["audit", "data.csv", "data.csv"], 65, "data.csv: not a model file written by 'skrate fit'"),
    (["audit", "model.joblib", "multi.csv"], 65, "holds [2] that the model never saw"),
    (["fit", "data.csv", "--out", "m.joblib"], 2, "the following arguments are required: --target"),
    (["fit", "data.csv", "--target", TARGET, "--max-iter", "0", "--out", "m.joblib"], 2,
     "skrate fit: error: argument --max-iter: must be an integer >= 1, got 0"),
    (["fit", "missing.csv", "--target", TARGET, "--random-state", "-1", "--out", "m.joblib"], 2,
     "skrate fit: error: argument --random-state: must be an integer from 0 to 4294967295, got -1"),
    (["audit", "model.joblib", "data.csv", "--n-bootstrap", "-1"], 2,
     "skrate audit: error: argument --n-bootstrap: must be an integer >= 0, got -1"),
    (["fit", "missing.csv", "--target", TARGET, "--groups", "race,sex,race", "--out", "m.joblib"], 2,
     "--groups names 'race' more than once"),
    (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    (["predict", "model.joblib", "norace.csv"], 65, "norace.csv: no column 'race' (a feature of the model)"),
    # a wrong --objective or --metric is refused before the file is read (missing.csv would exit 66)
    (["fit", "missing.csv", "--target", TARGET, "--objective", "foo", "--out", "m.joblib"], 2,
     "invalid --objective: Cannot parse 'foo': expected a rate name (one of accuracy,"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "tpr / fpr", "--out", "m.joblib"], 2,
     "invalid --objective: 'tpr / fpr' is a ratio of rates"),
    (["fit", "missing.csv", "--target", TARGET, "--metric", "foo", "--out", "m.joblib"], 2,
     "invalid --metric: Unknown metric 'foo': give a name among ['error', 'f1',"),
    (["fit", "missing.csv", "--target", TARGET, "--metric", "f1", "--objective", "error", "--out", "m.joblib"], 2,
     "give either --metric or --objective, not both"),
    (["fit", "missing.csv", "--target", TARGET, "--metric", "tpr / fpr", "--out", "m.joblib"], 2,
     "invalid --metric: MetricOptimizer minimises its metric, and 'tpr / fpr' is a score"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "accuracy", "--out", "m.joblib"], 2,
     "invalid --objective: skrate fit minimises its --objective, and 'accuracy' is a score (higher is better): "
     "minimising it gives the worst classifier. Pass the loss 'error_rate' instead."),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "tpr[race]", "--out", "m.joblib"], 2,
     "invalid --objective: 'tpr[race]' expands over the group column race"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "", "--out", "m.joblib"], 2,
     "invalid --objective: Cannot parse ''"),
    (["fit", "missing.csv", "--target", TARGET, "--metric", "pr_auc", "--constraint", "ppr >= 0.1", "--out",
      "m.joblib"], 2, "invalid --metric: pr_auc is optimised alone, with no --constraint"),
    # the command line has no input for a baseline model's decisions
    (["fit", "missing.csv", "--target", TARGET, "--objective", "churn", "--out", "m.joblib"], 2,
     "invalid --objective: the rate churn compares the model with a baseline model's decisions, which the "
     "skrate command has no input for"),
    (["fit", "missing.csv", "--target", TARGET, "--metric", "win_loss_ratio", "--out", "m.joblib"], 2,
     "invalid --metric: the rate wins compares the model with a baseline"),
    (["audit", "missing.joblib", "missing.csv", "--constraint", "ppr[baseline=1] <= 0.5"], 2,
     "invalid --constraint: the rate ppr[baseline=1] compares"),
    # specs that parse but mean nothing valid are refused the same way, pointing at the position
    (["fit", "missing.csv", "--target", TARGET, "--constraint", "0.8 * ppr <= ppr[race] <= 1.25 * ppr", "--out",
      "m.joblib"], 2, "invalid --constraint: Invalid spec '0.8 * ppr <= ppr[race] <= 1.25 * ppr' (near position 23)"),
    (["fit", "missing.csv", "--target", TARGET, "--constraint", "tpr * fpr >= 0.1", "--out", "m.joblib"], 2,
     "invalid --constraint: Invalid spec 'tpr * fpr >= 0.1' (near position 4): Cannot multiply tpr by fpr"),
    (["fit", "missing.csv", "--target", TARGET, "--constraint", "ppr / 0 >= 1", "--out", "m.joblib"], 2,
     "(near position 6): division by zero"),
    (["fit", "missing.csv", "--target", TARGET, "--constraint", "precision >= ppr", "--out", "m.joblib"], 2,
     "invalid --constraint: Invalid spec 'precision >= ppr'"),
    (["fit", "missing.csv", "--target", TARGET, "--constraint", "ppr >= 1e400", "--out", "m.joblib"], 2,
     "1e400 overflows a float"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "ppr >= 0.5", "--out", "m.joblib"], 2,
     "invalid --objective: Invalid spec 'ppr >= 0.5' (near position 4): this is a constraint, not an expression: "
     "constraints go in --constraint"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "tpr * fpr", "--out", "m.joblib"], 2,
     "invalid --objective: Invalid spec 'tpr * fpr' (near position 4)"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "ppr / 0", "--out", "m.joblib"], 2,
     "invalid --objective: Invalid spec 'ppr / 0' (near position 6): division by zero"),
    (["audit", "missing.joblib", "missing.csv", "--constraint", "0.8 * ppr <= ppr[race] <= 1.25 * ppr"], 2,
     "invalid --constraint: Invalid spec '0.8 * ppr <= ppr[race] <= 1.25 * ppr'"),
    # a value starting with '-' is the option's value, unless it is shaped like an option itself
    (["fit", "missing.csv", "--target", TARGET, "--objective", "--out", "m.joblib"], 2,
     "argument --objective: expected one argument"),
    (["fit", "missing.csv", "--target", TARGET, "--objective", "-tpr * fpr", "--out", "m.joblib"], 2,
     "invalid --objective: Invalid spec '-tpr * fpr'"),
    # predict's outputs would overwrite the --id column
    (["predict", "model.joblib", "data.csv", "--id", "prediction"], 2,
     "--id prediction: predict writes a column 'prediction' of its own, which would overwrite the ids; rename "
     "that column of data.csv and pass its new name to --id"),
    (["predict", "model.joblib", "data.csv", "--proba", "--id", "probability_1"], 2,
     "--id probability_1: predict writes a column 'probability_1' of its own"),
    # audit too parses its specs before reading its files
    (["audit", "missing.joblib", "missing.csv", "--constraint", "tpr >"], 2,
     "invalid --constraint: Invalid spec 'tpr >' (near position 4): rates are compared with '<=' or '>=': write '>=' for '>'"),
    # output paths are checked before any work
    (["fit", "missing.csv", "--target", TARGET, "--out", "nowhere/m.joblib"], 2,
     "--out nowhere/m.joblib: the folder 'nowhere' does not exist"),
    (["audit", "missing.joblib", "missing.csv", "--out", "nowhere/a.csv"], 2,
     "--out nowhere/a.csv: the folder 'nowhere' does not exist"),
    (["predict", "missing.joblib", "missing.csv", "--out", "nowhere/p.csv"], 2,
     "--out nowhere/p.csv: the folder 'nowhere' does not exist"),
    (["predict", "missing.joblib", "missing.csv", "--out", "."], 2, "--out .: is a directory"),
]
# Each kind of failure once through a real process; all of them in-process (same code path, faster).
THROUGH_PROCESS = [0, 2, 5, 6]


@pytest.mark.parametrize("case", THROUGH_PROCESS)
def test_bad_input_files_through_the_command(files, fitted, case):
    args, code, message = BAD[case]
    res = run(*args, cwd=files)
    assert res.returncode == code, res.stderr
    assert message in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("args, code, message", BAD)
def test_bad_input_gets_a_clear_message_and_exit_code(files, fitted, args, code, message, capsys, monkeypatch):
    from skrate._cli import main

    monkeypatch.chdir(files)
    try:
        result = main(args)
    except SystemExit as exc:  # argparse exits on a wrong command line
        result = exc.code
    assert result == code
    assert message in capsys.readouterr().err


def test_group_columns_coded_as_floats_name_groups_as_integers(files, capsys, monkeypatch):
    from skrate._cli import main

    monkeypatch.chdir(files)
    fit = ["fit", "--target", TARGET, "--groups", "young", "--constraint", "ppr[young=1] <= ppr + 0.05",
           "--max-iter", "100", "-q"]
    assert main([*fit, "young_float.csv", "--out", "float.joblib"]) == 0, capsys.readouterr().err
    assert main([*fit, "young_int.csv", "--out", "int.joblib"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    # a model trained on the integer column audits a file that holds it as 0.0/1.0
    assert main(["audit", "int.joblib", "young_float.csv", "--n-bootstrap", "0"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "young=1" in out and "ppr[young=1] <= ppr + 0.05" in out and "young=1.0" not in out


def test_quiet_silences_progress_but_not_warnings(files, capsys, monkeypatch):
    from skrate._cli import main

    monkeypatch.chdir(files)
    code = main(["fit", "data.csv", "--target", TARGET, "--constraint", "tpr >= 1.5", "--max-iter", "50",
                 "--out", "infeasible.joblib", "-q"])
    err = capsys.readouterr().err
    assert code == 0
    assert "warning: No mixture of the trained models meets every constraint" in err and "'tpr >= 1.5'" in err
    assert "fit [" not in err and "wrote" not in err


def test_metric_needs_metric_optimizer(files, capsys, monkeypatch):
    from skrate._cli import main

    monkeypatch.chdir(files)
    code = main(["fit", "data.csv", "--target", TARGET, "--metric", "f1", "--max-iter", "50", "--out", "f1.joblib", "-q"])
    err = capsys.readouterr().err
    if hasattr(skrate, "MetricOptimizer"):
        assert code == 0, err
        payload = joblib.load(files / "f1.joblib")
        assert type(payload["model"][-1]).__name__ == "MetricOptimizer"
        assert main(["fit", "data.csv", "--target", TARGET, "--metric", "f1", "--objective", "fpr", "--out",
                     "f1.joblib"]) == 2
        assert "either --metric or --objective" in capsys.readouterr().err
    else:
        assert code == 2
        assert "--metric f1 needs skrate.MetricOptimizer" in err and "--objective" in err
        assert not (files / "f1.joblib").exists()


@pytest.mark.parametrize("option, spec", [("--metric", "foo"), ("--objective", "foo"), ("--constraint", "foo >= 0")])
def test_name_lists_offer_no_name_that_needs_a_baseline(option, spec, capsys):
    from skrate._cli import main

    assert main(["fit", "missing.csv", "--target", "y", option, spec, "--out", "m.joblib"]) == 2
    err = capsys.readouterr().err
    assert "tpr" in err and "fpr" in err  # the list is there
    for name in ("win_loss_ratio", "wins", "losses", "loss_churn", "churn", "baseline_ppr"):
        assert not re.search(rf"\b{name}\b", err), (name, err)


def test_the_spec_echoed_under_a_parse_error_stays_as_written(capsys):
    from skrate._cli import main

    assert main(["fit", "missing.csv", "--target", "y", "--metric", "churn, wins", "--out", "m.joblib"]) == 2
    err = capsys.readouterr().err
    assert "\n    churn, wins\n         ^" in err  # the caret under the comma of the spec as given
    assert "did you mean 'churn'" not in err  # no suggestion the command line refuses


def test_demo_prints_both_audits_and_writes_the_figure(tmp_path):
    pytest.importorskip("matplotlib")
    res = run("demo", "--n-bootstrap", 20, "--figure", "tradeoff.png", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("Audit of ConstrainedClassifier") == 2
    assert "== unconstrained" in res.stdout and "== constrained" in res.stdout
    assert "tpr[race=Caucasian] >= tpr - 0.05" in res.stdout
    assert (tmp_path / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
    assert "written to tradeoff.png" in res.stdout


def test_help_and_version(tmp_path, capsys):
    helped = run("--help", cwd=tmp_path)
    assert helped.returncode == 0
    for command in ("demo", "fit", "audit", "predict", "Exit codes"):
        assert command in helped.stdout
    from skrate._cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"skrate {skrate.__version__}"


def test_demo_without_pandas_says_how_to_install_it(monkeypatch, capsys):
    from skrate import _cli, _demo

    calls = []
    monkeypatch.setattr(_demo, "run_demo", lambda **kw: calls.append(kw))
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    assert _cli.main(["demo"]) == _cli.EXIT_USAGE
    assert calls == []
    assert "needs pandas: pip install pandas" in capsys.readouterr().err


def test_no_arguments_runs_the_demo(monkeypatch):
    from skrate import _cli, _demo

    calls = []
    monkeypatch.setattr(_demo, "run_demo", lambda **kw: calls.append(kw))
    assert _cli.main([]) == 0
    assert calls == [{"figure": "skrate-demo-tradeoff.png", "n_bootstrap": 200}]
    assert _cli.main(["demo", "--no-figure", "--n-bootstrap", "5"]) == 0
    assert calls[-1] == {"figure": None, "n_bootstrap": 5}


# -- small synthetic files --------------------------------------------------------------------------
def _synthetic(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    y = (x1 + 0.5 * rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({"id": np.arange(n), "x1": x1, "x2": x2, "grp": rng.choice(["a", "b", "c"], n),
                         "code": rng.choice(["x", "1", "2", "3"], n), "y": y,
                         "label": np.where(y == 1, "Yes", "no")})


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    """A folder with syn.csv and a model fitted on it (no constraint, a few iterations)."""
    folder = tmp_path_factory.mktemp("syn")
    _synthetic().to_csv(folder / "syn.csv", index=False)
    res = run("fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--max-iter", 30, "--out", "syn.joblib",
              "-q", cwd=folder)
    assert res.returncode == 0, res.stderr
    return folder


def _main(args, folder, monkeypatch, capsys):
    from skrate._cli import main

    monkeypatch.chdir(folder)
    try:
        code = main(list(map(str, args)))
    except SystemExit as exc:  # argparse exits on a wrong command line
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_a_closed_pipe_costs_the_output_not_the_work(syn):
    # `skrate fit ... 2>&1 | head -1`: the reader goes away before the progress lines, the work goes on
    def closed(*args, stream):
        stderr = subprocess.STDOUT if stream == "both" else subprocess.DEVNULL
        proc = subprocess.Popen([sys.executable, "-m", "skrate", *map(str, args)], cwd=syn, env=ENV,
                                stdout=subprocess.PIPE, stderr=stderr)
        proc.stdout.close()
        return proc.wait(timeout=300)

    assert closed("fit", "syn.csv", "--target", "y", "--max-iter", 20, "--out", "piped.joblib", stream="both") == 0
    assert (syn / "piped.joblib").exists()
    # a report too long for the pipe's buffer (one group per row): the file is written first
    assert closed("audit", "syn.joblib", "syn.csv", "--n-bootstrap", 0, "--groups", "id", "--out", "big.csv",
                  stream="stdout") == 0
    assert len(pd.read_csv(syn / "big.csv")) > 300


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a device that is always full")
@pytest.mark.parametrize("command", [["predict", "syn.joblib", "syn.csv"],
                                     ["audit", "syn.joblib", "syn.csv", "--n-bootstrap", 0]])
def test_a_full_disk_behind_standard_output_exits_73(syn, command):
    # `skrate predict ... > predictions.csv` on a full disk: a traceback and exit 1, where
    # --out on the same disk exits 73 in one line
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "skrate", *map(str, command)], cwd=syn, env=ENV,
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert res.returncode == 73, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr
    assert f"skrate {command[0]}: error: standard output: cannot write (No space left on device)" in res.stderr


def test_a_word_in_a_numeric_column_is_refused_by_line(syn, tmp_path, monkeypatch, capsys):
    frame = _synthetic()
    frame["x1"] = frame["x1"].astype(object)
    frame.loc[5, "x1"] = "abc"
    frame.to_csv(tmp_path / "word.csv", index=False)
    fit = ["fit", "word.csv", "--target", "y", "--exclude", "id,label", "--max-iter", 10, "-q", "--out", "w.joblib"]
    code, _, err = _main(fit, tmp_path, monkeypatch, capsys)
    assert code == 65 and not (tmp_path / "w.joblib").exists()
    assert "word.csv: column 'x1' is numeric, but line 7 holds 'abc'" in err and "--categorical x1" in err
    # declared categorical, it is one-hot encoded on purpose
    assert _main([*fit, "--categorical", "x1"], tmp_path, monkeypatch, capsys)[0] == 0
    assert "x1" in joblib.load(tmp_path / "w.joblib")["categorical"]
    # predict and audit name the cell too, also for an infinite number
    for cell in ("abc", "inf"):
        frame.loc[5, "x1"] = cell
        frame.to_csv(tmp_path / "word.csv", index=False)
        for command in (["predict"], ["audit", "--n-bootstrap", 0]):
            code, _, err = _main([command[0], syn / "syn.joblib", "word.csv", *command[1:]], tmp_path, monkeypatch,
                                 capsys)
            assert code == 65
            assert f"column 'x1' is numeric, but line 7 holds '{cell}'; the model was trained on numbers" in err


def test_metric_help_and_ratio_objective_say_that_metric_minimises(capsys):
    from skrate._cli import main

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "--metric METRIC a loss to minimise" in helped and "minimised as written" in helped
    assert "default: 1000" in helped
    assert main(["fit", "missing.csv", "--target", "y", "--objective", "tpr / fpr", "--out", "m.joblib"]) == 2
    err = capsys.readouterr().err
    assert "optimise ratios with --metric" not in err and "also minimises them" in err and "'fpr / tpr'" in err
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    assert "default: 1000" in capsys.readouterr().out


def test_the_positive_class_is_shown_and_can_be_chosen(syn, tmp_path, monkeypatch, capsys):
    _synthetic().drop(columns="y").rename(columns={"label": "y"}).to_csv(tmp_path / "yesno.csv", index=False)
    fit = ["fit", "yesno.csv", "--target", "y", "--exclude", "id", "--max-iter", 30]
    code, _, err = _main([*fit, "--out", "default.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "target 'y' with positive class 'no'" in err  # 'Yes' < 'no': upper case sorts first
    code, _, err = _main([*fit, "--positive-class", "Yes", "--out", "yes.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "target 'y' with positive class 'Yes'" in err
    assert joblib.load(tmp_path / "yes.joblib")["classes"] == ["no", "Yes"]
    code, out, _ = _main(["predict", "yes.joblib", "yesno.csv", "--proba", "--id", "id"], tmp_path, monkeypatch,
                         capsys)
    pred = pd.read_csv(io.StringIO(out))
    assert code == 0 and list(pred.columns) == ["id", "prediction", "probability_Yes"]
    assert set(pred["prediction"]) <= {"Yes", "no"} and (pred["id"] == np.arange(300)).all()
    truth = _synthetic()["label"]
    assert pred["probability_Yes"][truth == "Yes"].mean() > pred["probability_Yes"][truth == "no"].mean() + 0.3
    code, out, _ = _main(["audit", "yes.joblib", "yesno.csv", "--n-bootstrap", 0], tmp_path, monkeypatch, capsys)
    assert code == 0 and "Positive class: y = 'Yes'" in out
    code, _, err = _main([*fit, "--positive-class", "yes", "--out", "bad.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65
    assert "--positive-class 'yes' is not a value of the target column 'y' (its values: 'Yes', 'no')" in err


def test_a_column_read_with_another_type_than_in_training(syn, tmp_path, monkeypatch, capsys):
    # 'code' holds x, 1, 2, 3 in training (text); a batch without x is read as integers
    batch = _synthetic(seed=1).query("code != 'x'")
    batch.to_csv(tmp_path / "batch.csv", index=False)
    assert pd.read_csv(tmp_path / "batch.csv")["code"].dtype.kind == "i"
    code, out, err = _main(["predict", syn / "syn.joblib", "batch.csv"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    payload = joblib.load(syn / "syn.joblib")
    assert payload["format"] == "skrate-model/3" and payload["categorical"] == ["grp", "code"]
    expected = payload["model"].predict(batch[payload["features"]].astype({"code": str}))
    np.testing.assert_array_equal(pd.read_csv(io.StringIO(out))["prediction"], expected)
    assert _main(["audit", syn / "syn.joblib", "batch.csv", "--n-bootstrap", 0], tmp_path, monkeypatch, capsys)[0] == 0


def test_categories_are_read_as_written(tmp_path, monkeypatch, capsys):
    # '01' and '1' in a text column are two categories, in training and in a batch where the
    # column reads as numbers; they were merged into '1', and the label riding on '01' lost
    rng = np.random.default_rng(0)
    code = rng.choice(["01", "1", "B"], 300)
    pd.DataFrame({"code": code, "x": rng.normal(size=300), "y": (code == "01").astype(int)}).to_csv(
        tmp_path / "codes.csv", index=False)
    fit = ["fit", "codes.csv", "--target", "y", "--max-iter", 200, "-q", "--out", "codes.joblib"]
    assert _main(fit, tmp_path, monkeypatch, capsys)[0] == 0
    payload = joblib.load(tmp_path / "codes.joblib")
    encoder = payload["model"].named_steps["prepare"].named_transformers_["categorical"]
    assert sorted(encoder.categories_[0]) == ["01", "1", "B"]
    (tmp_path / "batch.csv").write_text("code,x,y\n01,0.0,1\n1,0.0,0\n")
    code, out, err = _main(["predict", "codes.joblib", "batch.csv"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "warning" not in err
    assert pd.read_csv(io.StringIO(out))["prediction"].tolist() == [1, 0]
    # a model of the format before reads categories as whole numbers, as it was trained
    payload["format"] = "skrate-model/2"
    encoder.categories_ = [np.array(["1", "B"], dtype=object)]
    joblib.dump(payload, tmp_path / "old.joblib")
    code, out, err = _main(["predict", "old.joblib", "batch.csv"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "warning" not in err


def test_model_files_of_the_first_format_still_load(tmp_path, monkeypatch, capsys):
    from sklearn.linear_model import LogisticRegression

    from skrate._cli import _pipeline

    frame = _synthetic()
    features = ["x1", "x2", "grp"]
    model = _pipeline(features, ["grp"], LogisticRegression()).fit(frame[features], frame["label"])  # on labels
    joblib.dump({"format": "skrate-model/1", "model": model, "target": "label", "groups": ["grp"],
                 "features": features, "constraints": [], "classes": model.classes_.tolist()}, tmp_path / "v1.joblib")
    frame.to_csv(tmp_path / "syn.csv", index=False)
    code, out, err = _main(["predict", "v1.joblib", "syn.csv", "--proba"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    pred = pd.read_csv(io.StringIO(out))
    np.testing.assert_array_equal(pred["prediction"], model.predict(frame[features]))
    np.testing.assert_allclose(pred["probability_no"], model.predict_proba(frame[features])[:, 1], atol=1e-12)
    code, out, err = _main(["audit", "v1.joblib", "syn.csv", "--n-bootstrap", 0], tmp_path, monkeypatch, capsys)
    assert code == 0 and "Positive class: label = 'no'" in out and "grp=a" in out, err


def test_demo_checks_its_figure_path_before_training(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from skrate import _demo

    calls = []
    monkeypatch.setattr(_demo, "run_demo", lambda **kw: calls.append(kw))
    for figure, message in (("nowhere/x.png", "--figure nowhere/x.png: the folder 'nowhere' does not exist"),
                            ("fig.xyz", "--figure fig.xyz: matplotlib cannot write .xyz files; end the name with "
                                        "one of"),
                            ("", "--figure : the file name is empty"),  # it wrote ./.png.png
                            ("figs/", "--figure figs/: a folder, not a file name; name a file in it, e.g. "
                                      f"{os.path.join('figs', 'tradeoff.png')}"),  # it wrote figs/.png.png
                            ("figs", "--figure figs: a folder, not a file name")):
        (tmp_path / "figs").mkdir(exist_ok=True)
        code, _, err = _main(["demo", "--figure", figure], tmp_path, monkeypatch, capsys)
        assert code == 2 and message in err and calls == []
    # matplotlib appends .png to a name without an extension: the demo names the file it writes
    assert _main(["demo", "--figure", "fig"], tmp_path, monkeypatch, capsys)[0] == 0
    assert calls == [{"figure": "fig.png", "n_bootstrap": 200}]
    assert _demo.figure_file("a.svg") == "a.svg"


def test_library_errors_and_warnings_speak_the_command_line(syn, monkeypatch, capsys):
    python_words = ("groups=...", "set_fit_request", "set_config", "fit_report_", "max_iter", "skrate.generalized",
                    "as an array")
    fit = ["fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--max-iter", 20, "-q", "--out", "c.joblib"]
    cases = [  # (arguments, exit code, what the message says instead)
        ([*fit, "--constraint", "tpr[grp] >= tpr - 0.1"], 65, "no --groups were given: list the group columns"),
        ([*fit, "--groups", "grp", "--constraint", "tpr >= 1.5"], 0, "('skrate audit' lists each constraint)"),
        ([*fit, "--metric", "f1", "--constraint", "tpr >= 1.5"], 0, "No classifier at all can meet"),
        ([*fit, "--metric", "g_mean", "--constraint", "fpr <= 0.0", "--constraint", "tpr >= 0.99"], 0,
         "Loosen the constraints or train longer (--max-iter)."),
        ([*fit, "--metric", "fx"], 2, "(f2: the F-measure with beta 2)"),
        ([*fit, "--metric", "max"], 2, "the skrate command cannot build it; use max_of of the Python API"),
        (["audit", "syn.joblib", "syn.csv", "--groups", "", "--constraint", "tpr[zzz] >= tpr", "--n-bootstrap", 0],
         65, "Unknown group column 'zzz'"),
    ]
    for args, code, says in cases:
        result, _, err = _main(args, syn, monkeypatch, capsys)
        assert result == code and says in err, err
        assert not [w for w in python_words if w in err], err


def test_inputs_that_are_pipes_or_not_utf8(syn, tmp_path, monkeypatch, capsys):
    # bash's <(...) and /dev/stdin are pipes, not regular files
    res = run("fit", "/dev/stdin", "--target", "y", "--exclude", "id,label", "--max-iter", 10, "-q", "--out",
              "stdin.joblib", cwd=tmp_path, input=(syn / "syn.csv").read_text())
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "stdin.joblib").exists()
    (tmp_path / "latin1.csv").write_bytes("x,grp,y\n1,caf\xe9,0\n2,th\xe9,1\n".encode("latin-1"))
    code, _, err = _main(["fit", "latin1.csv", "--target", "y", "--out", "l.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "latin1.csv: not UTF-8 text" in err and "save it as UTF-8" in err


def test_progress_ends_where_the_solver_stopped(syn, monkeypatch, capsys):
    code, _, err = _main(["fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--metric", "f1", "--max-iter",
                          400, "--out", "f1.joblib"], syn, monkeypatch, capsys)
    n_iter = joblib.load(syn / "f1.joblib")["model"][-1].n_iter_
    assert code == 0
    assert f"converged after {n_iter} of 400 iterations" in err if n_iter < 400 else "400/400" in err


def test_fit_trains_for_pr_auc(syn, monkeypatch, capsys):
    code, _, err = _main(["fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--metric", "pr_auc",
                          "--max-iter", 20, "-q", "--out", "pr_auc.joblib"], syn, monkeypatch, capsys)
    assert code == 0, err
    model = joblib.load(syn / "pr_auc.joblib")["model"][-1]
    assert type(model).__name__ == "MetricOptimizer" and model.metric == "pr_auc"
    assert model.n_iter_ > 0


def test_a_spec_may_start_with_a_minus_sign(syn, monkeypatch, capsys):
    fit = ["fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--max-iter", 10, "-q"]
    for args in (["--objective", "-tpr"], ["--objective=-tpr"], ["--objective", "-tpr", "--constraint", "-ppr >= -0.9"]):
        code, _, err = _main([*fit, *args, "--out", "neg.joblib"], syn, monkeypatch, capsys)
        assert code == 0, err
        model = joblib.load(syn / "neg.joblib")["model"][-1]
        assert model.objective == "-tpr" and [str(c) for c in model.constraints or []] in ([], ["-ppr >= -0.9"])
    from skrate._cli import _join_spec_values

    assert _join_spec_values(["fit", "--metric", "-f1", "--", "--objective", "-tpr"]) == \
        ["fit", "--metric=-f1", "--", "--objective", "-tpr"]  # after '--' every word is positional
    assert _join_spec_values(["fit", "--objective", "-q"]) == ["fit", "--objective", "-q"]


def test_semantic_spec_errors_are_parse_errors_the_command_line_catches():
    import pickle

    from skrate.rates import SpecParseError, parse_constraint, parse_expression

    for parse, text, pos in ((parse_constraint, "0.8 * ppr <= ppr[race] <= 1.25 * ppr", 23),
                             (parse_constraint, "tpr * fpr >= 0.1", 4), (parse_constraint, "ppr >= 1e400", 7),
                             (parse_expression, "ppr >= 0.5", 4), (parse_expression, "ppr / 0", 6)):
        with pytest.raises(SpecParseError) as info:
            parse(text)
        assert info.value.pos == pos and info.value.reason and f"near position {pos})" in str(info.value)
        again = pickle.loads(pickle.dumps(info.value))  # as joblib returns it from a worker
        assert str(again) == str(info.value) and again.pos == pos


def test_cells_are_read_as_written(syn, tmp_path, monkeypatch, capsys):
    # 'None' and 'NA' are category names, not empty cells; 'true'/'false' stay the file's labels;
    # an id keeps its zeros and its digits
    frame = _synthetic()
    frame["treatment"] = np.random.default_rng(0).choice(["None", "NA", "Drug"], len(frame))
    frame["y"] = np.where(frame["y"] == 1, "true", "false")
    frame["id"] = [f"{i:03d}" for i in range(len(frame))]
    frame.loc[3, "id"] = "12345678901234567"
    frame.to_csv(tmp_path / "asis.csv", index=False)
    fit = ["fit", "asis.csv", "--target", "y", "--exclude", "id,label", "--max-iter", 10, "-q"]
    code, _, err = _main([*fit, "--positive-class", "true", "--out", "asis.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    payload = joblib.load(tmp_path / "asis.joblib")
    assert payload["classes"] == ["false", "true"] and "treatment" in payload["categorical"]
    code, out, err = _main(["predict", "asis.joblib", "asis.csv", "--id", "id"], tmp_path, monkeypatch, capsys)
    assert code == 0 and err == ""  # every category was seen in training: no warning
    pred = pd.read_csv(io.StringIO(out), dtype=str)
    assert pred["id"].tolist() == frame["id"].tolist() and set(pred["prediction"]) <= {"true", "false"}
    code, _, err = _main([*fit, "--out", "default.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0 and joblib.load(tmp_path / "default.joblib")["classes"] == ["false", "true"]


def test_the_classes_are_written_back_as_the_file_writes_them(tmp_path, monkeypatch, capsys):
    # a target of codes 01/02 reads as numbers (2 > 1: 02 is positive) but is written back as 01/02
    frame = _synthetic().drop(columns="label")
    frame["y"] = np.where(frame["y"] == 1, "02", "01")
    frame.to_csv(tmp_path / "codes.csv", index=False)
    code, _, err = _main(["fit", "codes.csv", "--target", "y", "--exclude", "id", "--max-iter", 10, "--out",
                          "codes.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "with positive class '02'" in err
    code, out, err = _main(["predict", "codes.joblib", "codes.csv", "--proba"], tmp_path, monkeypatch, capsys)
    pred = pd.read_csv(io.StringIO(out), dtype=str)
    assert code == 0 and list(pred.columns) == ["prediction", "probability_02"]
    assert set(pred["prediction"]) == {"01", "02"}
    code, out, _ = _main(["audit", "codes.joblib", "codes.csv", "--n-bootstrap", 0], tmp_path, monkeypatch, capsys)
    assert code == 0 and "Positive class: y = '02'" in out
    # --positive-class reads the value as a number too: 1 names the class written 01
    code, _, err = _main(["fit", "codes.csv", "--target", "y", "--exclude", "id", "--max-iter", 10,
                          "--positive-class", "1", "--out", "one.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 0 and joblib.load(tmp_path / "one.joblib")["classes"] == ["02", "01"]


def test_a_numeric_cell_written_nan_is_refused_by_line(syn, tmp_path, monkeypatch, capsys):
    frame = _synthetic().astype({"x1": object})
    frame.loc[4, "x1"] = "NA"
    frame.to_csv(tmp_path / "na.csv", index=False)
    code, _, err = _main(["predict", syn / "syn.joblib", "na.csv"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "column 'x1' is numeric, but line 6 holds 'NA'" in err


def test_category_values_unseen_in_training_are_warned_of(syn, tmp_path, monkeypatch, capsys):
    # a column coded anew (grp as numbers) would be read as no known category, silently
    batch = _synthetic(seed=1)
    batch["grp"] = batch["grp"].map({"a": 0, "b": 1, "c": "c"})
    batch.to_csv(tmp_path / "recoded.csv", index=False)
    for command in (["predict", syn / "syn.joblib", "recoded.csv"],
                    ["audit", syn / "syn.joblib", "recoded.csv", "--n-bootstrap", 0]):
        code, _, err = _main(command, tmp_path, monkeypatch, capsys)
        n_new = int((batch["grp"] != "c").sum())
        assert code == 0
        assert (f"warning: recoded.csv: column 'grp' holds value(s) the model never saw in training, ['0', '1'], "
                f"in {n_new} row(s)") in err
        assert "none of its categories ['a', 'b', 'c']" in err


def test_abbreviated_options_are_refused(syn, monkeypatch, capsys):
    # "--obj -tpr" would escape the joining of values that start with a minus sign
    code, _, err = _main(["fit", "syn.csv", "--target", "y", "--obj", "-tpr", "--out", "a.joblib"], syn,
                         monkeypatch, capsys)
    assert code == 2 and "unrecognized arguments: --obj" in err


def test_a_cell_is_named_by_its_line_in_the_file(syn, tmp_path, monkeypatch, capsys):
    # pandas skips blank lines and reads a quoted cell over two lines as one row: the line of a
    # row is not its index + 2 (the message named line 6 for a cell on line 8)
    text = "x1,note,y\n1,a,0\n\n\n2,\"two\nlines\",1\nabc,b,1\n" + "".join(f"{i},c,{i % 2}\n" for i in range(3, 20))
    (tmp_path / "gaps.csv").write_text(text)
    fit = ["fit", "gaps.csv", "--target", "y", "-q", "--out", "g.joblib"]
    code, _, err = _main(fit, tmp_path, monkeypatch, capsys)
    line = text.splitlines().index("abc,b,1") + 1
    assert code == 65 and f"column 'x1' is numeric, but line {line} holds 'abc'" in err
    # a pipe is read once and kept: its lines are named as a file's, and its header is checked
    res = run("fit", "-", "--target", "y", "-q", "--out", "g.joblib", cwd=tmp_path, input=text)
    assert res.returncode == 65 and f"column 'x1' is numeric, but line {line} holds 'abc'" in res.stderr
    res = run("fit", "-", "--target", "y", "-q", "--out", "g.joblib", cwd=tmp_path, input="x1,x1,y\n1,2,0\n3,4,1\n")
    assert res.returncode == 65 and "-: the header names column 'x1' more than once" in res.stderr


def test_rows_ending_in_a_delimiter_are_read_column_by_column(syn, tmp_path, monkeypatch, capsys):
    # rows that all end in ",": pandas made the first column the index and shifted the others left
    lines = (syn / "syn.csv").read_text().splitlines()
    (tmp_path / "ok.csv").write_text("\n".join(lines[:21]) + "\n")
    (tmp_path / "trailing.csv").write_text("\n".join([lines[0]] + [row + "," for row in lines[1:21]]) + "\n")
    outputs = []
    for name in ("ok.csv", "trailing.csv"):
        code, out, _ = _main(["predict", syn / "syn.joblib", name, "--proba", "--id", "id"], tmp_path, monkeypatch,
                             capsys)
        assert code == 0
        outputs.append(out)
    assert outputs[0] == outputs[1]
    # a value beyond the header's names is refused, not dropped
    (tmp_path / "extra.csv").write_text("\n".join([lines[0]] + [row + ",9" for row in lines[1:21]]) + "\n")
    code, _, err = _main(["predict", syn / "syn.joblib", "extra.csv"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "extra.csv: line 2 holds 8 values, more than the header's 7 column names" in err


def test_spaces_around_a_column_name_do_not_count(syn, tmp_path, monkeypatch, capsys):
    # "id ," in the header could be named by no option: --exclude strips the names it is given
    frame = _synthetic()
    frame.rename(columns={"id": "id ", "y": " y"}).to_csv(tmp_path / "spaced.csv", index=False)
    code, _, err = _main(["fit", "spaced.csv", "--target", "y ", "--exclude", "id ,label", "--max-iter", 30,
                          "--out", "spaced.joblib", "-q"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert joblib.load(tmp_path / "spaced.joblib")["features"] == joblib.load(syn / "syn.joblib")["features"]
    code, out, _ = _main(["predict", "spaced.joblib", "spaced.csv", "--id", " id"], tmp_path, monkeypatch, capsys)
    assert code == 0 and out.splitlines()[0] == "id,prediction" and len(out.splitlines()) == len(frame) + 1
    (tmp_path / "twice.csv").write_text("a,a ,y\n1,2,0\n3,4,1\n")
    code, _, err = _main(["fit", "twice.csv", "--target", "y", "--out", "t.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "the header names column 'a' more than once" in err


def test_lines_of_spaces_and_long_cells_keep_the_line_numbers(tmp_path, monkeypatch, capsys):
    # csv read a line of spaces as a record, which pandas skips: a header "without a name", and every
    # later line named one too early; a cell over 128 KiB stopped the csv module with a traceback
    (tmp_path / "lead.csv").write_text("   \na,y\n" + "".join(f"{i},{i % 2}\n" for i in range(12)))
    code, _, err = _main(["fit", "lead.csv", "--target", "y", "--max-iter", 5, "-q", "--out", "l.joblib"], tmp_path,
                         monkeypatch, capsys)
    assert code == 0, err
    text = "a,t,y\n1," + "x" * 200_000 + ",1\n" + "".join(f"{i},u,{i % 2}\n" for i in range(2, 12)) + " \t\n5,u,\n"
    (tmp_path / "long.csv").write_text(text)
    code, _, err = _main(["fit", "long.csv", "--target", "y", "-q", "--out", "l.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "column 'y' has 1 empty value(s), the first on line 14" in err


def test_an_output_that_is_an_input_is_refused(syn, monkeypatch, capsys):
    before = {name: (syn / name).read_bytes() for name in ("syn.csv", "syn.joblib")}
    for args in (["predict", "syn.joblib", "syn.csv", "--out", "syn.csv"],
                 ["audit", "syn.joblib", "syn.csv", "--n-bootstrap", 0, "--out", "syn.joblib"],
                 ["fit", "syn.csv", "--target", "y", "--out", "./syn.csv"]):
        code, _, err = _main(args, syn, monkeypatch, capsys)
        assert code == 2 and "that is the input file" in err and "write it elsewhere" in err
    assert before == {name: (syn / name).read_bytes() for name in ("syn.csv", "syn.joblib")}


def test_a_header_with_an_empty_or_repeated_name_is_refused(tmp_path, monkeypatch, capsys):
    # pandas renames them (Unnamed: 0, x.1): a saved index was trained on, --exclude x missed a copy
    frame = _synthetic()[["x1", "x2", "y"]]
    frame.to_csv(tmp_path / "index.csv")  # index=True, as to_csv writes by default
    frame.rename(columns={"x2": "x1"}).to_csv(tmp_path / "twice.csv", index=False)
    code, _, err = _main(["fit", "index.csv", "--target", "y", "--out", "m.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "column 1 of the header has no name" in err and "index=False" in err
    code, _, err = _main(["fit", "twice.csv", "--target", "y", "--exclude", "x1", "--out", "m.joblib"], tmp_path,
                         monkeypatch, capsys)
    assert code == 65 and "names column 'x1' more than once" in err
    assert not (tmp_path / "m.joblib").exists()


def test_a_dash_is_standard_input_and_output(syn):
    data = (syn / "syn.csv").read_text()
    res = run("fit", "-", "--target", "y", "--exclude", "id,label", "--max-iter", 30, "-q", "--out", "dash.joblib",
              cwd=syn, input=data)
    assert res.returncode == 0, res.stderr
    res = run("predict", "dash.joblib", "-", "--proba", "--out", "-", cwd=syn, input=data)
    assert res.returncode == 0, res.stderr
    from_file = run("predict", "syn.joblib", "syn.csv", "--proba", cwd=syn)  # the same fit, from the file
    assert res.stdout == from_file.stdout and res.stdout.startswith("prediction,probability_1")
    for args, message in ((["fit", "syn.csv", "--target", "y", "--out", "-"], "a model is a binary file"),
                          (["audit", "syn.joblib", "syn.csv", "--out", "-"], "the audit itself goes to standard"),
                          (["predict", "-", "syn.csv"], "the model cannot come from standard input")):
        res = run(*args, cwd=syn)
        assert res.returncode == 2 and message in res.stderr, res.stderr


def test_categorical_names_a_feature(syn, monkeypatch, capsys):
    for declared, role in (("id", "excluded by --exclude"), ("y", "the target")):
        code, _, err = _main(["fit", "syn.csv", "--target", "y", "--exclude", "id,label", "--categorical", declared,
                              "--out", "c.joblib"], syn, monkeypatch, capsys)
        assert code == 2 and f"--categorical {declared}: that column is {role}, not a feature" in err


def test_a_semicolon_separated_file_is_named_as_such(tmp_path, monkeypatch, capsys):
    (tmp_path / "semi.csv").write_text("x;g;y\n1;a;0\n2;b;1\n3;a;0\n")
    code, _, err = _main(["fit", "semi.csv", "--target", "y", "--out", "m.joblib"], tmp_path, monkeypatch, capsys)
    assert code == 65 and "separate its values with ';'" in err and "sep=';'" in err
