"""LP shrinking against cvxpy, the rank heuristic, and the stochastic model's predictions."""

import subprocess
import sys

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import kstest, rankdata

from skrate.models import LinearModel, MLPModel
from skrate.solutions import StochasticModel, best_iterate, row_uniforms, shrink


def _cvxpy_mixture(obj, cons):
    p = cp.Variable(obj.shape[0], nonneg=True)
    budget = cons @ p <= 0
    prob = cp.Problem(cp.Minimize(obj @ p), [cp.sum(p) == 1, budget])
    prob.solve(solver=cp.CLARABEL)
    return prob.status, prob.value, budget.dual_value


@pytest.mark.parametrize("seed", range(6))
def test_shrink_is_optimal_with_small_support(seed):
    rng = np.random.default_rng(seed)
    k, m = 60, rng.integers(1, 6)
    obj = rng.uniform(0.1, 0.5, k)
    # candidates trade the objective against the constraints so the optimum mixes several
    cons = rng.normal(size=(m, k)) * 0.1 + (0.35 - obj)[None, :] * rng.uniform(0.5, 1.5, (m, 1))
    res = shrink(obj, cons)
    status, value, _ = _cvxpy_mixture(obj, cons)
    assert status == "optimal" and res.feasible
    assert np.count_nonzero(res.weights) <= m + 1
    np.testing.assert_allclose(res.weights @ obj, value, atol=1e-6)
    assert (cons @ res.weights).max() <= 1e-9
    assert np.isclose(res.weights.sum(), 1.0) and res.weights.min() >= 0


@pytest.mark.parametrize("seed", range(4))
def test_shrink_multipliers_certify_the_mixture(seed):
    rng = np.random.default_rng(seed)
    k, m = 40, 3
    obj = rng.uniform(0.1, 0.5, k)
    cons = rng.normal(size=(m, k)) * 0.1 + (0.35 - obj)[None, :] * rng.uniform(0.5, 1.5, (m, 1))
    res = shrink(obj, cons)
    _, value, dual = _cvxpy_mixture(obj, cons)
    mu = res.multipliers
    assert mu.shape == (m,) and mu.min() >= 0
    # dual feasibility: no candidate's Lagrangian is below the mixture's objective ...
    lagrangian = obj + mu @ cons
    assert lagrangian.min() >= value - 1e-7
    # ... with equality on the support, and complementary slackness on the constraints
    np.testing.assert_allclose(lagrangian[res.weights > 0], value, atol=1e-7)
    np.testing.assert_allclose(mu * (cons @ res.weights), 0.0, atol=1e-9)
    # the multipliers are the LP's duals (unique here: cvxpy's interior point agrees)
    np.testing.assert_allclose(mu, dual, atol=1e-5)


def test_shrink_infeasible_minimises_violation():
    rng = np.random.default_rng(7)
    k, m = 40, 3
    obj = rng.uniform(size=k)
    cons = rng.uniform(0.05, 0.3, size=(m, k))  # every candidate violates every constraint
    res = shrink(obj, cons)
    s = cp.Variable()
    p = cp.Variable(k, nonneg=True)
    cp.Problem(cp.Minimize(s), [cp.sum(p) == 1, cons @ p <= s]).solve(solver=cp.CLARABEL)
    assert not res.feasible
    np.testing.assert_allclose(res.max_violation, s.value, rtol=1e-6)
    assert np.count_nonzero(res.weights) <= m + 1


@pytest.mark.parametrize("s, tol", [(5e-4, 1e-3), (5e-8, 1e-7), (5e-10, 1e-9)])
def test_shrink_counts_a_violation_within_tol_feasible_without_failing(s, tol):
    # the best violation s is positive but within tol: feasible, though beyond the LP's own
    # tolerance of a bound 0 (the second phase failed as infeasible)
    lp = shrink(np.array([0.2, 0.3]), np.array([[s, s]]), tol=tol)
    assert lp.feasible and lp.max_violation == pytest.approx(s)
    np.testing.assert_array_equal(lp.weights, [1.0, 0.0])


def test_n_candidates_bounds_the_evenly_spaced_snapshots():
    from skrate import ConstrainedClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    for max_iter in (150, 500, 999):  # the last two: every 5th and every 10th iterate, then the last ones
        clf = ConstrainedClassifier("ppr >= 0.3", max_iter=max_iter, n_candidates=100, random_state=0).fit(X, y)
        assert len(clf.candidates_) <= 100 + 2


def test_shrink_without_constraints_picks_the_best_candidate():
    res = shrink(np.array([0.3, 0.1, 0.2]), np.zeros((0, 3)))
    np.testing.assert_array_equal(res.weights, [0, 1, 0])


@pytest.mark.parametrize("seed", range(5))
def test_shrink_solves_one_lp_when_a_candidate_is_feasible(seed, monkeypatch):
    import skrate.solutions._shrink as module

    rng = np.random.default_rng(seed)
    objective, constraints = rng.uniform(size=30), rng.normal(size=(3, 30))
    constraints[:, 7] = -0.1  # candidate 7 meets every constraint alone
    solves = []
    vertex = module._vertex
    monkeypatch.setattr(module, "_vertex", lambda *a: solves.append(a) or vertex(*a))
    res = shrink(objective, constraints)
    # the least-violation phase is skipped: the best mixture is found by one LP
    assert len(solves) == 1
    assert res.feasible and res.least_violation == 0.0 and res.max_violation <= 1e-9
    # its objective is the LP optimum, found here with cvxpy
    p = cp.Variable(30, nonneg=True)
    cp.Problem(cp.Minimize(objective @ p), [cp.sum(p) == 1, constraints @ p <= 0]).solve()
    assert objective @ res.weights <= objective @ p.value + 1e-7


def test_best_iterate_matches_the_rank_rule():
    rng = np.random.default_rng(4)
    obj = rng.uniform(size=50)
    cons = rng.normal(scale=0.1, size=(3, 50))
    viol = np.maximum(cons.max(axis=0), 0)
    score = np.maximum(rankdata(obj, method="min"), rankdata(viol, method="min"))
    best = best_iterate(obj, cons)
    assert score[best] == score.min()
    assert obj[best] == obj[score == score.min()].min()
    # a feasible candidate with the lowest objective among the feasible ones wins when it exists
    cons[:, 10] = -1.0
    obj[10] = 0.0
    assert best_iterate(obj, cons) == 10
    # an undefined value ranks last as +inf; a NaN made rankdata rank nothing, and the lowest
    # objective won, infeasible or not
    o, g = np.array([0.1, 0.2, 0.05]), np.array([[0.0, 0.0, 1.0]])
    assert best_iterate(o, g) == 0 and best_iterate([0.1, np.inf, 0.05], g) == 0
    for bad in ((o, [[0.0, np.nan, 1.0]]), ([0.1, np.nan, 0.05], g)):
        with pytest.raises(ValueError, match="hold NaN; give an undefined value as \\+inf"):
            best_iterate(*bad)


@pytest.mark.parametrize("choose", [lambda o, g: shrink(o, g).weights, best_iterate])
def test_candidate_tables_of_the_wrong_shape_are_refused(choose):
    objective = np.array([0.1, 0.2, 0.3, 0.4])
    constraints = np.array([[0.5, 0.5, -1.0, -0.2], [-1.0, 0.5, 0.5, -0.2]])  # (m=2, k=4)
    with pytest.raises(ValueError, match=r"constraints must have shape \(m, 4\).*\(4, 2\), transpose it"):
        choose(objective, constraints.T)  # (k, m) used to be reshaped into scrambled (m, k) entries
    with pytest.raises(ValueError, match=r"shape \(m, 4\).*\(3, 3\)"):
        choose(objective, np.ones((3, 3)))
    with pytest.raises(ValueError, match="objective must be a non-empty 1-D array"):
        choose(np.zeros((2, 2)), constraints)
    # one constraint may come as a vector
    assert np.array_equal(np.asarray(choose(objective, constraints[0])), np.asarray(choose(objective, constraints[:1])))


def test_shrink_takes_rows_beyond_the_lp_solvers_range():
    # a slack of 1e15 (the unconstrained end of a trade-off curve) made HiGHS fail with a model error
    rng = np.random.default_rng(3)
    objective, constraints = rng.uniform(size=6), rng.uniform(-0.5, 0.5, size=(2, 6))
    plain = shrink(objective, constraints)
    never = shrink(objective, np.vstack([constraints, rng.uniform(size=6) - 1e15]))
    np.testing.assert_allclose(never.weights, plain.weights)
    np.testing.assert_allclose(never.multipliers, np.r_[plain.multipliers, 0.0])
    with pytest.raises(ValueError, match=r"Constraint 2 reaches 1e\+15 in magnitude.*out of any rate's reach"):
        shrink(objective, np.vstack([constraints, rng.uniform(size=6) + 1e15]))
    with pytest.raises(ValueError, match="must be finite"):  # a NaN row was dropped as never binding
        shrink([0.0, 1.0], [[0.5, np.nan], [0.3, -0.1]])
    # large rows within the LP's range keep the exact phase 1: the least largest violation
    res = shrink(np.array([0.0, 1.0]), np.array([[2e7, -1e7], [-1.0, 1.0]]))
    assert not res.feasible and res.max_violation == pytest.approx(1 / 3)
    np.testing.assert_allclose(res.weights, [1 / 3, 2 / 3])


def test_constrained_classifier_with_a_slack_of_1e15_fits_unconstrained():
    from skrate import ConstrainedClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    g = np.where(X[:, 1] > 0, "a", "b")
    clf = ConstrainedClassifier("tpr[group] >= tpr - 1e15", max_iter=20, random_state=0).fit(X, y, groups=g)
    assert clf.feasible_


def test_row_uniforms_refuse_a_seed_outside_64_bits():
    X = np.zeros((3, 2))
    for seed in (-1, 2**64, 1.5, 0.5):  # a float was truncated without a word
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*64\)"):
            row_uniforms(X, seed=seed)
    assert row_uniforms(X, seed=2**64 - 1).shape == (3,)


def test_row_uniforms_of_no_rows():
    # a dense input of no rows failed to reshape; a sparse one gave no draws
    for X in (np.empty((0, 3)), [], np.empty((0, 2), dtype=object), sp.csr_matrix((0, 3))):
        assert row_uniforms(X).shape == (0,)


def test_row_uniforms_are_reproducible_and_uniform():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20_000, 4))
    u = row_uniforms(X, seed=3)
    np.testing.assert_array_equal(u, row_uniforms(X.copy(), seed=3))
    np.testing.assert_array_equal(u[::-1], row_uniforms(X[::-1], seed=3))  # a row's draw ignores its position
    assert not np.array_equal(u, row_uniforms(X, seed=4))
    assert kstest(u, "uniform").pvalue > 1e-3
    assert np.corrcoef(u[:-1], u[1:])[0, 1] < 0.03
    # the same in another process
    code = ("import numpy as np; from skrate.solutions import row_uniforms; "
            "X = np.random.default_rng(5).normal(size=(20000, 4)); print(repr(row_uniforms(X, seed=3)[:5].tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == u[:5].tolist()


def test_row_uniforms_of_rows_with_text():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.choice(["u", "vv", "a longer value"], 4000), rng.integers(0, 3, 4000)]).astype(object)
    u = row_uniforms(X, seed=1)
    short = np.flatnonzero(X[:, 0] == "u")
    np.testing.assert_array_equal(u[short], row_uniforms(X[short], seed=1))  # independent of the batch's widest text
    rows, first = np.unique(X.astype(str), axis=0, return_index=True)
    np.testing.assert_array_equal(row_uniforms(X[np.sort(first)], seed=1), u[np.sort(first)])  # a row's own draw
    assert np.unique(u).size == X.shape[0]  # repeats of a row draw anew
    assert not np.array_equal(u, row_uniforms(X, seed=2))


def test_repeated_rows_realise_their_probability():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(6000, 2)).astype(float)  # 16 distinct rows, each about 375 times
    p = 0.1 + 0.05 * X.sum(axis=1)
    u = row_uniforms(X, seed=7)
    cells = np.unique(X, axis=0, return_inverse=True)[1].ravel()
    counts = np.bincount(cells)
    realised = np.bincount(cells, weights=(u < p)) / counts
    # the golden-ratio sequence spreads the copies: each cell's fraction is within ~1/count of p
    assert np.all(np.abs(realised - np.bincount(cells, weights=p) / counts) <= 2.0 / counts)
    np.testing.assert_array_equal(u, row_uniforms(X.copy(), seed=7))  # the same X, the same draws


def test_row_uniforms_read_numbers_by_value_not_dtype():
    rng = np.random.default_rng(4)
    ints = rng.integers(0, 20, 3000)
    text = rng.choice(["u", "v"], 3000)
    as_int = np.column_stack([ints.astype(object), text])  # a DataFrame's int column next to a text one
    as_float = np.column_stack([ints.astype(float).astype(object), text])
    u = row_uniforms(as_int, seed=1)
    np.testing.assert_array_equal(u, row_uniforms(as_float, seed=1))  # 3 and 3.0 draw alike
    # a number in a text column is read on its own: the draw does not depend on the rest of the batch
    mixed = np.column_stack([np.where(ints < 10, ints.astype(object), "many"), text])
    w = row_uniforms(mixed, seed=1)
    small = np.flatnonzero(ints < 10)
    np.testing.assert_array_equal(w[small], u[small])
    # reversed, repeated rows trade draws among themselves: each row keeps the same multiset
    reversed_draws = row_uniforms(mixed[small[::-1]], seed=1)[::-1]
    for value in np.unique(ints[small]):
        for t in ("u", "v"):
            cell = (ints[small] == value) & (text[small] == t)
            np.testing.assert_array_equal(np.sort(reversed_draws[cell]), np.sort(w[small][cell]))
    # numbers in an object array draw as in a numeric array
    np.testing.assert_array_equal(row_uniforms(ints.astype(object)), row_uniforms(ints.astype(float)))


def test_stochastic_model_probabilities_and_predictions():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40_000, 2))
    params = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, -5.0]])
    weights = np.array([0.5, 0.3, 0.2])
    model = StochasticModel(LinearModel(2), params, weights, seed=1)
    expected = 0.5 * (X[:, 0] > 0) + 0.3 * (X[:, 1] > 0) + 0.2 * (X.sum(1) > 5)
    np.testing.assert_allclose(model.proba(X), expected)
    pred = model.predict(X)
    np.testing.assert_array_equal(pred, model.predict(X))
    for level in np.unique(expected):
        rows = expected == level
        if rows.sum() > 1000:
            assert abs(pred[rows].mean() - level) < 0.03
    single = StochasticModel(LinearModel(2), params, np.array([0.0, 1.0, 0.0]))
    assert single.is_deterministic
    np.testing.assert_array_equal(single.predict(X), (X[:, 1] > 0).astype(int))


def test_a_score_of_exactly_zero_predicts_the_negative_class():
    # the mixture predicts 1 with probability sum_k p_k 1[f_k(x) > 0]: a row on a model's
    # boundary (score 0) counts for none of its weight
    X = np.array([[-1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    params = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    expected = 0.25 * (X[:, 0] > 0) + 0.75 * (X[:, 1] > 0)
    np.testing.assert_array_equal(StochasticModel(LinearModel(2), params, np.array([0.25, 0.75])).proba(X), expected)
    single = StochasticModel(LinearModel(2), params, np.array([1.0, 0.0]))
    np.testing.assert_array_equal(single.proba(X), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(single.predict(X), [0, 0, 0, 1])


@pytest.mark.parametrize("weights", [[0.2, 0.2, 0.2], [0.1, 0.2, 0.3], [0.5, 0.5, 0.0]])
def test_stochastic_model_probability_is_the_weighted_count_of_positive_scores(weights):
    # sum_k p_k 1[f_k(x) > 0] with the weights as given, equal or not
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    params = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, -0.5]])
    weights = np.array(weights)
    expected = (X @ params[:, :2].T + params[:, 2] > 0) @ weights
    np.testing.assert_allclose(StochasticModel(LinearModel(2), params, weights).proba(X), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("model", [LinearModel(3), MLPModel(3, (4,))])
def test_stochastic_model_takes_any_array_like(model):
    # a DataFrame's product with the parameters is read-only under pandas' copy-on-write, and a
    # list has no shape: both are array-like, as the docstrings say X may be
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(50, 3))
    params = np.stack([model.init_params(rng) + rng.normal(size=model.n_params) for _ in range(3)])
    sm = StochasticModel(model, params, np.array([0.2, 0.3, 0.5]), seed=1)
    for form in (pd.DataFrame(X, columns=["a", "b", "c"]), X.tolist()):
        np.testing.assert_array_equal(sm.scores(form), sm.scores(X))
        np.testing.assert_array_equal(sm.proba(form), sm.proba(X))
        np.testing.assert_array_equal(sm.predict(form, rows=X), sm.predict(X))


def test_a_rows_probability_does_not_depend_on_the_batch():
    # 102 equal weights (T_stochastic's): a matrix product sums them in an order set by the
    # batch's shape, which moved single rows by an ulp (0.0 alone, -1.1e-16 in a batch)
    rng = np.random.default_rng(14)
    X = rng.normal(size=(2000, 3))
    params = rng.normal(size=(102, 4))
    for weights in (np.full(102, 1 / 102), rng.dirichlet(np.ones(102))):
        model = StochasticModel(LinearModel(3), params, weights, seed=1)
        batch = model.proba(X)
        np.testing.assert_allclose(batch, (X @ params[:, :3].T + params[:, 3] > 0) @ weights, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(np.concatenate([model.proba(X[i:i + 1]) for i in range(2000)]), batch)
        np.testing.assert_array_equal(np.concatenate([model.proba(X[i:i + 10]) for i in range(0, 2000, 10)]), batch)


def test_every_nan_draws_alike():
    # a NaN's sign and payload depend on how it arose (np.nan, inf - inf, 0 / 0)
    rng = np.random.default_rng(15)
    X = rng.normal(size=(500, 3))
    X[:, 1] = np.nan
    other = X.copy()
    other[:, 1] = -np.inf + np.inf
    assert np.signbit(other[:, 1]).all() != np.signbit(X[:, 1]).all()
    np.testing.assert_array_equal(row_uniforms(other, seed=2), row_uniforms(X, seed=2))
    M = X.astype(object)
    M[:, 0] = "text"
    N = other.astype(object)
    N[:, 0] = "text"
    np.testing.assert_array_equal(row_uniforms(N, seed=2), row_uniforms(M, seed=2))


def _digest(a):
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def test_row_uniforms_and_predictions_are_those_of_earlier_versions():
    # Draws are reproducible per row across versions: these references were computed before
    # the hash read X in blocks of rows (by an implementation hashing a full copy of X).
    rng = np.random.default_rng(11)
    X = rng.normal(size=(150_000, 7))  # more rows than one block
    X[:5000] = np.round(X[:5000])  # repeated rows
    X[5000:5100, 0] = -0.0
    assert _digest(row_uniforms(X, seed=3)) == "3b3011b45e13b4a7"
    assert _digest(row_uniforms(np.asfortranarray(X), seed=3)) == "3b3011b45e13b4a7"
    assert _digest(row_uniforms(X.astype(np.float32), seed=3)) == "c5341dab525bdf67"
    assert _digest(row_uniforms(rng.integers(-5, 5, size=(70_000, 3)), seed=0)) == "55d447dba385569e"
    assert _digest(row_uniforms(rng.random(50_000) < 0.5, seed=2)) == "ec2fb58855e0f478"
    M = np.column_stack([rng.choice(["u", "vv", "a longer value"], 60_000), rng.integers(0, 3, 60_000)]).astype(object)
    M[::7, 1] = 2.5
    assert _digest(row_uniforms(M, seed=1)) == "0aeb979a1bf80e35"
    assert _digest(row_uniforms(M.astype(str), seed=1)) == "3740e6628f55884b"
    small = np.array([[1.0, -0.0, 3.0], [1.0, 0.0, 3.0], [2.5, 1e300, -7.0], [1.0, 0.0, 3.0]])
    assert row_uniforms(small, seed=5).tolist() == [0.8602102320562623, 0.47824422080615725,
                                                     0.41825387964515015, 0.09627820955605237]
    Z = rng.normal(size=(120_000, 2))
    params = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, -1.0]])
    model = StochasticModel(LinearModel(2), params, np.array([0.5, 0.3, 0.2]), seed=4)
    pred = model.predict(Z)
    assert pred[:20].tolist() == [0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0]
    assert _digest(pred.astype(np.int64)) == "ce2cc500beb6d2f5"


def test_row_uniforms_do_not_depend_on_the_blocks_and_copy_no_full_x(monkeypatch):
    import tracemalloc

    import skrate.solutions._stochastic_model as sm

    rng = np.random.default_rng(12)
    X = rng.normal(size=(100_000, 60))
    X[2::3] = X[1::3]  # repeated rows, in every block
    tracemalloc.start()
    try:
        u = row_uniforms(X, seed=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.7 * X.nbytes  # no copy of all of X: blocks of rows and per-row words
    small = X[:400]
    M = np.column_stack([rng.choice(["u", "vv", "a longer value"], 400), rng.integers(0, 3, 400)]).astype(object)
    M[::7, 1] = 2.5
    expected = row_uniforms(small, seed=3), row_uniforms(M, seed=1)
    monkeypatch.setattr(sm, "_BLOCK", 2**16)  # 1092 rows a block
    np.testing.assert_array_equal(row_uniforms(X, seed=3), u)
    for block in (1, 7, 1000):
        monkeypatch.setattr(sm, "_BLOCK", block)
        np.testing.assert_array_equal(row_uniforms(small, seed=3), expected[0])
        np.testing.assert_array_equal(row_uniforms(M, seed=1), expected[1])


@pytest.mark.parametrize("form", ["array", "frame", "list", "sparse"])
def test_stochastic_model_scores_blocks_of_rows_when_predicting(monkeypatch, form):
    # T_stochastic keeps every iterate: proba must not hold the (n, k) scores of all rows at once
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sparse

    import skrate.solutions._stochastic_model as sm

    monkeypatch.setattr(sm, "_SCORE_ENTRIES", 300, raising=False)
    rng = np.random.default_rng(13)
    X = rng.normal(size=(1003, 2))
    params = rng.normal(size=(7, 3))
    model = StochasticModel(LinearModel(2), params, rng.dirichlet(np.ones(7)), seed=2)
    expected = (X @ params[:, :2].T + params[:, 2] > 0) @ model.weights
    seen = []
    scores_many = LinearModel.scores_many
    monkeypatch.setattr(LinearModel, "scores_many", lambda self, Z, t: seen.append(Z.shape[0] if hasattr(Z, "shape")
                                                                                   else len(Z)) or scores_many(self, Z, t))
    given = {"array": X, "frame": pd.DataFrame(X), "list": X.tolist(), "sparse": sparse.csr_matrix(X)}[form]
    np.testing.assert_allclose(model.proba(given), expected)
    assert max(seen) <= 300 // 7 and sum(seen) == X.shape[0]
    np.testing.assert_array_equal(model.predict(given, rows=X), model.predict(X))


def test_shrink_prices_the_least_largest_violation_when_no_mixture_is_feasible():
    # two candidates, each breaking the constraint the other meets: the least largest violation
    # mixes them (p = 4/7, s = 0.5/7); its duals sum to 1 and price both candidates at s
    constraints = np.array([[0.2, -0.1], [-0.1, 0.3]])
    lp = shrink(np.array([0.3, 0.1]), constraints)
    assert not lp.feasible
    np.testing.assert_allclose(lp.least_violation, 0.5 / 7)
    np.testing.assert_allclose(lp.violation_prices.sum(), 1.0)
    np.testing.assert_allclose(lp.violation_prices @ constraints, [0.5 / 7] * 2)
    feasible = shrink(np.array([0.3, 0.1]), constraints - 0.2)
    assert feasible.feasible and feasible.least_violation == 0.0 and not feasible.violation_prices.any()


@pytest.mark.parametrize("objective, constraints, best", [
    ([0.3, 0.2, 0.2], [[0.0, -0.1, -0.2]], 2),  # a tie in both ranks goes to the later candidate
    ([0.1, 0.2, 0.3], [[-0.01, -0.5, -0.9]], 0),  # feasible alike, whatever their slack: the objective decides
    # violation ranks take the least rank of their ties (3 for 0.1): an infeasible candidate with the best
    # objective shares the best score with the feasible 2 and wins on the objective
    ([0.0, 0.3, 0.2, 0.1, 0.2], [[0.1, 0.0, 0.0, 0.1, 0.1]], 0),
])
def test_best_iterate_on_small_tables_by_hand(objective, constraints, best):
    assert best_iterate(objective, constraints) == best


def test_shrink_meets_the_least_violation_plus_tol():
    # candidate 0 is best and violates by 1, candidate 1 by 0.5 (the least): with tol=0.1 the
    # mixture may violate by up to 0.6, and the LP spends that on the objective
    lp = shrink(np.array([0.0, 1.0]), np.array([[1.0, 0.5]]), tol=0.1)
    assert not lp.feasible and lp.least_violation == pytest.approx(0.5)
    np.testing.assert_allclose(lp.weights, [0.2, 0.8], atol=1e-7)
    assert lp.max_violation == pytest.approx(0.6)
