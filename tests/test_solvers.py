"""Gradients by finite differences, surrogate bounds, and the lambda-players' fixed points."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skrate.models import Design, LinearModel, MLPModel
from skrate.solvers import (
    ExternalRegretPlayer, LagrangePlayer, SwapRegretPlayer, stationary_distribution, surrogate_grad,
    surrogate_value,
)


def _fd(fun, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.shape[0]):
        e = np.zeros_like(x)
        e[k] = eps
        g[k] = (fun(x + e) - fun(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("kind", ["hinge", "logistic", "sigmoid"])
def test_surrogate_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(0)
    f = rng.normal(size=40) * 3
    f = f[np.abs(np.abs(f) - 1) > 1e-3]  # away from the hinge kinks
    coef = rng.normal(size=f.shape[0])
    np.testing.assert_allclose(surrogate_grad(f, coef, kind), _fd(lambda s: surrogate_value(s, coef, kind), f), atol=1e-6)


@pytest.mark.parametrize("kind", ["hinge", "logistic", "sigmoid"])
def test_lagrangian_model_gradient_is_that_of_the_rows_own_surrogates(kind):
    # an example's coefficients differ in sign across rows (error on a positive, a ppr bound):
    # the model must descend the function the Lagrangian's multipliers ascend
    from skrate.solvers._rate_game import _surrogate_rates, _surrogate_rates_grad

    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 40)) * (rng.random((3, 40)) < 0.7)
    A_pos, A_neg = sp.csr_matrix(np.maximum(A, 0)), sp.csr_matrix(np.minimum(A, 0))
    scores = 1.5 * rng.normal(size=40)
    keep = np.abs(np.abs(scores) - 1) > 1e-3  # away from the hinge kinks
    A_pos, A_neg, scores = A_pos[:, keep], A_neg[:, keep], scores[keep]
    weights, b = np.array([1.0, 2.0, 0.5]), rng.normal(size=3)
    lagrangian = lambda f: weights @ _surrogate_rates(A_pos, A_neg, f, b, kind)  # noqa: E731
    np.testing.assert_allclose(_surrogate_rates_grad(A_pos, A_neg, scores, weights, kind), _fd(lagrangian, scores),
                               rtol=1e-6, atol=1e-7)
    # the surrogate of the weighted sum, which the proxy-Lagrangian's model descends, differs
    if kind != "sigmoid":
        combined = surrogate_grad(scores, (A_pos + A_neg).T @ weights, kind)
        assert not np.allclose(combined, _fd(lagrangian, scores), atol=1e-6)


@pytest.mark.parametrize("kind", ["hinge", "logistic", "sigmoid"])
def test_lagrangian_surrogates_of_large_scores_are_exact_and_quiet(kind):
    # saturated scores are ordinary in an MLP's training; the sigmoid used to warn of overflow
    from skrate.solvers._rate_game import _surrogate_rates, _surrogate_rates_grad

    scores = np.array([-1e3, -800.0, 800.0, 1e3])
    A = sp.csr_matrix(np.eye(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rates = _surrogate_rates(A, A * 0, scores, np.zeros(4), kind)
        grad = _surrogate_rates_grad(A, A * 0, scores, np.ones(4), kind)
    np.testing.assert_array_equal(rates[:2], 0.0)
    assert np.all(np.isfinite(rates)) and np.all(np.isfinite(grad))


@pytest.mark.parametrize("kind", ["hinge", "logistic"])
def test_surrogates_bound_the_weighted_indicator(kind):
    rng = np.random.default_rng(1)
    f = rng.normal(size=1000) * 3
    coef = rng.normal(size=1000)
    # elementwise: each surrogate term upper-bounds coef_i * 1[f_i > 0]
    for i in range(0, 1000, 7):
        assert surrogate_value(f[i:i + 1], coef[i:i + 1], kind) >= coef[i] * (f[i] > 0) - 1e-12


@pytest.mark.parametrize("model", [LinearModel(5), MLPModel(5, (4, 3))])
@pytest.mark.parametrize("sparse", [False, True])
def test_model_backward_matches_finite_differences(model, sparse):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 5))
    if sparse:
        X[rng.uniform(size=X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    theta = model.init_params(rng) + rng.normal(size=model.n_params) * 0.3
    upstream = rng.normal(size=30)
    fun = lambda t: upstream @ model.scores(X, t)
    np.testing.assert_allclose(model.backward(X, theta, upstream), _fd(fun, theta), rtol=1e-5, atol=1e-7)
    design = Design(X)
    np.testing.assert_allclose(model.backward(design.X, theta, upstream, design.T), _fd(fun, theta), rtol=1e-5, atol=1e-7)
    thetas = np.stack([theta, theta * 0.5])
    np.testing.assert_allclose(model.scores_many(X, thetas)[:, 1], model.scores(X, theta * 0.5))


def test_design_switches_to_sparse_for_one_hot_data():
    X = np.zeros((20_000, 10))
    X[np.arange(20_000), np.arange(20_000) % 10] = 1.0
    assert sp.issparse(Design(X).X)
    assert not sp.issparse(Design(np.ones((20_000, 10))).X)


def test_stationary_distribution_is_a_fixed_point():
    rng = np.random.default_rng(3)
    for k in (2, 5, 30):
        M = rng.uniform(size=(k, k))
        M /= M.sum(axis=0)
        lam = stationary_distribution(M)
        assert lam.min() >= 0 and np.isclose(lam.sum(), 1.0)
        np.testing.assert_allclose(M @ lam, lam, atol=1e-12)


def test_swap_regret_player_moves_weight_to_violated_constraints():
    player = SwapRegretPlayer(3, learning_rate=1.0)
    for _ in range(200):
        player.update(np.array([0.2, -0.1, -0.3]))
        lam = player.weights()
        np.testing.assert_allclose(np.exp(player.log_M) @ lam, lam, atol=1e-10)
    assert np.argmax(lam) == 1  # index 0 is the objective; constraint 1 (violated) dominates
    assert lam[2] < 1e-3 and lam[3] < 1e-3
    # once every constraint holds, the objective takes the weight back
    for _ in range(400):
        player.update(np.array([-0.2, -0.1, -0.3]))
    assert np.argmax(player.weights()) == 0


def test_external_regret_and_lagrange_players():
    ext = ExternalRegretPlayer(2, learning_rate=0.5)
    ext.update(np.array([1.0, -1.0]))
    w = ext.weights()
    np.testing.assert_allclose(w, np.exp([0.0, 0.5, -0.5]) / np.exp([0.0, 0.5, -0.5]).sum())
    lag = LagrangePlayer(2, learning_rate=0.5, radius=0.7)
    lag.update(np.array([1.0, -1.0]))
    np.testing.assert_allclose(lag.weights(), [1.0, 0.5, 0.0])
    lag.update(np.array([1.0, -1.0]))
    np.testing.assert_allclose(lag.weights(), [1.0, 0.7, 0.0])  # clipped at the radius


def _rate_problem(n, seed):
    from skrate.problem import GroupTable, RateData, compile_problem
    from skrate.rates import as_constraints, as_expression

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    g = {"race": rng.choice(np.array(["a", "b", "c"]), size=n), "sex": rng.choice(np.array(["f", "m"]), size=n)}
    data = RateData(y, rng.uniform(0.5, 2.0, size=n), GroupTable.from_input(g, None, n))
    return compile_problem(as_expression("error_rate + 0.5 * fpr"),
                           as_constraints(["tpr[race] >= tpr - 0.05", "ppr[sex] <= ppr + 0.05"]), data)


@pytest.mark.parametrize("model", [LinearModel(6), MLPModel(6, (5,))])
@pytest.mark.parametrize("sparse", [False, True])
def test_chunked_candidate_rates_equal_the_dense_evaluation(model, sparse):
    from skrate.solvers._rate_game import candidate_values, decision_rates

    n = 1000
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 6))
    if sparse:
        X[rng.uniform(size=X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    problem = _rate_problem(n, seed=5)
    params = np.vstack([model.init_params(rng) + rng.normal(size=model.n_params) for _ in range(7)])
    dense = problem.values((model.scores_many(X, params) > 0).astype(float))
    # one block is the plain product; 128 rows a block (8 blocks, the last short) sums the blocks'
    for chunk in (n, 128, 999):
        np.testing.assert_allclose(decision_rates(model, X, params, problem.basis, chunk_rows=chunk),
                                   problem.basis @ (model.scores_many(X, params) > 0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(candidate_values(problem, model, X, params, chunk_rows=chunk), dense,
                                   rtol=0, atol=1e-12)
        # a subset of the rows measures only the basic rates it uses, to the same values
        np.testing.assert_allclose(candidate_values(problem, model, X, params, [0], chunk_rows=chunk), dense[:1],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(candidate_values(problem, model, X, params, slice(1, None), chunk_rows=chunk),
                                   dense[1:], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(candidate_values(problem, model, X, params, chunk_rows=n), dense)


def test_candidate_blocks_shrink_as_the_candidates_grow(monkeypatch):
    # a thousand candidates were scored 65536 rows at a time: a 500 MiB block of scores
    from skrate.solvers import _rate_game
    from skrate.solvers._rate_game import CHUNK_ROWS, candidate_decisions, chunk_rows_for, decision_rates

    assert chunk_rows_for(1) == chunk_rows_for(100) == CHUNK_ROWS  # as before up to 100 candidates
    model = LinearModel(3)
    blocks = []
    scores_many = model.scores_many
    monkeypatch.setattr(model, "scores_many", lambda X, params: blocks.append(X.shape[0] * params.shape[0])
                        or scores_many(X, params))
    monkeypatch.setattr(_rate_game, "CHUNK_ROWS", 40)  # 4000 entries a block
    rng = np.random.default_rng(0)
    X, params = rng.normal(size=(1000, 3)), rng.normal(size=(250, model.n_params))
    decisions = candidate_decisions(model, X, params)
    np.testing.assert_array_equal(decisions, scores_many(X, params) > 0)
    basis = sp.csr_matrix(rng.uniform(size=(2, 1000)))
    np.testing.assert_allclose(decision_rates(model, X, params, basis), basis @ decisions, rtol=1e-12)
    assert max(blocks) <= 4000 and len(blocks) == 2 * -(-1000 // 16)


def test_forward_cache_gives_the_backward_of_a_fresh_forward_pass():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 4))
    for model in (LinearModel(4), MLPModel(4, (3, 2))):
        theta = model.init_params(rng) + rng.normal(size=model.n_params) * 0.3
        scores, cache = model.forward(X, theta)
        np.testing.assert_array_equal(scores, model.scores(X, theta))
        upstream = rng.normal(size=50)
        np.testing.assert_array_equal(model.backward(X, theta, upstream, cache=cache), model.backward(X, theta, upstream))


def test_swap_player_warm_power_steps_give_the_stationary_distribution():
    # power steps from the last distribution replace the O(k^3) solve when they converge; a few
    # weights are solved for directly
    rng = np.random.default_rng(7)
    for m, eta in ((3, 2.0), (31, 50.0), (32, 0.5), (300, 0.5), (300, 50.0)):
        player = SwapRegretPlayer(m, eta)
        for _ in range(40):
            player.update(rng.normal(scale=0.1, size=m))
            M = np.exp(player.log_M)
            exact = stationary_distribution(M)
            np.testing.assert_allclose(player.weights(), exact, rtol=0, atol=1e-12)
            np.testing.assert_allclose(M @ player.weights(), player.weights(), rtol=0, atol=1e-13)


def _slow_mixing(k, rng, leak=0.02):
    """A positive column-stochastic matrix whose chain crosses between two halves of its states
    with probability about ``leak``: an eigenvalue near ``1 - leak``, where power steps stall."""
    half = k // 2
    M = np.zeros((k, k))
    for rows in (slice(0, half), slice(half, k)):
        u = rng.uniform(size=rows.stop - rows.start)
        M[rows, rows] = (u / u.sum())[:, None]
    R = rng.uniform(size=(k, k))
    return (1 - leak) * M + leak * R / R.sum(axis=0)


def test_swap_player_large_k_stationary_distribution_is_the_dense_solve(monkeypatch):
    # from 128 weights on, a Krylov solve replaces power steps; on a slowly mixing chain with
    # 1,201 weights it must give the dense solve's fixed point to rounding, without the solve
    from skrate.solvers import _players

    rng = np.random.default_rng(11)
    k = 1201
    M = _slow_mixing(k, rng)
    eps = np.finfo(float).eps
    exact = stationary_distribution(M)
    lam = np.full(k, 1.0 / k)
    for _ in range(_players._POWER_STEPS):
        lam = M @ lam
    assert np.abs(M @ lam - lam).sum() > 1e-6  # the power steps would stall here
    start = stationary_distribution(_slow_mixing(k, np.random.default_rng(12)))  # the last step's

    def no_dense_solve(M):
        raise AssertionError("the dense solve was called")

    monkeypatch.setattr(_players, "stationary_distribution", no_dense_solve)
    lam = _players._warm_stationary(M, start)
    assert lam.min() >= 0 and abs(lam.sum() - 1) <= 1e-15
    assert np.abs(M @ lam - lam).sum() <= k * eps  # the stated tolerance: k units of rounding
    assert np.abs(M @ exact - exact).sum() <= k * eps  # which the dense solve meets too
    np.testing.assert_allclose(lam, exact, rtol=0, atol=1e-15)
    assert np.abs(lam - exact).sum() <= 1e-12


def test_swap_player_krylov_solve_falls_back_to_the_dense_solve(monkeypatch):
    # a Krylov basis too small to converge returns None, and the dense solve takes over
    from skrate.solvers import _players

    rng = np.random.default_rng(13)
    M = _slow_mixing(300, rng)
    exact = stationary_distribution(M)
    monkeypatch.setattr(_players, "_KRYLOV_DIM", 1)
    assert _players._krylov_stationary(M, np.full(300, 1 / 300)) is None
    np.testing.assert_array_equal(_players._warm_stationary(M, np.full(300, 1 / 300)), exact)


def test_swap_player_blocked_update_is_the_whole_matrix_update():
    # the update works on blocks of rows to stay in cache: with up to 256 weights one block,
    # the same operations as on the whole matrix to the bit; beyond, equal to rounding
    from skrate.solvers._players import _log_normalize

    rng = np.random.default_rng(14)
    for m, eta in ((31, 50.0), (32, 2.0), (200, 40.0), (700, 150.0)):
        player = SwapRegretPlayer(m, eta)
        assert (len(player._blocks) > 1) == (m == 700)
        log_M = player.log_M
        for t in range(6):
            grad = np.r_[0.0, rng.normal(scale=0.1, size=m) + (0.05 if t < 3 else -0.05)]
            lam = player.weights().copy()
            player.update(grad[1:])
            log_M = _log_normalize(log_M + eta * np.outer(grad, lam), axis=0)
            if m <= 255:
                np.testing.assert_array_equal(player.log_M, log_M)
                np.testing.assert_array_equal(player.M, np.exp(log_M))
            else:
                np.testing.assert_allclose(player.log_M, log_M, rtol=1e-14, atol=1e-12)
                np.testing.assert_allclose(player.M, np.exp(log_M), rtol=1e-12, atol=0)
            np.testing.assert_allclose(player.M.sum(axis=0), 1.0, rtol=1e-14)
            log_M = player.log_M  # each step from the player's matrix: rounding does not pile up


def test_cell_vectors_go_through_the_factors_of_a_rule_over_many_values(monkeypatch):
    # ppr[region] >= 0.8 * ppr over 300 regions: every row of K reads the overall rate's 300
    # cells (90,000 entries) where mix and unit hold about 4 per region
    from skrate.problem import CellMatrix, CellVectors, GroupTable, RateData, compile_factored, expand_constraints
    from skrate.problem._cells import _Factored
    from skrate.rates import as_constraints

    rng = np.random.default_rng(15)
    n = 3000
    groups = {"region": rng.integers(0, 300, n).astype(str)}
    data = RateData(rng.integers(0, 2, n), rng.uniform(0.5, 2.0, n), GroupTable.from_input(groups, None, n))
    exprs = [c.expression for c in expand_constraints(as_constraints("ppr[region] >= 0.8 * ppr"), data.groups)]
    mix, basis, _ = compile_factored(exprs, data)
    A = sp.csr_matrix(mix @ basis).toarray()
    cells = CellMatrix.from_factors(mix, basis)
    assert cells.K.nnz > 10 * (cells.factors[0].nnz + cells.factors[1].nnz)
    x, v = (rng.random(n) > 0.5).astype(float), rng.normal(size=A.shape[0])
    assert isinstance(CellVectors(cells).K, np.ndarray)  # 300 x 300: dense
    monkeypatch.setattr(CellVectors, "DENSE_K_MAX", 0)
    for matrix, kind in ((cells, _Factored), (CellMatrix(cells.K, cells.P), sp.csr_matrix)):  # no factors: K
        vectors = CellVectors(matrix)
        assert isinstance(vectors.K, kind)
        np.testing.assert_allclose(vectors.matvec(x), A @ x, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(vectors.rmatvec(v), A.T @ v, rtol=1e-12, atol=1e-18)


def test_minibatch_rates_estimate_the_full_rates():
    # with the model held still (learning rate 0), the rates a minibatch measures and the players
    # see are unbiased estimates of the rates on all rows: their mean over many batches is those
    from skrate.solvers._rate_game import solve_rate_game

    n = 1000
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 6))
    problem, model = _rate_problem(n, seed=5), LinearModel(6)
    theta = model.init_params(rng) + rng.normal(size=model.n_params)
    seen = []
    solve_rate_game(problem, model, X, learning_rate=0.0, max_iter=500, batch_size=100, rng=rng, init_params=theta,
                    callback=lambda t, params, values: seen.append(values.copy()))
    full = problem.values((model.scores(X, theta) > 0).astype(float))
    np.testing.assert_allclose(np.mean(seen, axis=0), full, atol=0.01)


def test_the_l2_penalty_shrinks_the_weights_it_covers():
    from sklearn.datasets import make_classification

    from skrate import ConstrainedClassifier

    X, y = make_classification(400, 5, random_state=0)
    g = np.where(X[:, 0] > 0, "a", "b")
    norms = [np.linalg.norm(ConstrainedClassifier("ppr[group=a] >= 0.3", alpha=alpha, max_iter=300, random_state=0)
                            .fit(X, y, groups=g).candidates_[-1, :-1]) for alpha in (0.0, 1.0)]
    assert norms[1] < 0.5 * norms[0]


def test_the_mlp_penalty_covers_its_weights_and_not_its_biases():
    model = MLPModel(3, (4, 2))
    mask = model.penalty_mask()
    layers = model._unpack(np.arange(model.n_params, dtype=float))
    biases = np.concatenate([b.astype(int).ravel() for _, b in layers])
    weights = np.concatenate([W.astype(int).ravel() for W, _ in layers])
    assert np.all(mask[biases] == 0) and np.all(mask[weights] == 1)
    assert len(biases) + len(weights) == model.n_params
