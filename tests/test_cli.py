"""The skrate command end to end, through subprocesses, including bad input files."""

import os
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


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "skrate", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=300)


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
    assert lines[0] == "prediction,probability" and len(lines) == 1201
    ok = run("predict", "model.joblib", "data.csv", "--out", "pred.csv", "-q", cwd=files)
    assert ok.returncode == 0 and ok.stderr == ""
    pred = pd.read_csv(files / "pred.csv")
    payload = joblib.load(files / "model.joblib")
    frame = pd.read_csv(files / "data.csv")
    np.testing.assert_array_equal(pred["prediction"], payload["model"].predict(frame[payload["features"]]))


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
    (["fit", "data.csv", "--target", TARGET, "--max-iter", "0", "--out", "m.joblib"], 2, "--max-iter must be positive"),
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
