"""Sparse X: the rate estimators train and predict on it as on the same rows dense."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skrate import ConstrainedClassifier, MetricOptimizer, TrimmedClassifier, TrimmedRegressor
from skrate.generalized import pr_auc
from skrate.metrics import audit
from skrate.models import input_scale, scaled_input
from skrate.solutions import row_uniforms
from sklearn.impute import SimpleImputer


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[X < 0.5] = 0.0  # mostly zeros
    X[:, 5] *= 1e4  # a column in large units: the games rescale it
    g = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * g + rng.normal(size=n) > 0.8).astype(int)
    return X, y, {"g": g}


TPR = "tpr[g] >= 0.9 * tpr"
ESTIMATORS = [
    ConstrainedClassifier(constraints=TPR, random_state=0, max_iter=200),
    ConstrainedClassifier(constraints=TPR, solver="lagrangian", random_state=0, max_iter=200),
    ConstrainedClassifier(constraints=TPR, model="mlp", random_state=0, max_iter=60),
    ConstrainedClassifier(constraints=TPR, margin="auto", validation_fraction=0.3, random_state=0, max_iter=200),
    ConstrainedClassifier(constraints=TPR, solution="T_stochastic", random_state=0, max_iter=200),
    MetricOptimizer(metric="f1", random_state=0),
    MetricOptimizer(metric="h_mean", solver="frank_wolfe", random_state=0),
    MetricOptimizer(metric="g_mean", constraints=TPR, solver="three_player", random_state=0, max_iter=200),
    MetricOptimizer(metric=pr_auc(), random_state=0, max_iter=100),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: f"{type(e).__name__}-{e.get_params()}"[:90])
def test_sparse_x_fits_and_predicts_as_dense(estimator):
    X, y, groups = _data()
    S = sp.csr_matrix(X)
    dense = clone(estimator).fit(X, y, groups=groups)
    sparse = clone(estimator).fit(sp.csc_matrix(X), y, groups=groups)  # any format: read as CSR
    np.testing.assert_allclose(sparse.candidates_, dense.candidates_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sparse.predict_proba(S), dense.predict_proba(X), atol=1e-9)
    np.testing.assert_array_equal(sparse.predict(S), dense.predict(X))
    np.testing.assert_array_equal(sparse.predict(S), sparse.predict(X))  # a row draws as its dense self
    assert sp.issparse(S) and S.nnz == np.count_nonzero(X)  # the input is left as it was


def test_sparse_reports_and_audit_match_dense():
    X, y, groups = _data()
    S = sp.csr_matrix(X)
    clf = ConstrainedClassifier(constraints=TPR, random_state=0, max_iter=200).fit(S, y, groups=groups)
    pd.testing.assert_frame_equal(clf.constraint_report(S, y, groups=groups), clf.constraint_report(X, y, groups=groups))
    pd.testing.assert_frame_equal(audit(clf, S, y, groups=groups, n_bootstrap=20, random_state=0),
                                  audit(clf, X, y, groups=groups, n_bootstrap=20, random_state=0))


def test_one_hot_pipeline_with_sparse_output_trains():
    # OneHotEncoder's default output is sparse: the pipeline a user writes first
    rng = np.random.default_rng(1)
    n = 1500
    frame = pd.DataFrame({"job": rng.choice(["a", "b", "c", "d"], n), "city": rng.choice(["x", "y"], n)})
    y = ((frame.job == "a") | (rng.random(n) < 0.3)).astype(int).to_numpy()
    groups = {"city": frame.city.to_numpy()}
    pipe = make_pipeline(OneHotEncoder(handle_unknown="ignore"),
                         ConstrainedClassifier(constraints="ppr[city] >= 0.9 * ppr", random_state=0, max_iter=200))
    pipe.fit(frame, y, constrainedclassifier__groups=groups)
    dense = make_pipeline(OneHotEncoder(handle_unknown="ignore", sparse_output=False), clone(pipe[-1]))
    dense.fit(frame, y, constrainedclassifier__groups=groups)
    np.testing.assert_allclose(pipe.predict_proba(frame), dense.predict_proba(frame), atol=1e-9)
    report = pipe[-1].constraint_report(pipe[0].transform(frame), y, groups=groups)
    violations = report["violation"].dropna()  # the objective's row has none
    assert len(violations) == 2 and (violations <= 0.02).all()


def test_oracle_estimator_takes_sparse_x_when_it_can():
    X, y, groups = _data(n=1200)
    clf = ConstrainedClassifier(constraints=TPR, solver="oracle_lagrangian", estimator=LogisticRegression(),
                                random_state=0, max_iter=10).fit(sp.csr_matrix(X), y, groups=groups)
    p = clf.predict_proba(sp.csr_matrix(X))[:, 1]
    assert np.isfinite(p).all() and 0 < p.mean() < 1
    np.testing.assert_array_equal(clf.predict(sp.csr_matrix(X)), clf.predict(X))


def test_row_uniforms_of_sparse_rows_are_those_of_dense_rows(monkeypatch):
    import skrate.solutions._stochastic_model as sm

    monkeypatch.setattr(sm, "_BLOCK", 64)  # several blocks of rows
    monkeypatch.setattr(sm, "_NUMBER_ROWS", 64)
    X = _data(n=500)[0]
    X[:40] = np.round(X[:40])  # repeated rows keep their golden-ratio sequence
    for form in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        np.testing.assert_array_equal(row_uniforms(form(X), seed=3), row_uniforms(X, seed=3))


def test_input_scale_of_sparse_columns_matches_dense_and_stays_sparse():
    X = _data(n=800)[0]
    X[:, 2] *= 1e-4
    dense, sparse = input_scale(X), input_scale(sp.csr_matrix(X))
    np.testing.assert_array_equal(sparse[1], dense[1])
    assert not sparse[0].any()
    out = scaled_input(sp.csr_matrix(X), sparse)
    assert sp.issparse(out)
    np.testing.assert_array_equal(out.toarray(), X / sparse[1])
    # an offset column is centred in a sparse X as in a dense one, and only it fills
    X[:, 1] += 1e3
    X[:5, 1] = 0.0  # a few zeros: still an offset column
    Xs = sp.csr_matrix(X)
    dense, sparse = input_scale(X), input_scale(Xs)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12)
    np.testing.assert_array_equal(sparse[1], dense[1])
    assert np.count_nonzero(sparse[0]) == 1
    out = scaled_input(Xs, sparse)
    assert sp.issparse(out) and out.nnz <= Xs.nnz + 5
    np.testing.assert_allclose(out.toarray(), scaled_input(X, dense), rtol=1e-12, atol=1e-12)
    # a spread of 1e-9 of the mean: E[x^2] - mean^2 cancelled to 0, and the column went unshifted
    X[:, 3] = 1e6 + 1e-3 * np.random.default_rng(1).normal(size=X.shape[0])
    dense, sparse = input_scale(X), input_scale(sp.csr_matrix(X))
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12)
    np.testing.assert_array_equal(sparse[1], dense[1])


def test_columns_are_centred_when_their_mean_exceeds_four_deviations_dense_or_sparse():
    # the documented rule, |mean| > 4 sd, on columns either side of it; a sparse column's
    # deviation counts its implicit zeros, each ``mean`` away from the mean
    rng = np.random.default_rng(0)
    n = 1000
    X = np.column_stack([
        2.0 + rng.normal(size=n),  # 2 sd: left alone
        10.0 + rng.normal(size=n),  # 10 sd: centred
        (rng.random(n) < 0.9).astype(float),  # a 0/1 column of 10% zeros, 3 sd: left alone
        np.where(rng.random(n) < 0.02, 0.0, 5.0 + 0.1 * rng.normal(size=n)),  # 2% zeros, about 7 sd
    ])
    mean, sd = X.mean(axis=0), X.std(axis=0)
    expected = np.where(np.abs(mean) > 4 * sd, mean, 0.0)
    assert np.count_nonzero(expected) == 2
    for given in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        np.testing.assert_allclose(input_scale(given)[0], expected, rtol=1e-12)


def test_weighted_input_scale_of_sparse_columns_matches_dense_and_repeated_rows():
    rng = np.random.default_rng(2)
    X = _data(n=400)[0]
    X[:, 1] += 1e3  # an offset column
    X[:, 2] *= 1e4  # out of band
    X[X[:, 0] < -0.5, 3] = 0.0  # sparse zeros
    w = rng.integers(1, 5, X.shape[0])
    rep = np.repeat(np.arange(X.shape[0]), w)
    dense, sparse = input_scale(X, w.astype(float)), input_scale(sp.csr_matrix(X), w.astype(float))
    repeated = input_scale(X[rep])
    for got in (dense, sparse):
        np.testing.assert_allclose(got[0], repeated[0], rtol=1e-12)
        np.testing.assert_array_equal(got[1], repeated[1])


def test_sparse_rows_hash_in_one_pass_per_column(monkeypatch):
    # wide sparse X (text features) was densified in blocks of 2**20 / n_features rows, each
    # hashed column by column: n * d^2 / 2**20 array operations (95 s for 5000 x 50000)
    import skrate.solutions._stochastic_model as sm

    X = sp.random(2000, 3000, density=0.002, format="csr", random_state=0)
    calls = []
    mix = sm._mix
    monkeypatch.setattr(sm, "_mix", lambda h: calls.append(1) or mix(h))
    u = row_uniforms(X, seed=1)
    assert len(calls) <= 2 * X.shape[1] + 1
    monkeypatch.setattr(sm, "_mix", mix)
    np.testing.assert_array_equal(u, row_uniforms(X.toarray(), seed=1))
    # duplicate stored entries add up, as the dense row does; the input keeps its entries
    dup = sp.coo_matrix((np.array([1.0, 2.0, -0.0]), (np.array([0, 0, 1]), np.array([5, 5, 6]))), shape=(3, 8))
    np.testing.assert_array_equal(row_uniforms(dup.tocsc(), seed=1), row_uniforms(dup.toarray(), seed=1))


def test_wide_dense_rows_hash_in_one_pass_per_column(monkeypatch):
    # dense rows went in blocks of 2**20 / n_features rows, each hashed column by column: a
    # pass per column per handful of rows (3 s for 1000 x 20000)
    import skrate.solutions._stochastic_model as sm

    X = np.random.default_rng(0).normal(size=(600, 4000))
    expected = row_uniforms(sp.csr_matrix(X), seed=2)
    calls = []
    mix = sm._mix
    monkeypatch.setattr(sm, "_mix", lambda h: calls.append(1) or mix(h))
    u = row_uniforms(X, seed=2)
    assert len(calls) <= X.shape[1] + 1
    np.testing.assert_array_equal(u, expected)
    # a block of rows is hashed as the same rows on their own
    monkeypatch.setattr(sm, "_NUMBER_ROWS", 7)
    np.testing.assert_array_equal(row_uniforms(X, seed=2), u)


def test_an_offset_column_of_a_sparse_X_is_centred_as_in_a_dense_one():
    # a year column in a sparse X was played as is: a second intercept, accuracy 0.57 for 0.90
    rng = np.random.default_rng(0)
    year = rng.integers(2000, 2021, 400).astype(float)
    onehot = np.eye(5)[rng.integers(0, 5, 400)]
    y = (year - 2010 + 3 * rng.normal(size=400) > 0).astype(int)
    X = np.c_[onehot, year]
    for est in (ConstrainedClassifier(random_state=0), ConstrainedClassifier("tpr >= 0.8", random_state=0),
                MetricOptimizer("f1", random_state=0)):
        dense = clone(est).fit(X, y).predict_proba(X)[:, 1]
        sparse = clone(est).fit(sp.csr_matrix(X), y).predict_proba(sp.csr_matrix(X))[:, 1]
        assert np.mean(dense.round() == y) > 0.85
        np.testing.assert_allclose(sparse, dense, atol=1e-6)


def test_a_sparse_X_with_duplicate_unsorted_entries_is_left_as_given():
    # scipy sums duplicates and sorts indices in place on the first abs() or product: the
    # caller's matrix was rewritten by fit (nnz 800 -> 600)
    from skrate import AUCClassifier, DROClassifier

    rng = np.random.default_rng(0)
    n = 200
    cols = np.tile([2, 0, 1, 0], n)  # column 0 twice per row, out of order
    vals = rng.normal(size=4 * n)
    X = sp.csr_matrix((vals, cols, np.arange(0, 4 * n + 1, 4)), shape=(n, 3))
    assert not X.has_canonical_format
    y = (np.asarray(X.sum(axis=1)).ravel() > 0).astype(int)
    data, indices, indptr = X.data.copy(), X.indices.copy(), X.indptr.copy()
    for est in (ConstrainedClassifier("tpr >= 0.8", max_iter=20, random_state=0),
                MetricOptimizer("f1", max_iter=20, random_state=0), AUCClassifier(), DROClassifier()):
        p = est.fit(X, y).predict_proba(X)
        np.testing.assert_array_equal(X.data, data)
        np.testing.assert_array_equal(X.indices, indices)
        np.testing.assert_array_equal(X.indptr, indptr)
        np.testing.assert_allclose(p, est.predict_proba(X.toarray()), atol=1e-9)


def _data_with_nan(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[X < 0.3] = 0.0  # mostly zeros
    y = (X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=n) > 0.6).astype(int)
    X[::7, 1] = np.nan  # stored entries of the sparse matrix
    return X, y


@pytest.mark.parametrize("params", [dict(metric="f1"), dict(metric="g_mean", constraints="tpr >= 0.8")])
def test_sparse_x_with_nan_reaches_the_estimator_and_predicts_as_dense(params):
    X, y = _data_with_nan()
    S = sp.csr_matrix(X)
    data, indices, indptr = S.data.copy(), S.indices.copy(), S.indptr.copy()
    assert np.isnan(S.data).sum() == np.isnan(X).sum() > 0
    make = lambda: MetricOptimizer(estimator=make_pipeline(SimpleImputer(), LogisticRegression()),  # noqa: E731
                                   random_state=0, **params)
    dense = make().fit(X, y)
    sparse = make().fit(S, y)
    np.testing.assert_allclose(sparse.candidates_, dense.candidates_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sparse.predict_proba(S), dense.predict_proba(X), atol=1e-9)
    np.testing.assert_array_equal(sparse.predict(S), dense.predict(X))
    # the user's matrix is left as it was: its NaN are not zeroed in place
    np.testing.assert_array_equal(S.data, data)  # NaN compares equal to NaN here
    np.testing.assert_array_equal(S.indices, indices)
    np.testing.assert_array_equal(S.indptr, indptr)
    # the scored rows are [x with NaN read as 0, logit eta(x)], as the dense rows are
    model = sparse._model
    z = np.log(model.estimator.predict_proba(X)[:, 1]) - np.log(model.estimator.predict_proba(X)[:, 0])
    augmented = model.augment(S)
    assert sp.issparse(augmented)
    np.testing.assert_allclose(augmented.toarray(), np.column_stack([np.nan_to_num(X, nan=0.0), z]), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_array_equal(S.data, data)


# ------------------------------------------------------------------ trimmed estimators
def _trimmed_columns(n=600, seed=0):
    """Sparse columns of every kind the column scaling tells apart."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    X[X < 0.7] = 0.0  # mostly zeros
    X[:, 1] = -np.abs(X[:, 1])  # negative entries
    X[:, 2] = np.where(rng.random(n) < 0.85, rng.normal(size=n) + 3.0, 0.0)  # quartiles off 0
    X[:, 3] = 0.0  # no entries
    X[:, 4] = 7.0  # constant, an entry in every row
    X[:, 5] = 1e6 + 1e-3 * rng.normal(size=n)  # an offset far beyond its spread
    X[:3, 6] = 1e12  # gross values the fences clip
    X[:, 7] *= 1e4  # large units
    return X


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_column_scaling_of_sparse_columns_is_that_of_dense(fit_intercept):
    from skrate._trimmed_problem import column_scaling

    X = _trimmed_columns()
    dense = column_scaling(X, fit_intercept)
    for form in (sp.csr_matrix, sp.csc_matrix):
        sparse = column_scaling(form(X), fit_intercept)
        np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12, atol=0)
        np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-12, atol=0)
    assert dense[1][3] == dense[1][4] == 1.0  # the constant columns


def test_centred_columns_compute_as_the_dense_centred_columns():
    from skrate._centred_columns import largest_eigenvalue, row_sq_norms, weighted_column_sq, weighted_gram
    from skrate._trimmed_problem import preconditioned

    rng = np.random.default_rng(1)
    X = _trimmed_columns(n=300)
    X[:3, 6] = 0.0  # moderate values: the dense reference is then exact to rounding
    offset, scale = X.mean(axis=0), X.std(axis=0) + 1.0
    # the offset column (1e6 over a spread of 1e-3) has an entry in every row: centred in place
    Z, C = (X - offset) / scale, preconditioned(sp.csr_matrix(X), offset, scale)
    W, M, c, D = rng.normal(size=(8, 3)), rng.normal(size=(300, 3)), rng.random(300), rng.random(8) + 0.5
    rows = rng.choice(300, 40, replace=False)
    np.testing.assert_allclose(C @ W, Z @ W, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(C @ W[:, 0], Z @ W[:, 0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(C.T @ M, Z.T @ M, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(C[rows] @ W, Z[rows] @ W, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose((C / D) @ W, (Z / D) @ W, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(row_sq_norms(C), row_sq_norms(Z), rtol=1e-9)
    np.testing.assert_allclose(weighted_column_sq(C, c), weighted_column_sq(Z, c), rtol=1e-9)
    for fit_intercept in (True, False):
        for weights in (c, None):
            np.testing.assert_allclose(weighted_gram(C, weights, fit_intercept),
                                       weighted_gram(Z, weights, fit_intercept), rtol=1e-9, atol=1e-9)
        assert largest_eigenvalue(C, c, fit_intercept) == pytest.approx(
            np.linalg.eigvalsh(weighted_gram(Z, c, fit_intercept))[-1], rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_largest_eigenvalue_of_wide_columns_is_a_tight_upper_bound(fit_intercept):
    from skrate._centred_columns import GRAM_MAX, CentredColumns, largest_eigenvalue

    rng = np.random.default_rng(2)
    n, d = 80, GRAM_MAX + 500  # too wide for the Gram matrix: Lanczos iterations
    S = sp.random(n, d, density=0.02, format="csr", random_state=3)
    offset, scale, c = np.asarray(S.mean(axis=0)).ravel(), rng.random(d) + 0.5, rng.random(n)
    Z = (S.toarray() - offset) / scale
    Zt = np.hstack([Z, np.ones((n, 1))]) if fit_intercept else Z
    exact = np.linalg.eigvalsh((Zt * np.sqrt(c)[:, None]) @ (Zt * np.sqrt(c)[:, None]).T)[-1]  # the small side
    for form in (CentredColumns.of(S, offset, scale), Z):
        lam = largest_eigenvalue(form, c, fit_intercept)
        assert exact <= lam <= exact * 1.002


_TRIMMED = [
    TrimmedRegressor(trim_fraction=0.1, random_state=0),
    TrimmedRegressor(trim_fraction=0.1, solver="alternating", random_state=0),
    TrimmedRegressor(trim_fraction=0.1, penalty="l1", alpha=1e-3, random_state=0),
    TrimmedRegressor(trim_fraction=0.1, fit_intercept=False, random_state=0),
    TrimmedClassifier(trim_fraction=0.1, alpha=1e-2, random_state=0),
    TrimmedClassifier(trim_fraction=0.1, alpha=1e-2, solver="alternating", random_state=0),
    TrimmedClassifier(trim_fraction=0.1, penalty="l1", alpha=1e-3, weight_step=1.0, random_state=0),
]


@pytest.mark.parametrize("estimator", _TRIMMED, ids=lambda e: f"{type(e).__name__}-{e.get_params()}"[:90])
@pytest.mark.parametrize("weighted", [False, True])
def test_trimmed_fit_on_sparse_x_is_the_fit_on_dense_x(estimator, weighted):
    rng = np.random.default_rng(4)
    X = _trimmed_columns(n=800)
    n = X.shape[0]
    score = X[:, 0] - 2.0 * X[:, 2] + 0.5 * X[:, 1] + 1e-4 * X[:, 7] + 0.1 * rng.normal(size=n)
    if isinstance(estimator, TrimmedRegressor):
        y = score.copy()
        y[:60] += 40.0  # gross targets
    else:
        y = np.digitize(score, np.quantile(score, [0.35, 0.7]))  # three classes
        y[:60] = (y[:60] + 1) % 3  # mislabelled
    sw = rng.integers(1, 4, n).astype(float) if weighted else None
    S = sp.csr_matrix(X)
    before = S.copy()
    dense = clone(estimator).fit(X, y, sample_weight=sw)
    sparse = clone(estimator).fit(S, y, sample_weight=sw)
    np.testing.assert_array_equal(sparse.inlier_mask_, dense.inlier_mask_)
    assert sparse.objective_ == pytest.approx(dense.objective_, rel=1e-6)
    np.testing.assert_allclose(sparse.predict(S), sparse.predict(X), rtol=1e-12, atol=1e-9)
    if isinstance(estimator, TrimmedRegressor):
        np.testing.assert_allclose(sparse.predict(S), dense.predict(X), rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_allclose(sparse.predict_proba(S), dense.predict_proba(X), atol=1e-4)
    assert (S != before).nnz == 0 and S.has_canonical_format  # the input is left as it was


@pytest.mark.parametrize("magnitude", [1e300, 1e-300])
@pytest.mark.parametrize("kw", [dict(), dict(penalty="none"), dict(penalty="l1", alpha=1e-3, solver="alternating")])
def test_trimmed_fit_on_sparse_columns_of_any_magnitude_is_the_dense_fit(magnitude, kw):
    # the Gram matrix of a sparse column near 1e300 (or its scale's square near 1e-300) left the
    # float range before it was scaled: NaN, and eigvalsh failed
    rng = np.random.default_rng(5)
    X = _trimmed_columns(n=200)[:, [0, 1, 2, 7]]
    y = X[:, 0] - 2.0 * X[:, 2] + 0.1 * rng.normal(size=200)
    y[:10] += 30.0
    X[:, 1] *= magnitude
    dense = TrimmedRegressor(random_state=0, **kw).fit(X, y)
    sparse = TrimmedRegressor(random_state=0, **kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.inlier_mask_, dense.inlier_mask_)
    np.testing.assert_allclose(sparse.coef_ * [1, magnitude, 1, 1], dense.coef_ * [1, magnitude, 1, 1], rtol=1e-6,
                               atol=1e-8)


def test_trimmed_fit_on_a_nearly_full_sparse_column_with_a_large_offset_converges_as_dense():
    # a column of mean 1e7 over a spread of 1e-3 with a few zeros: left to the implicit centring
    # its products cancelled 10 digits, and SMART ran to max_iter where the dense fit converged
    rng = np.random.default_rng(0)
    n = 400
    X = np.c_[1e7 + 1e-3 * rng.normal(size=n), rng.normal(size=n) * (rng.random(n) < 0.5), rng.normal(size=n)]
    X[:4, 0] = 0.0
    y = ((X[:, 0] - 1e7) / 1e-3 + X[:, 1] + X[:, 2] + 0.5 * rng.normal(size=n) > 0).astype(int)
    y[10:30] ^= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        dense = TrimmedClassifier(random_state=0).fit(X, y)
        sparse = TrimmedClassifier(random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.inlier_mask_, dense.inlier_mask_)
    assert sparse.objective_ == pytest.approx(dense.objective_, rel=1e-6)


@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
def test_trimmed_fit_on_wide_all_zero_sparse_x_without_intercept(Est):
    # the zero Gram matrix: ARPACK refuses a start in its null space ("starting vector is zero")
    from skrate._centred_columns import GRAM_MAX

    y = np.arange(60) % 2
    model = Est(fit_intercept=False, random_state=0).fit(sp.csr_matrix((60, GRAM_MAX + 100)), y)
    assert not model.coef_.any()


@pytest.mark.parametrize("estimator", [TrimmedRegressor(), ConstrainedClassifier(constraints=TPR)])
def test_duplicate_entries_adding_up_to_infinity_are_refused(estimator):
    X = _data(n=200)[0]
    X[0, 0] = 1.0
    y = (X[:, 0] > 0.5).astype(int)
    S = sp.csr_matrix(X)
    # the first entry stored twice, each finite, their sum not: the finiteness check of scikit-learn
    # reads the entries apart (a COO matrix is summed before it, into its own error)
    S = sp.csr_matrix((np.r_[1.5e308, 1.5e308, S.data[1:]], np.r_[0, 0, S.indices[1:]], np.r_[0, S.indptr[1:] + 1]),
                      shape=S.shape)
    fit_params = {"groups": {"g": np.arange(200) % 2}} if isinstance(estimator, ConstrainedClassifier) else {}
    with pytest.raises(ValueError, match="duplicate entries .* add up past the largest float"):
        clone(estimator).fit(S, y, **fit_params)
