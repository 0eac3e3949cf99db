"""Trimmed estimation: capped-simplex projection, SMART, concentration steps, estimators."""

import itertools
import re
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.datasets import load_breast_cancer, load_iris, make_classification
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import cross_val_score
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

import skrate._capped_simplex as capped
import skrate._smart
import skrate._trimmed
from skrate import TrimmedClassifier, TrimmedRegressor
from skrate._capped_simplex import project_capped_simplex
from skrate._kept_set import KeptSet
from skrate._concentration import concentration_steps, fit_weighted
from skrate._smart import smart
from skrate._trimmed_location import trimmed_location
from skrate._trimmed_losses import CURVATURE, hard_threshold, linear_loss, loss_curvature, penalty_value
from skrate._centred_columns import GRAM_MAX
from skrate._trimmed_problem import TrimmedProblem, column_scaling


# ------------------------------------------------------------------ projection
@pytest.mark.parametrize("seed", range(6))
def test_capped_simplex_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    v = rng.normal(scale=[0.3, 1.0, 5.0][seed % 3], size=n)
    if seed % 2:
        v = np.round(v)  # ties among entries and breakpoints
    h = float(rng.uniform(0.5, n - 0.5))
    v_before = v.copy()
    w = project_capped_simplex(v, h)
    x = cp.Variable(n)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, x <= 1, cp.sum(x) == h]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(w, x.value, atol=1e-6)
    assert np.all((w >= 0) & (w <= 1))
    assert w.sum() == pytest.approx(h, abs=1e-9)
    np.testing.assert_array_equal(v, v_before)


@pytest.mark.parametrize("seed", range(40))
def test_capped_simplex_shift_by_newton_matches_the_sorted_breakpoints(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    v = rng.normal(scale=[0.01, 1.0, 30.0][seed % 3], size=n)
    if seed % 4 == 1:
        v = np.round(v, 1)  # ties among entries and breakpoints
    upper = rng.integers(1, 4, size=n).astype(float) if seed % 2 else None
    groups, floors = None, None
    if seed % 5 < 2:
        groups = rng.integers(0, 2, size=n)
        groups[:2] = [0, 1]
        floors = rng.uniform(0, 1, size=2) * np.bincount(groups, weights=upper, minlength=2)
    total = n if upper is None else upper.sum()
    h = float(rng.uniform(0 if floors is None else floors.sum(), total))
    newton, by_sort = capped._shift, capped._shift_sorted
    fallbacks = []
    monkeypatch.setattr(capped, "_shift_sorted", lambda *a: fallbacks.append(a) or by_sort(*a))
    w = project_capped_simplex(v, h, groups, floors, upper)
    assert not fallbacks  # Newton found every shift by itself
    monkeypatch.setattr(capped, "_shift", by_sort)
    expected = project_capped_simplex(v, h, groups, floors, upper)
    np.testing.assert_allclose(w, expected, rtol=0, atol=1e-10)
    assert w.sum() == pytest.approx(h, rel=1e-12, abs=1e-9)
    # past its steps, Newton hands over to the sorted breakpoints
    monkeypatch.setattr(capped, "_shift", newton)
    monkeypatch.setattr(capped, "_shift_sorted", by_sort)
    monkeypatch.setattr(capped, "_NEWTON_STEPS", 0)
    np.testing.assert_array_equal(project_capped_simplex(v, h, groups, floors, upper), expected)


@pytest.mark.parametrize("seed", range(30))
def test_capped_simplex_shift_by_newton_on_grid_values(seed):
    # values on a grid put Newton's iterates on breakpoints, where the slope towards the
    # root must count the entries whose segment starts or ends there: [0, 0.5] at h = 0.8
    # projected to [0.3, 0.8] when they were left out
    np.testing.assert_allclose(project_capped_simplex(np.array([0.0, 0.5]), 0.8), [0.15, 0.65], atol=1e-15)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    if seed % 2:  # a weight step's shape: 0/1 weights minus steps on a quarter grid
        v = (rng.random(n) < 0.8) - rng.integers(0, 8, size=n) / 4
    else:
        v = rng.integers(-6, 6, size=n) / 2
    upper = rng.integers(1, 3, size=n).astype(float) if seed % 3 == 0 else None
    total = n if upper is None else upper.sum()
    h = float(rng.integers(1, 2 * total) / 2) if seed % 5 else float(rng.uniform(0, total))
    w = project_capped_simplex(v, h, upper=upper)
    assert w.sum() == pytest.approx(h, rel=1e-12, abs=1e-12)
    x = cp.Variable(n)
    bound = 1.0 if upper is None else upper
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, x <= bound, cp.sum(x) == h]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(w, x.value, atol=1e-6)


def test_capped_simplex_projection_edges_and_kkt():
    rng = np.random.default_rng(0)
    v = rng.normal(size=50)
    np.testing.assert_array_equal(project_capped_simplex(v, 0), np.zeros(50))
    np.testing.assert_array_equal(project_capped_simplex(v, 50), np.ones(50))
    # points inside the set are fixed
    inside = project_capped_simplex(v, 17.0)
    np.testing.assert_allclose(project_capped_simplex(inside, 17.0), inside, atol=1e-12)
    # KKT: w = clip(v - tau) with one tau for all fractional entries
    frac = (inside > 1e-12) & (inside < 1 - 1e-12)
    assert np.ptp((v - inside)[frac]) < 1e-9
    # large steps on integers h select the h largest entries
    np.testing.assert_array_equal(
        project_capped_simplex(1e6 * v, 10) == 1, np.isin(np.arange(50), np.argsort(v)[-10:])
    )
    with pytest.raises(ValueError, match="h <= n"):
        project_capped_simplex(v, 51)


@pytest.mark.parametrize("with_floors", [False, True])
def test_capped_simplex_projection_of_entries_far_below_is_zero(with_floors):
    # A projected-gradient step along a huge or an inf loss (a gross target) gives an
    # entry where v - 1 rounds to v, or -inf: it lost its breakpoint segment (the
    # weights summed to h minus the number of such entries) or made them NaN
    rng = np.random.default_rng(0)
    v = rng.normal(size=30)
    groups, floors = (np.arange(30) % 2, np.array([5.0, 5.5])) if with_floors else (None, None)
    far = [3, 8, 11]
    v_moderate = v.copy()
    v_moderate[far] = -1e3
    expected = project_capped_simplex(v_moderate, 12.5, groups, floors)
    assert expected.sum() == pytest.approx(12.5)
    for value in (-1e20, -1e300, -np.inf):
        v_far = v.copy()
        v_far[far] = value
        w = project_capped_simplex(v_far, 12.5, groups, floors)
        np.testing.assert_array_equal(w[far], 0.0)
        np.testing.assert_array_equal(w, expected)


@pytest.mark.parametrize("seed", range(6))
def test_capped_simplex_projection_with_group_floors_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 40))
    groups = rng.integers(0, 3, size=n)
    groups[:3] = [0, 1, 2]
    counts = np.bincount(groups)
    floors = np.array([rng.integers(0, c + 1) for c in counts], dtype=float)
    v = rng.normal(scale=3.0, size=n)
    if seed % 2:
        v = np.round(v)  # ties
    h = float(rng.uniform(floors.sum(), n))
    w = project_capped_simplex(v, h, groups, floors)
    x = cp.Variable(n)
    cons = [x >= 0, x <= 1, cp.sum(x) == h]
    cons += [cp.sum(x[groups == k]) >= floors[k] for k in range(3)]
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), cons).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(w, x.value, atol=1e-5)
    assert np.all(np.bincount(groups, weights=w) >= floors - 1e-9)
    assert w.sum() == pytest.approx(h, abs=1e-9)
    with pytest.raises(ValueError, match="sum\\(floors\\) <= h"):
        project_capped_simplex(v, floors.sum() - 0.5, groups, floors)


@pytest.mark.parametrize("seed", range(4))
def test_exact_weight_block_with_floors_solves_the_linear_program(seed):
    rng = np.random.default_rng(seed)
    n = 30
    groups = np.repeat([0, 1, 2], [18, 8, 4])
    floors = np.array([5, 4, 2])
    losses = rng.exponential(size=n) * np.where(groups == 0, 1.0, 5.0)  # small groups worse
    P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", 20.0, groups=groups, floors=floors)
    w = P.keep_smallest(losses)
    res = linprog(
        losses,
        A_ub=-np.eye(3)[groups].T,
        b_ub=-floors,
        A_eq=np.ones((1, n)),
        b_eq=[20],
        bounds=(0, 1),
    )
    assert set(np.unique(w)) <= {0.0, 1.0} and w.sum() == 20
    assert np.all(np.bincount(groups, weights=w) >= floors)
    assert w @ losses == pytest.approx(res.fun, rel=1e-10)


def _keep_smallest_by_sorting(losses, h, groups, floors):
    """Reference exact weight block: a stable sort by (group, loss) gives each group's
    floor, then argpartition the rest (as the selection without floors does)."""
    w = np.zeros(losses.shape[0])
    order = np.lexsort((losses, groups))
    g = groups[order]
    counts = np.bincount(g, minlength=len(floors))
    rank = np.arange(order.size) - (np.cumsum(counts) - counts)[g]
    w[order[rank < floors[g]]] = 1.0
    rest = np.flatnonzero(w == 0)
    m = h - int(w.sum())
    if m > 0:
        w[rest[np.argpartition(losses[rest], m - 1)[:m]]] = 1.0
    return w


def _random_floors_case(rng, trial):
    n = int(rng.integers(1, 80))
    n_groups = int(rng.integers(1, 5))
    groups = rng.integers(0, n_groups, n)
    counts = np.bincount(groups, minlength=n_groups)
    # half of each group (the classifier's), or anything from none to more than it has
    floors = -(-counts // 2) if trial % 2 else rng.integers(0, counts + 2)
    return n, groups, floors


def test_keep_smallest_with_floors_matches_the_sorting_reference():
    rng = np.random.default_rng(0)
    for trial in range(600):
        n, groups, floors = _random_floors_case(rng, trial)
        h = int(rng.integers(0, n + 1))
        # ties within and across groups, at and around the cuts; NaN and inf losses
        losses = rng.integers(0, 4, n).astype(float) if trial % 3 == 0 else rng.random(n)
        if trial % 7 == 0:
            losses[rng.random(n) < 0.2] = np.nan
        if trial % 5 == 0:
            losses[rng.random(n) < 0.2] = np.inf
        P = TrimmedProblem(
            np.zeros((n, 1)), np.zeros(n), "squared", h, groups=groups, floors=floors
        )
        expected = _keep_smallest_by_sorting(losses, h, groups, floors)
        np.testing.assert_array_equal(P.keep_smallest(losses), expected)


@pytest.mark.parametrize("with_floors", [False, True])
def test_incremental_weight_block_equals_the_full_selection(with_floors):
    # SMART's exact weight block follows the loss table a minibatch at a time; each
    # update must give exactly keep_smallest of the table (same rows, ties included)
    # and the largest kept / least trimmed loss.
    rng = np.random.default_rng(1)
    n_fast = 0
    for trial in range(60):
        n = int(rng.integers(20, 300))
        kw = {}
        if with_floors:
            n, groups, floors = _random_floors_case(rng, trial)
            n = groups.size
            kw = dict(groups=groups, floors=floors)
        if n < 2:
            continue
        h = int(rng.integers(1, n + 1))
        P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", h, **kw)
        kept_set = KeptSet(P, bucket=int(rng.integers(1, 12)))
        ties = trial % 3 == 0
        losses = rng.integers(0, 30, n).astype(float) if ties else rng.random(n)
        w = np.full(n, h / n)
        batch = int(rng.integers(1, 20))
        for step in range(40):
            if step == 20:
                kept_set.reset()  # a new epoch
            rows = rng.choice(n, size=min(batch, n), replace=False)
            new = np.abs(losses[rows] + rng.normal(0, 0.05 if step % 10 else 1.0, rows.size))
            losses[rows] = np.round(new, 1) if ties else new
            if trial % 10 == 0 and step in (30, 31):  # a NaN loss for one update
                losses[rows[:1]] = np.nan if step == 30 else 0.5
            kept_set.touch(rows)
            if rng.random() < 0.3:
                continue  # several minibatches between weight steps
            fast = kept_set.valid
            idx, w_idx, top, low = kept_set.update(losses, w)
            expected = P.keep_smallest(losses)
            kept = expected > 0
            np.testing.assert_array_equal(idx, np.flatnonzero(expected != w))
            np.testing.assert_array_equal(w_idx, expected[idx])
            np.testing.assert_array_equal(
                [top, low],
                [
                    losses[kept].max() if kept.any() else -np.inf,
                    losses[~kept].min() if not kept.all() else np.inf,
                ],
            )
            n_fast += fast and kept_set.valid
            w[idx] = w_idx
    assert n_fast > 500  # the incremental path was taken, not only full selections


def _update_matches_full_selection(kept_set, P, rows, losses, w):
    """Touch ``rows``, update, and check the changed weights and the cut's losses against the full
    selection ``keep_smallest``; ``w`` takes the new weights."""
    kept_set.touch(rows)
    idx, w_idx, top, low = kept_set.update(losses, w)
    expected = P.keep_smallest(losses)
    kept = expected > 0
    np.testing.assert_array_equal(idx, np.flatnonzero(expected != w))
    np.testing.assert_array_equal(w_idx, expected[idx])
    assert top == (losses[kept].max() if kept.any() else -np.inf)
    assert low == (losses[~kept].min() if not kept.all() else np.inf)
    w[idx] = w_idx


def test_incremental_weight_block_with_floors_equals_the_full_selection_on_few_loss_levels():
    # Integer losses of a few levels: runs of equal losses at the zone bounds and across the
    # cuts, where the full selection breaks ties by row order. A row whose loss equals the
    # lower zone bound may lie beyond the cut: it belongs near the cut, not among the rows
    # kept whatever happens, or it keeps the weight of an older selection.
    rng = np.random.default_rng(2)
    for trial in range(100):
        n, groups, floors = _random_floors_case(rng, trial)
        if n < 2:
            continue
        h = int(rng.integers(1, n + 1))
        P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", h, groups=groups,
                           floors=floors)
        kept_set = KeptSet(P, bucket=int(rng.integers(1, 3)))
        levels = int(rng.integers(3, 20))
        losses = rng.integers(0, levels, n).astype(float)
        w = np.full(n, h / n)
        for step in range(60):
            rows = rng.choice(n, size=min(int(rng.integers(1, 8)), n), replace=False)
            losses[rows] = rng.integers(0, levels, rows.size)
            _update_matches_full_selection(kept_set, P, rows, losses, w)


def _check_filing(kept_set, losses):
    # every row filed once, in the bucket of its loss, within its bucket's room; the counts
    # those of the filing
    ks, n = kept_set, losses.size
    G = ks.f.size + 1
    np.testing.assert_array_equal(ks.bk, np.searchsorted(ks.edges, losses, side="right"))
    np.testing.assert_array_equal(ks.cnt, np.bincount(ks.cls * ks.nbp + ks.bk, minlength=G * ks.nbp))
    np.testing.assert_array_equal(ks.ccnt, ks.cnt.reshape(G, -1, 64).sum(axis=2).ravel())
    np.testing.assert_array_equal(ks.slot_row[ks.pos], np.arange(n))
    assert np.all((ks.pos >= ks.base[ks.bk]) & (ks.pos < ks.base[ks.bk] + ks.fill[ks.bk]))
    assert np.all(ks.fill <= ks.cap)


@pytest.mark.parametrize("case", ["plain", "floors", "ties"])
def test_incremental_weight_block_over_many_buckets_equals_the_full_selection(case):
    # Thousands of rows in buckets of a few: cuts found across chunks of buckets, losses that
    # drift down (rows pile into the lowest buckets, which run out of room and move), then
    # up, minibatches of 1 to 300 rows. After every update: the full selection's result
    # exactly, and a consistent filing.
    rng = np.random.default_rng(7)
    n = 6000
    kw = {}
    if case != "plain":
        groups = rng.integers(0, 3, n)
        kw = dict(groups=groups, floors=-(-np.bincount(groups) // 2) + np.array([0, 300, 0]))
    P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", n - 700, **kw)
    calls = {"full": 0, "moved": 0}

    class Counted(KeptSet):
        def _full(self, *a):
            calls["full"] += 1
            return super()._full(*a)

        def _place(self, buckets, *a):
            calls["moved"] += buckets.size < self.nbp
            return super()._place(buckets, *a)

    kept_set = Counted(P, bucket=3)
    losses = rng.exponential(size=n)
    if case == "ties":
        losses = np.round(losses, 2)
    w = np.zeros(n)
    for step in range(600):
        rows = rng.choice(n, size=int(rng.integers(1, 300)), replace=False)
        drift = 0.7 if step < 400 else 1.3
        new = losses[rows] * drift * rng.uniform(0.9, 1.1, rows.size)
        losses[rows] = np.round(new, 2) if case == "ties" else new
        _update_matches_full_selection(kept_set, P, rows, losses, w)
        if kept_set.valid:
            _check_filing(kept_set, losses)
    assert calls["moved"] > 10  # buckets ran out of room and moved
    if case != "ties":
        assert calls["full"] < 60  # selections from the buckets, not the full one


def test_weight_block_with_caps_is_the_full_selection():
    # with caps the selection is a sort: never from the buckets, whatever asked
    rng = np.random.default_rng(8)
    n = 300
    caps = rng.uniform(0.5, 2.0, n)
    P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", 0.8 * caps.sum(), caps=caps)
    kept_set = KeptSet(P, bucket=2)
    assert not kept_set.incremental
    losses, w = rng.random(n), np.zeros(n)
    for _ in range(30):
        rows = rng.choice(n, 20, replace=False)
        losses[rows] = rng.random(20)
        kept_set.touch(rows)
        idx, w_idx, _, _ = kept_set.update(losses, w)
        w[idx] = w_idx
        np.testing.assert_array_equal(w, P.keep_smallest(losses))


@pytest.mark.parametrize(
    "loss, params",
    [
        ("squared", {}),
        ("squared", {"block": "random"}),
        ("logistic", {}),
        ("logistic", {"variance_reduction": "svrg"}),
        ("multinomial", {"block": "random"}),
    ],
)
def test_smart_iterates_do_not_depend_on_the_incremental_weight_block(
    monkeypatch, loss, params
):
    rng = np.random.default_rng(3)
    n = 500
    X = np.round(rng.standard_normal((n, 4)))  # repeated rows: tied losses
    s = X @ rng.standard_normal(4)
    kw = {}
    if loss == "squared":
        Y = s + 0.3 * rng.standard_normal(n)
        Y[:50] += 20
    else:
        y = (s > 1.0).astype(int) if loss == "logistic" else np.digitize(s, [-1.0, 1.5])
        y[:50] = rng.integers(0, y.max() + 1, 50)  # noisy labels, imbalanced classes
        Y = 2.0 * y - 1 if loss == "logistic" else np.eye(3)[y]
        kw = dict(groups=y, floors=-(-np.bincount(y) // 2))
    fits = []
    for min_rows in (0, n + 1):  # incremental from 0 rows on, or never
        monkeypatch.setattr(skrate._smart, "_KEPT_SET_MIN_ROWS", min_rows)
        monkeypatch.setattr(skrate._smart, "_KEPT_SET_BUCKET", 1 / 32)
        P = TrimmedProblem(X, Y, loss, n - 60, alpha=1e-3, **kw)
        fits.append(smart(P, rng=np.random.default_rng(0), batch_size=32, **params))
    a, b = fits
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.objective == b.objective and a.n_iter == b.n_iter


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_smart_exact_weight_steps_are_keep_smallest_of_the_loss_table(monkeypatch, loss):
    # The default weight step is the exact block minimiser, keep_smallest of the loss table
    # after the minibatch step; it is only recomputed when a touched row may cross the cut
    # (a kept loss rising above the least trimmed one or a trimmed one falling below the
    # largest kept), and the weights must be those of a full selection after every step.
    # One-row minibatches: batches that hold only kept or only trimmed rows.
    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 3))
    s = X @ np.array([1.0, -1.0, 0.5])
    if loss == "squared":
        Y = s + 0.3 * rng.normal(size=n)
        Y[:20] += 20 * rng.normal(size=20)
    else:
        y = (s + 0.3 * rng.normal(size=n) > 0).astype(float)
        y[:20] = 1 - y[:20]
        Y = 2 * y - 1
    P = TrimmedProblem(X, Y, loss, h=n - 25, alpha=1e-3)
    seen = {"table": None, "before": None, "checked": 0}  # the epoch's table and weights

    class Checked(KeptSet):
        def reset(self):  # a new epoch: new table
            seen["table"] = seen["before"] = None
            super().reset()

        def update(self, losses, w):
            seen["table"] = (losses, w)
            return super().update(losses, w)

        def touch(self, rows):
            # called once a step has written its batch's losses: the weights are those of the
            # previous step's weight step, on the table as it was then
            if seen["table"] is not None:
                losses, w = seen["table"]
                if seen["before"] is not None:
                    np.testing.assert_array_equal(w, P.keep_smallest(seen["before"]))
                    seen["checked"] += 1
                seen["before"] = losses.copy()
            super().touch(rows)

    monkeypatch.setattr(skrate._smart, "KeptSet", Checked)
    smart(P, rng=np.random.default_rng(1), max_iter=3, batch_size=1, polish=False, tol=1e-12)
    assert seen["checked"] > 2 * n


def test_start_intercept_is_the_trimmed_location():
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(size=7), [40.0, 45.0, 50.0]]
    h = 6
    P = TrimmedProblem(np.zeros((10, 1)), y, "squared", float(h))
    # the best constant fit to h of the values: over every subset of h
    subsets = np.array(list(itertools.combinations(range(10), h)))
    spread = ((y[subsets] - y[subsets].mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    best = y[subsets[np.argmin(spread)]]
    assert P.start_intercept()[0] == pytest.approx(best.mean())
    assert P.start_intercept()[0] < 2  # the mean of all values is 14
    assert trimmed_location(y, h) == pytest.approx((best.mean(), best.std()))
    # without an intercept: 0 and the root mean square of the h smallest in magnitude
    small = y[np.argsort(np.abs(y))[:h]]
    assert trimmed_location(y, h, centre=False) == pytest.approx((0.0, np.sqrt(np.mean(small**2))))


@pytest.mark.parametrize("h", [7.0, 7.5])
def test_start_weights_are_a_point_of_the_weight_set(h):
    # SMART starts from weights in {0 <= w <= 1, sum w = h}: for the squared loss and a whole
    # h, the h smallest losses at the start model (the gross target trimmed); a fractional h
    # has no 0/1 point there, and the start is the uniform h / n.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 1))
    y = X[:, 0].copy()
    y[0] = 50.0
    P = TrimmedProblem(X, y, "squared", h)
    W, b = P.start_model()
    losses = P.losses(W, b)
    w = P.start_weights(losses)
    assert np.all((w >= 0) & (w <= 1)) and w.sum() == pytest.approx(h, rel=1e-12)
    if h.is_integer():
        np.testing.assert_array_equal(w, P.keep_smallest(losses))
        assert w[0] == 0.0
    else:
        np.testing.assert_allclose(w, h / 10, rtol=1e-12)


def test_trimmed_location_ignores_gross_values_at_either_end():
    # values up to the largest floats, whose squares overflow, at both ends of the sort:
    # the location and scale are bitwise those with merely large values there
    y = np.random.default_rng(0).normal(size=100)
    gross, large = y.copy(), y.copy()
    gross[:3], gross[3:6] = -1e300, 1e200
    large[:3], large[3:6] = -1e3, 1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for h in (50, 94):
            assert trimmed_location(gross, h) == trimmed_location(large, h)
            assert trimmed_location(gross, h, False) == trimmed_location(large, h, False)
    assert trimmed_location(gross, 94) == pytest.approx((y[6:].mean(), y[6:].std()))


# ------------------------------------------------------------------ losses / prox
def _scores_and_targets(loss, K, seed, spread=1.0, m=7):
    rng = np.random.default_rng(seed)
    S = spread * rng.normal(size=(m, K))
    if loss == "squared":
        return S, rng.normal(size=m)
    if loss == "logistic":
        return S, rng.choice([-1.0, 1.0], size=m)
    return S, np.eye(K)[rng.integers(0, K, size=m)]


@pytest.mark.parametrize("loss,K", [("squared", 1), ("logistic", 1), ("multinomial", 4)])
def test_loss_derivative_matches_finite_differences(loss, K):
    S, Y = _scores_and_targets(loss, K, seed=1)
    f, D = linear_loss(loss, S, Y)
    eps = 1e-6
    for k in range(K):
        E = np.zeros_like(S)
        E[:, k] = eps
        fd = (linear_loss(loss, S + E, Y)[0] - linear_loss(loss, S - E, Y)[0]) / (2 * eps)
        np.testing.assert_allclose(D[:, k], fd, rtol=1e-6, atol=1e-8)
    if loss == "multinomial":  # against the textbook formula
        ref = np.log(np.exp(S).sum(axis=1)) - (S * Y).sum(axis=1)
        np.testing.assert_allclose(f, ref)


@pytest.mark.parametrize("loss,K", [("squared", 1), ("logistic", 1), ("multinomial", 4)])
def test_loss_curvature_matches_finite_differences(loss, K):
    S, Y = _scores_and_targets(loss, K, seed=2, spread=3.0)
    eps = 1e-6
    for k in range(K):
        E = np.zeros_like(S)
        E[:, k] = eps
        fd = (linear_loss(loss, S + E, Y)[1][:, k] - linear_loss(loss, S - E, Y)[1][:, k]) / (2 * eps)
        np.testing.assert_allclose(loss_curvature(loss, S, Y)[:, k], fd, rtol=1e-6, atol=1e-9)


def test_hard_threshold_is_the_l0_prox():
    v = np.linspace(-3, 3, 61)
    t = 0.8
    grid = np.linspace(-4, 4, 80001)
    grid = np.concatenate([grid, [0.0]])
    for vi, pi in zip(v, hard_threshold(v, t)):
        obj = 0.5 * (grid - vi) ** 2 + t * (grid != 0)
        best = grid[np.argmin(obj)]
        # away from the tie |v| = sqrt(2 t) the minimiser is unique
        if abs(abs(vi) - np.sqrt(2 * t)) > 1e-3:
            assert pi == pytest.approx(best, abs=1e-4)


# ------------------------------------------------------------------ data
def _regression_with_outliers(seed=0, n=300, d=5, frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    coef = rng.uniform(1, 3, size=d) * rng.choice([-1, 1], size=d)
    y = X @ coef + 0.5 + 0.05 * rng.normal(size=n)
    out = rng.choice(n, int(frac * n), replace=False)
    y[out] += rng.choice([-1, 1], size=out.size) * rng.uniform(20, 40, size=out.size)
    return X, y, coef, out


def _classification_with_flips(seed=0, n=400, d=4, n_classes=2, frac=0.1):
    rng = np.random.default_rng(seed)
    centers = 3.0 * rng.normal(size=(n_classes, d))
    y = rng.integers(0, n_classes, size=n)
    X = centers[y] + rng.normal(size=(n, d))
    flip = rng.choice(n, int(frac * n), replace=False)
    y_noisy = y.copy()
    y_noisy[flip] = (y[flip] + rng.integers(1, n_classes, size=flip.size)) % n_classes
    return X, y_noisy, flip


SMART_VARIANTS = [
    {"variance_reduction": "saga"},
    {"variance_reduction": "svrg"},
    {"variance_reduction": "saga", "block": "random"},
    {"variance_reduction": "svrg", "weight_step": 1.0},
    {"solver": "alternating"},
]


# ------------------------------------------------------------------ recovery
@pytest.mark.parametrize("params", SMART_VARIANTS)
def test_regressor_recovers_inliers_and_coefficients(params):
    X, y, coef, out = _regression_with_outliers()
    reg = TrimmedRegressor(trim_fraction=0.25, alpha=0.0, random_state=0, **params).fit(X, y)
    assert reg.n_inliers_ == 225
    assert not reg.inlier_mask_[out].any()
    assert reg.inlier_mask_.sum() == 225
    np.testing.assert_allclose(reg.coef_, coef, atol=0.03)
    assert reg.intercept_ == pytest.approx(0.5, abs=0.03)
    # a fixed point: the model is the least-squares fit on its own kept samples
    ref = Ridge(alpha=0.0).fit(X[reg.inlier_mask_], y[reg.inlier_mask_])
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=2e-3)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("params", SMART_VARIANTS[:2] + SMART_VARIANTS[-1:])
def test_classifier_trims_flipped_labels(n_classes, params):
    X, y, flip = _classification_with_flips(n_classes=n_classes)
    alpha = 1e-2
    clf = TrimmedClassifier(
        trim_fraction=0.12, alpha=alpha, random_state=0, tol=1e-6, max_iter=300, **params
    ).fit(X, y)
    h = clf.n_inliers_
    assert clf.inlier_mask_.sum() == h
    # nearly every flipped label is trimmed
    assert clf.inlier_mask_[flip].mean() < 0.1
    # the model is the penalised logistic fit on its own kept samples:
    # (1/h) sum log-loss + alpha/2 ||coef||^2  <=>  C = 1 / (alpha h)
    ref = LogisticRegression(C=1.0 / (alpha * h), tol=1e-10, max_iter=10000)
    ref.fit(X[clf.inlier_mask_], y[clf.inlier_mask_])
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=0.01, atol=0.03)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, rtol=0.01, atol=0.03)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])


def test_smart_and_concentration_steps_reach_the_same_objective():
    X, y, _, _ = _regression_with_outliers(seed=3)
    P = TrimmedProblem(X, y, "squared", 240.0, "l2", 1e-3, True)
    a = smart(P, tol=1e-8, max_iter=300, rng=np.random.default_rng(0))
    b = concentration_steps(P)
    assert a.objective[-1] == pytest.approx(b.objective[-1], rel=1e-4)
    np.testing.assert_array_equal(a.weights, b.weights)


# ------------------------------------------------------------------ objective
@pytest.mark.parametrize(
    "loss,params",
    [
        ("squared", {"variance_reduction": "saga"}),
        ("squared", {"variance_reduction": "svrg", "block": "random"}),
        ("multinomial", {"variance_reduction": "saga", "weight_step": 0.5}),
        ("logistic", {"variance_reduction": "svrg"}),
    ],
)
def test_smart_objective_decreases_monotonically(loss, params):
    if loss == "squared":
        X, y, _, _ = _regression_with_outliers(seed=1)
        Y = y
    else:
        X, y, _ = _classification_with_flips(seed=1, n_classes=3 if loss == "multinomial" else 2)
        Y = np.eye(3)[y] if loss == "multinomial" else np.where(y == 1, 1.0, -1.0)
    h = 0.8 * X.shape[0]
    P = TrimmedProblem(X, Y, loss, h, "l1", 1e-3, True)
    fit = smart(P, max_iter=40, tol=0, rng=np.random.default_rng(0), batch_size=16, **params)
    obj = np.asarray(fit.objective)
    assert len(obj) > 5
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])
    assert obj[-1] < 0.5 * obj[0]
    # the recorded value is the trimmed objective at the returned point
    assert obj[-1] == pytest.approx(P.objective(fit.coef, fit.intercept, fit.weights), rel=1e-12)


def test_full_batch_smart_is_monotone_at_every_step_without_safeguard():
    # batch = n: SAGA and SVRG reduce to prox-gradient with step 1/L_full, and the
    # weight block to exact minimisation, each of which cannot increase the
    # objective; an epoch is one step here, and every one must be accepted.
    X, y, _, _ = _regression_with_outliers(seed=2, n=120)
    P = TrimmedProblem(X, y, "squared", 100.0, "l2", 1e-2, True)
    L_full, _ = P.lipschitz()
    fit = smart(
        P,
        batch_size=120,
        max_iter=60,
        tol=0,
        step_size=1.0 / L_full,
        step_growth=1.0,
        rng=np.random.default_rng(0),
        polish=False,
    )
    obj = np.asarray(fit.objective)
    assert len(obj) == fit.n_iter + 1  # no epoch was rejected
    assert fit.n_iter > 10
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_final_objective_is_sum_of_h_smallest_losses(solver):
    X, y, _, _ = _regression_with_outliers(seed=4)
    reg = TrimmedRegressor(n_inliers=230, alpha=1e-3, solver=solver, random_state=0).fit(X, y)
    r2 = 0.5 * (y - reg.predict(X)) ** 2
    expected = np.sort(r2)[:230].sum() / 230 + 1e-3 * 0.5 * reg.coef_ @ reg.coef_
    assert isinstance(reg.objective_, float)
    assert reg.objective_ == pytest.approx(expected, rel=1e-8)
    assert set(np.flatnonzero(reg.inlier_mask_)) == set(np.argsort(r2)[:230])
    # the path starts at the initial point, ends at objective_ and never increases
    path = reg.objective_path_
    assert path.ndim == 1 and path.size >= 2
    assert path[-1] == reg.objective_
    assert np.all(np.diff(path) <= 1e-12 * path[0])
    assert path[0] > reg.objective_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=2
@pytest.mark.parametrize("weight_step", [0.5, 5.0])
def test_objective_after_a_finite_weight_step_is_that_of_the_final_weights(weight_step):
    # A finite weight_step leaves fractional weights; the fit ends with the exact weight block
    # on the exact losses, and objective_ (the end of the path) is the objective of the
    # reported model and weights: (1/h) sum_i w_i loss_i plus the penalty.
    X, y, _, _ = _regression_with_outliers(seed=4)
    reg = TrimmedRegressor(n_inliers=230, alpha=1e-3, weight_step=weight_step, max_iter=2,
                           random_state=0).fit(X, y)
    losses = 0.5 * (y - reg.predict(X)) ** 2
    w = reg.sample_weights_
    expected = w[w > 0] @ losses[w > 0] / 230 + 1e-3 * 0.5 * reg.coef_ @ reg.coef_
    assert reg.objective_ == pytest.approx(expected, rel=1e-10)
    assert reg.objective_ == pytest.approx(np.sort(losses)[:230].sum() / 230
                                           + 1e-3 * 0.5 * reg.coef_ @ reg.coef_, rel=1e-10)
    assert reg.objective_path_[-1] == reg.objective_


# ------------------------------------------------------------------ convergence
@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
@pytest.mark.parametrize(
    "params",
    [{"variance_reduction": "saga"}, {"variance_reduction": "svrg"}, {"solver": "alternating"}],
)
def test_stopping_at_max_iter_warns_naming_max_iter_and_tol(Est, params):
    if Est is TrimmedRegressor:
        X, y, _, _ = _regression_with_outliers(seed=7)
    else:
        X, y, _ = _classification_with_flips(seed=7, n_classes=3)
    est = Est(max_iter=1, random_state=0, **params)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1\b.*tol="):
        est.fit(X, y)
    assert est.n_iter_ == 1
    check_is_fitted(est)  # a warning, not a failure: the fit is usable
    # given enough iterations the same fit meets its stopping test silently
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        converged = Est(max_iter=300, random_state=0, **params).fit(X, y)
    assert converged.n_iter_ < 300


@pytest.mark.parametrize(
    "data",
    [
        load_breast_cancer(return_X_y=True),
        load_iris(return_X_y=True),
        make_classification(n_samples=500, n_features=10, random_state=0),
    ],
    ids=["breast_cancer", "iris", "make_classification"],
)
@pytest.mark.parametrize("variance_reduction", ["saga", "svrg"])
def test_classifier_defaults_converge_on_standard_datasets(data, variance_reduction):
    X, y = data
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = TrimmedClassifier(random_state=0, variance_reduction=variance_reduction).fit(X, y)
    # converged to a fixed point: the penalised logistic fit on its own kept
    # samples, C = 1 / (alpha h), to within the default tolerance
    keep, h = clf.inlier_mask_, clf.n_inliers_
    ref = LogisticRegression(C=1.0 / (1e-4 * h), tol=1e-12, max_iter=100_000).fit(X[keep], y[keep])

    def objective(coef, intercept):
        S = X[keep] @ coef.T + intercept
        Y = clf.classes_[:, None] == y[keep]
        if S.shape[1] == 1:
            loss = np.logaddexp(0, -np.where(Y[1], 1, -1) * S[:, 0])
        else:
            loss = np.log(np.exp(S).sum(axis=1)) - S[Y.T]
        return loss.sum() / h + 1e-4 * 0.5 * np.sum(coef * coef)

    assert objective(clf.coef_, clf.intercept_) == pytest.approx(clf.objective_, rel=1e-10)
    assert clf.objective_ <= objective(ref.coef_, ref.intercept_) * 1.05


# ------------------------------------------------------------------ penalties
@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("penalty", ["l1", "l0"])
def test_sparse_penalties_zero_out_irrelevant_features(penalty, solver):
    rng = np.random.default_rng(5)
    n, d = 300, 12
    X = rng.normal(size=(n, d))
    coef = np.zeros(d)
    coef[:3] = [3.0, -2.0, 1.5]
    y = X @ coef + 0.1 * rng.normal(size=n)
    y[:30] += 30.0
    alpha = 0.05 if penalty == "l1" else 0.02
    reg = TrimmedRegressor(
        trim_fraction=0.15, penalty=penalty, alpha=alpha, solver=solver, random_state=0
    )
    reg.fit(X, y)
    np.testing.assert_array_equal(reg.coef_ != 0, coef != 0)
    assert not reg.inlier_mask_[:30].any()
    tol = 0.1 if penalty == "l1" else 0.03  # l1 shrinks by ~alpha; l0 does not
    np.testing.assert_allclose(reg.coef_, coef, atol=tol)
    assert penalty_value(penalty, reg.coef_[:, None]) > 0
    if penalty == "l1":
        # a fixed point: the lasso on its own kept samples (cvxpy reference)
        keep = reg.inlier_mask_
        c, c0 = cp.Variable(d), cp.Variable()
        h = keep.sum()
        cp.Problem(
            cp.Minimize(cp.sum_squares(X[keep] @ c + c0 - y[keep]) / (2 * h) + alpha * cp.norm1(c))
        ).solve(solver="CLARABEL")
        np.testing.assert_allclose(reg.coef_, c.value, atol=2e-3)
        assert reg.intercept_ == pytest.approx(c0.value, abs=2e-3)


# ------------------------------------------------------------------ units of the features
SCALES = np.array([1e-2, 1.0, 1e3, 1e4])
OFFSETS = np.array([0.0, 50.0, 1e4, 0.0])


def _badly_scaled(seed=0, n=120, n_outliers=0):
    """Columns on scales 1e-2 .. 1e4 (offsets up to 1e4), the signal in every column."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 4))
    y = Z @ [1.0, -2.0, 1.5, 0.5] + 3.0 + 0.3 * rng.normal(size=n)
    y[:n_outliers] += 20.0
    return Z * SCALES + OFFSETS, y


def _cvxpy_fit(X, y, loss, penalty, alpha, weights=None):
    """The penalised fit in the units of X, solved by cvxpy in standardised variables."""
    n, d = X.shape
    mu, sd = X.mean(axis=0), X.std(axis=0)
    v, c0 = cp.Variable(d), cp.Variable()
    c = cp.multiply(v, 1.0 / sd)  # coefficients in the units of X
    s = ((X - mu) / sd) @ v + c0
    weights = np.ones(n) if weights is None else weights
    h = weights.sum()
    if loss == "squared":
        data = cp.sum(cp.multiply(weights, cp.square(s - y))) / (2 * h)
    else:
        margin = cp.multiply(np.where(y, 1.0, -1.0), s)
        data = cp.sum(cp.multiply(weights, cp.logistic(-margin))) / h
    reg = {"l2": cp.sum_squares(c) / 2, "l1": cp.norm1(c), "none": 0}[penalty]
    cp.Problem(cp.Minimize(data + alpha * reg)).solve(solver="CLARABEL")
    coef = v.value / sd
    return coef, float(c0.value - mu @ coef)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("penalty,alpha", [("l2", 1e-2), ("l1", 1e-2), ("none", 0.0)])
def test_badly_scaled_columns_give_the_minimiser_in_their_units(solver, penalty, alpha):
    # no trimming: a convex problem with one minimiser, which the internal
    # preconditioning must not move (the penalty stays on the coefficients as given)
    X, y = _badly_scaled()
    reg = TrimmedRegressor(
        trim_fraction=0, penalty=penalty, alpha=alpha, solver=solver, tol=1e-8, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg.fit(X, y)
    coef, intercept = _cvxpy_fit(X, y, "squared", penalty, alpha)
    np.testing.assert_allclose(reg.coef_ * SCALES, coef * SCALES, rtol=1e-4, atol=1e-5)
    assert reg.intercept_ == pytest.approx(intercept, rel=1e-5)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_badly_scaled_columns_logistic_minimiser(solver):
    X, y = _badly_scaled(seed=1)
    labels = y > 3.0
    clf = TrimmedClassifier(trim_fraction=0, alpha=1e-2, solver=solver, tol=1e-8, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, labels)
    coef, intercept = _cvxpy_fit(X, labels, "logistic", "l2", 1e-2)
    np.testing.assert_allclose(clf.coef_[0] * SCALES, coef * SCALES, rtol=1e-4, atol=1e-5)
    assert clf.intercept_[0] == pytest.approx(intercept, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("params", [{"variance_reduction": "saga"}, {"variance_reduction": "svrg"}])
def test_badly_scaled_trimmed_fit_matches_concentration_steps(params):
    X, y = _badly_scaled(seed=2, n=200, n_outliers=20)
    common = dict(trim_fraction=0.15, alpha=1e-3, tol=1e-6)
    alt = TrimmedRegressor(**common, solver="alternating").fit(X, y)
    # this data has local solutions that swap a few rows at the cut: which one SMART
    # reaches depends on the minibatch order, but each is a fixed point
    fits = [TrimmedRegressor(**common, **params, random_state=s).fit(X, y) for s in range(3)]
    for fit in fits:
        assert not fit.inlier_mask_[:20].any()
        r2 = (y - fit.predict(X)) ** 2
        assert r2[fit.inlier_mask_].max() <= r2[~fit.inlier_mask_].min()
        # the ridge fit on its own kept samples
        coef, intercept = _cvxpy_fit(X, y, "squared", "l2", 1e-3, fit.sample_weights_)
        np.testing.assert_allclose(fit.coef_ * SCALES, coef * SCALES, rtol=1e-4, atol=1e-5)
        assert fit.objective_ == pytest.approx(alt.objective_, rel=1e-2)
    best = min(fits, key=lambda fit: fit.objective_)
    np.testing.assert_array_equal(best.inlier_mask_, alt.inlier_mask_)
    assert best.objective_ == pytest.approx(alt.objective_, rel=1e-6)



@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_column_scaling_by_blocks_of_columns_is_that_of_x_whole(order, fit_intercept, monkeypatch):
    # the statistics are taken a few columns at a time (bounded memory); each column's must be
    # those of X whole, bit for bit: the blocks' reductions over rows sum in the same order
    rng = np.random.default_rng(0)
    n, d = 3001, 9
    X = rng.normal(size=(n, d)) * [1e-200, 1e-3, 1.0, 1.0, 1e6, 1.0, 1e250, 1.0, 1.0] + [0, 1e6, 0, 0, 0, -3, 0, 0, 0]
    X[rng.integers(0, n, 4), 2] = 1e300  # gross values, clipped at the fences
    X[:, 5] = 7.0  # constant
    X[: n // 2, 8] = 0.0  # mostly one value
    X = np.asarray(X, order=order)
    whole = skrate._trimmed_problem._dense_column_scaling(X, fit_intercept)
    monkeypatch.setattr(skrate._trimmed_problem, "_SCALING_BLOCK", 2 * n)  # blocks of 2 and 3 columns
    with np.errstate(over="ignore"):
        blocks = column_scaling(X, fit_intercept)
    np.testing.assert_array_equal(blocks[0], whole[0])
    np.testing.assert_array_equal(blocks[1], whole[1])


def test_dense_scaling_holds_about_one_copy_of_x(monkeypatch):
    import tracemalloc

    from skrate._trimmed_problem import held_within, preconditioned

    X = np.random.default_rng(0).normal(size=(20000, 10)) * 1e3 + 5.0
    X[3, 4] = 1e30  # beyond 2**64 spreads: held
    monkeypatch.setattr(skrate._trimmed_problem, "_SCALING_BLOCK", X.size // 5)
    tracemalloc.start()
    try:
        offset, scale = column_scaling(X, True)
        scaling_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        Z = preconditioned(X, offset, scale)
        preconditioning_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert scaling_peak < 2 * X.nbytes  # its statistics held about six copies of X at once
    assert preconditioning_peak < 1.2 * X.nbytes  # Z itself: X - offset, its quotient and clip were three
    np.testing.assert_array_equal(Z, held_within((X - offset) / scale))


# ------------------------------------------------------------------ exact refits
def _gradient_in_standardised_units(X, Y, loss, alpha, c, W, b):
    """Gradient of ``sum_i c_i f_i + alpha ||W||^2 / 2`` in the units the solvers use."""
    offset, scale = column_scaling(X, True)
    Z = (X - offset) / scale
    V, b0 = W * scale[:, None], b + offset @ W  # the same model on Z
    D = c[:, None] * linear_loss(loss, Z @ V + b0, Y)[1]
    return np.r_[(Z.T @ D + alpha * V / scale[:, None] ** 2).ravel(), D.sum(axis=0)]


@pytest.mark.parametrize("data", ["breast_cancer", "iris"])
def test_fit_weighted_reports_whether_the_gradient_met_tol(data):
    # raw features: units from 1e-3 to 1e3 (breast cancer), nearly separable classes;
    # the l2 penalty on the coefficients in those units is badly conditioned
    X, y = load_breast_cancer(return_X_y=True) if data == "breast_cancer" else load_iris(
        return_X_y=True
    )
    loss = "logistic" if data == "breast_cancer" else "multinomial"
    Y = np.where(y == 1, 1.0, -1.0) if loss == "logistic" else np.eye(3)[y]
    offset, scale = column_scaling(X, True)
    P = TrimmedProblem(
        (X - offset) / scale, Y, loss, float(len(y)), "l2", 1e-2, True, coef_scale=scale
    )
    c = np.full(len(y), 1.0 / len(y))
    K = P.n_scores
    start = np.zeros((X.shape[1], K)), np.zeros(K)
    for max_iter, expected in [(3, False), (1000, True)]:
        V, b, converged = fit_weighted(P, c, *start, max_iter=max_iter, tol=1e-6)
        assert converged is expected
        W = V / scale[:, None]
        grad = _gradient_in_standardised_units(X, Y, loss, 1e-2, c, W, b - offset @ W)
        assert bool(np.abs(grad).max() <= 1e-6) is expected


def test_concentration_steps_reach_the_minimum_on_their_kept_set_with_raw_features():
    # every refit used to stop at L-BFGS's iteration limit, 18% above the minimum on
    # its kept set, without a warning
    X, y = load_breast_cancer(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = TrimmedClassifier(solver="alternating", alpha=1e-2).fit(X, y)
    keep = clf.inlier_mask_
    coef, intercept = _cvxpy_fit(X, y, "logistic", "l2", 1e-2, keep.astype(float))

    def objective(w, b):
        margin = np.where(y[keep] == 1, 1.0, -1.0) * (X[keep] @ w + b)
        return np.mean(np.logaddexp(0.0, -margin)) + 1e-2 * w @ w / 2

    assert objective(clf.coef_[0], clf.intercept_[0]) == pytest.approx(
        objective(coef, intercept), rel=1e-6
    )


def _nearly_collinear(seed=0, n=100, spread=1e-2):
    """Three near copies of one column (and two others), 10% gross targets."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 1))
    X = np.hstack([z + spread * rng.normal(size=(n, 3)), rng.normal(size=(n, 2))])
    y = X @ [1.0, 0.0, 0.0, 1.0, -1.0] + 0.1 * rng.normal(size=n)
    y[: n // 10] += 20.0
    return X, y


def test_l1_refits_on_nearly_collinear_features_meet_their_tolerance():
    # FISTA used to stop at its hidden iteration limit with a gradient mapping 50
    # times its tolerance (coefficients 10, -12, 3 on the near copies), silently
    X, y = _nearly_collinear()
    alpha = 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = TrimmedRegressor(penalty="l1", alpha=alpha, solver="alternating").fit(X, y)
    keep = reg.inlier_mask_
    assert not keep[:10].any()
    # optimality of the lasso on the kept samples, in the units of X
    residual = y[keep] - reg.predict(X[keep])
    grad = -X[keep].T @ residual / keep.sum()
    coef = reg.coef_
    violation = np.where(coef != 0, np.abs(grad + alpha * np.sign(coef)), np.abs(grad) - alpha)
    assert violation.max() <= 1e-5
    assert abs(residual.mean()) <= 1e-5


def test_a_final_refit_short_of_its_tolerance_warns():
    # l0 is refitted by plain proximal gradient, which crawls along near copies of a
    # column: the refit on the final kept set runs out of iterations
    X, y = _nearly_collinear()
    reg = TrimmedRegressor(penalty="l0", alpha=1e-4, solver="alternating", max_iter=10)
    with pytest.warns(ConvergenceWarning, match=r"exact refit on the final kept set.*= 1000 it"
                      r".*collinear.*raise max_iter"):
        reg.fit(X, y)
    assert reg.n_iter_ < 10  # the kept set is stable: only the refit failed
    check_is_fitted(reg)


def _regression_in_units(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3))
    y = X @ [1.0, -2.0, 3.0] + 1.0 + 0.1 * rng.normal(size=400)
    y[rng.choice(400, 40, replace=False)] += rng.uniform(5, 10, 40)
    return X, y


@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("penalty, degree", [("none", 2), ("l2", 2), ("l1", 1), ("l0", 0)])
def test_fit_is_equivariant_in_the_units_of_the_target(solver, penalty, degree):
    # The refits stopped on absolute tolerances: with y in small units "alternating"
    # returned coefficients 0 (s=1e-8) or 35% off (s=1e-6), without a warning. The
    # penalty is homogeneous of degree p, so s * y with alpha * s^(2 - p) has the
    # minimiser s times that of y.
    X, y = _regression_in_units()
    alpha = {"none": 0.0, "l2": 1e-2, "l1": 1e-2, "l0": 1e-3}[penalty]
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in (1e-8, 1.0, 1e6):
            fits[s] = TrimmedRegressor(
                penalty=penalty, alpha=alpha * s ** (2 - degree), solver=solver, random_state=0
            ).fit(X, s * y)
    ref = fits[1.0]
    assert not ref.inlier_mask_[np.abs(y - X @ [1.0, -2.0, 3.0] - 1.0) > 1].any()
    np.testing.assert_allclose(ref.coef_, [1.0, -2.0, 3.0], atol=0.05)
    for s, fit in fits.items():
        np.testing.assert_array_equal(fit.inlier_mask_, ref.inlier_mask_)
        np.testing.assert_allclose(fit.coef_ / s, ref.coef_, rtol=1e-7)
        assert fit.intercept_ / s == pytest.approx(ref.intercept_, rel=1e-7)
        assert fit.objective_ / s**2 == pytest.approx(ref.objective_, rel=1e-7)
    if penalty == "none":  # a fixed point: least squares on the kept samples
        keep = ref.inlier_mask_
        ols = LinearRegression().fit(X[keep], y[keep])
        np.testing.assert_allclose(ref.coef_, ols.coef_, atol=1e-4 if solver == "smart" else 1e-6)


@pytest.mark.parametrize("s", [1e-200, 1e-163, 1e158, 1e300])
def test_targets_in_extreme_units_give_the_rescaled_fit(s):
    # The trimmed location and scale squared the targets: below 1e-162 the squares
    # underflowed and every window read alike (coefficients half what they are, silently);
    # beyond 1e154 they overflowed (intercept inf).
    X, y = _regression_in_units()
    ref = TrimmedRegressor(random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = TrimmedRegressor(random_state=0).fit(X, s * y)
    np.testing.assert_array_equal(fit.inlier_mask_, ref.inlier_mask_)
    np.testing.assert_allclose(fit.coef_ / s, ref.coef_, rtol=1e-7)
    assert fit.intercept_ / s == pytest.approx(ref.intercept_, rel=1e-7)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_l0_penalty_on_targets_below_1e_154(solver):
    # alpha * y_scale^-2 raised OverflowError, even at alpha = 0
    X, y = _regression_in_units()
    s = 1e-160
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = TrimmedRegressor(penalty="l0", alpha=0.0, solver=solver, random_state=0).fit(X, y)
        free = TrimmedRegressor(penalty="l0", alpha=0.0, solver=solver, random_state=0).fit(X, s * y)
        # any positive alpha outweighs every coefficient when the loss is of order s^2
        held = TrimmedRegressor(penalty="l0", alpha=1e-3, solver=solver, random_state=0).fit(X, s * y)
    np.testing.assert_allclose(free.coef_ / s, ref.coef_, rtol=1e-7)
    np.testing.assert_array_equal(held.coef_, 0.0)
    assert np.isfinite(held.intercept_) and np.isfinite(held.objective_)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("Estimator", [TrimmedRegressor, TrimmedClassifier])
def test_every_column_held_at_zero_gives_the_intercept_model(Estimator, solver):
    # columns below 1e-154 with a penalty are left out of the solvers (their penalty weight
    # is inf); with all of them left out the refits' stopping tests reduced an empty array
    X, y = _regression_in_units()
    if Estimator is TrimmedClassifier:
        y = (y > np.median(y)).astype(int)
    params = dict(penalty="l2", alpha=0.1, solver=solver, random_state=0)
    fit = Estimator(**params).fit(1e-160 * X, y)
    ref = Estimator(**params).fit(np.zeros_like(X), y)  # constant columns: coefficient 0
    np.testing.assert_array_equal(fit.coef_, 0.0)
    np.testing.assert_allclose(fit.intercept_, ref.intercept_, rtol=1e-9)


@pytest.mark.parametrize("Estimator", [TrimmedRegressor, TrimmedClassifier])
@pytest.mark.parametrize("s", [1e-170, 1e155, 1e300])
def test_features_in_extreme_units_give_the_rescaled_fit(Estimator, s):
    # Squares of the column beyond 1e154 overflowed (scale inf, coef_ 0 with a
    # ConvergenceWarning), below 1e-154 underflowed (a LinAlgError)
    X, y = _regression_in_units()
    if Estimator is TrimmedClassifier:
        y = (y > np.median(y)).astype(int)
    ref = Estimator(penalty="none", random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = Estimator(penalty="none", random_state=0).fit(s * X, y)
    np.testing.assert_allclose(fit.coef_ * s, ref.coef_, rtol=1e-6)


@pytest.mark.parametrize("Estimator", [TrimmedRegressor, TrimmedClassifier])
def test_penalty_none_as_scikit_learn_spells_it(Estimator):
    X, y = _regression_in_units()
    if Estimator is TrimmedClassifier:
        y = (y > np.median(y)).astype(int)
    spelled = Estimator(penalty="none", alpha=0.1, random_state=0).fit(X, y)
    none = Estimator(penalty=None, alpha=0.1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(none.coef_, spelled.coef_)
    assert none.objective_ == spelled.objective_


@pytest.mark.parametrize(
    "params",
    [{}, {"variance_reduction": "svrg"}, {"block": "random"}, {"weight_step": 1.0}],
)
@pytest.mark.parametrize(
    "n, n_gross, value", [(1000, 50, 1e16), (1000, 50, 1e30), (100, 5, 1e150), (100, 5, 1e200),
                          (100, 5, -1e200)],
)
def test_gross_targets_do_not_enter_the_smart_fit(params, n, n_gross, value):
    # Sentinel codes in y. SMART started from uniform weights, so they set its first
    # gradients and stopping scale: 1e16 took 81 epochs, 1e30 and 1e150 gave a wrong
    # model and a ConvergenceWarning, 1e200 (squares beyond the largest float) hundreds
    # of overflow warnings and nothing trimmed. Started from the weights best for the
    # trimmed start, they are trimmed throughout: the fit is bitwise the one with merely
    # large outliers (1e3) in their place (to rounding in the projection of a finite
    # weight_step, whose breakpoints include theirs).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, 2.0, -1.0] + 0.5 + 0.1 * rng.normal(size=n)
    gross = rng.choice(n, n_gross, replace=False)
    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in (value, np.sign(value) * 1e3):
            y[gross] = v
            fits.append(TrimmedRegressor(random_state=0, **params).fit(X, y))
    fit, moderate = fits
    assert not fit.inlier_mask_[gross].any()
    np.testing.assert_allclose(fit.coef_, [1.0, 2.0, -1.0], atol=0.05)
    assert fit.intercept_ == pytest.approx(0.5, abs=0.05)
    np.testing.assert_allclose(fit.sample_weights_, moderate.sample_weights_, atol=1e-12)
    assert fit.n_iter_ == moderate.n_iter_
    np.testing.assert_allclose(fit.coef_, moderate.coef_, rtol=1e-12)
    assert fit.intercept_ == pytest.approx(moderate.intercept_, rel=1e-12)
    np.testing.assert_allclose(fit.objective_path_, moderate.objective_path_, rtol=1e-12)


def test_a_start_that_is_already_stationary_stops_at_once():
    # A penalty that zeroes every coefficient: the start (coef 0, the trimmed location)
    # is the solution and its gradient of rounding size; the stopping test relative to
    # it was never met (100 epochs and a ConvergenceWarning)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = X @ [1.0, 2.0] + 5.0
    for trim_fraction in (0.0, 0.1):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            reg = TrimmedRegressor(
                trim_fraction=trim_fraction, penalty="l1", alpha=100.0, random_state=0
            ).fit(X, y)
        assert reg.n_iter_ == 1
        np.testing.assert_array_equal(reg.coef_, 0.0)
        assert reg.intercept_ == pytest.approx(trimmed_location(y, reg.n_inliers_)[0])


def test_features_in_units_of_age_and_income():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(40, 10, 300), rng.normal(5e4, 1e4, 300)]
    y = 0.1 * X[:, 0] + rng.normal(size=300)
    ols = LinearRegression().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = TrimmedRegressor(trim_fraction=0, penalty="none", random_state=0).fit(X, y)
        clf = TrimmedClassifier(trim_fraction=0.05, random_state=0).fit(X, y > 4)
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-3)  # default tol
    assert reg.score(X, y) == pytest.approx(ols.score(X, y), abs=1e-8)
    # the classifier is the penalised logistic fit on its own kept samples
    coef, intercept = _cvxpy_fit(X, y > 4, "logistic", "l2", 1e-4, clf.sample_weights_)
    np.testing.assert_allclose(clf.coef_[0], coef, rtol=1e-2)
    assert clf.score(X, y > 4) >= LogisticRegression().fit(
        StandardScaler().fit_transform(X), y > 4
    ).score(StandardScaler().fit_transform(X), y > 4) - 0.02


def test_stopping_test_is_stationarity_not_a_small_decrease():
    # raw columns of very different scales: the step set by the income column
    # leaves the age coefficient nearly still, so epochs lower the objective by
    # little far from the solution; that must not pass as converged
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(40, 10, 300), rng.normal(5e4, 1e4, 300)]
    y = 0.1 * X[:, 0] + rng.normal(size=300)
    ols_objective = np.mean((y - LinearRegression().fit(X, y).predict(X)) ** 2) / 2
    P = TrimmedProblem(X - X.mean(axis=0), y, "squared", 300.0, "none", 0.0, True)
    fit = smart(P, max_iter=20, rng=np.random.default_rng(0), polish=False)
    assert not fit.converged
    assert fit.objective[-1] > 1.5 * ols_objective
    # the same problem on preconditioned columns converges, to the least-squares fit
    offset, scale = column_scaling(X, True)
    Z = (X - offset) / scale
    P = TrimmedProblem(Z, y, "squared", 300.0, "none", 0.0, True, coef_scale=scale)
    fit = smart(P, max_iter=100, rng=np.random.default_rng(0), polish=False)
    assert fit.converged
    assert fit.objective[-1] == pytest.approx(ols_objective, rel=1e-6)


def test_column_scaling_ignores_gross_values_and_constant_columns():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(5.0, 2.0, 400), np.full(400, 7.0), rng.normal(size=400)]
    X[:20, 0] = 1e6  # gross values in 5% of the rows
    offset, scale = column_scaling(X, True)
    assert 1.5 < scale[0] < 4.0 and offset[0] == pytest.approx(5.0, abs=1.0)  # not 2e5
    assert scale[1] == 1.0 and scale[2] == pytest.approx(1.0, rel=0.1)
    assert np.all(column_scaling(X, False)[0] == 0)


@pytest.mark.parametrize("magnitude", [1e-300, 1e300])
def test_a_mostly_zero_column_of_any_magnitude_is_scaled_and_fitted(magnitude):
    # quartiles of 0 set the units of a mostly-zero column: its entries of 1e-300 squared to a
    # scale of 0, and an unpenalised fit returned a coefficient of -inf
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[rng.random(300) < 0.8, 1] = 0.0
    y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=300)
    y[:15] += 30.0
    ref = TrimmedRegressor(penalty="none", random_state=0).fit(X, y)
    X[:, 1] *= magnitude
    _, scale = column_scaling(X, True)
    assert 0 < scale[1] < np.inf
    fit = TrimmedRegressor(penalty="none", random_state=0).fit(X, y)
    np.testing.assert_array_equal(fit.inlier_mask_, ref.inlier_mask_)
    np.testing.assert_allclose(fit.coef_ * [1.0, magnitude, 1.0], ref.coef_, rtol=1e-6)


def test_gross_leverage_rows_end_at_a_local_solution():
    # 5% of the rows at 1e6 in every feature (a sentinel code). The global minimum
    # trims them all, but a local method started near the all-data fit can stop
    # at a local solution keeping some: what it guarantees is a fixed point, the
    # ridge fit on its kept samples whose losses are the h smallest.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ [1.0, 2.0, -1.0] + 0.1 * rng.normal(size=400)
    out = rng.choice(400, 20, replace=False)
    X[out] = 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = TrimmedRegressor(trim_fraction=0.1, random_state=0).fit(X, y)
    keep, h = reg.inlier_mask_, reg.n_inliers_
    ref = Ridge(alpha=1e-4 * h).fit(X[keep], y[keep])
    np.testing.assert_allclose(reg.coef_, ref.coef_, rtol=0.02)
    r2 = (y - reg.predict(X)) ** 2
    assert r2[keep].max() <= r2[~keep].min()
    # the clean fit (all 20 trimmed) is the global minimum, far lower
    inliers = np.setdiff1d(np.arange(400), out)
    clean = Ridge(alpha=1e-4 * h).fit(X[inliers], y[inliers])
    clean_r2 = np.sort((y - clean.predict(X)) ** 2)[:h]
    clean_obj = clean_r2.sum() / (2 * h) + 1e-4 * clean.coef_ @ clean.coef_ / 2
    assert clean_obj < 0.1 * reg.objective_


# ------------------------------------------------------------------ estimator API
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # well separated
def test_estimators_do_not_modify_inputs_and_keep_labels():
    X, y, _ = _classification_with_flips(n_classes=3)
    labels = np.array(["ant", "bee", "cat"])[y]
    X0, l0 = X.copy(), labels.copy()
    clf = TrimmedClassifier(random_state=0).fit(X, labels)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(labels, l0)
    assert set(clf.predict(X)) <= set(clf.classes_)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    assert clf.decision_function(X).shape == (400, 3)
    w = clf.sample_weights_
    assert np.all((w >= 0) & (w <= 1)) and w.sum() == pytest.approx(clf.n_inliers_)
    assert clf.score(X, labels) > 0.8


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
def test_random_state_makes_fits_reproducible():
    X, y, _, _ = _regression_with_outliers(seed=6)
    a = TrimmedRegressor(random_state=3, max_iter=5).fit(X, y)
    b = TrimmedRegressor(random_state=3, max_iter=5).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("value", [1.0, -0.1, 1.5])
def test_trim_fraction_out_of_range_names_the_parameter(value):
    X, y, _, _ = _regression_with_outliers()
    with pytest.raises(InvalidParameterError, match="trim_fraction"):
        TrimmedRegressor(trim_fraction=value).fit(X, y)



@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
def test_an_invalid_parameter_is_refused_before_the_previous_fit_is_touched(Est):
    # scikit-learn's convention: parameters are checked before fitting starts
    X, y, _ = _classification_with_flips()
    est = Est(alpha=1e-2, random_state=0).fit(X, y)
    coef = est.coef_.copy()
    with pytest.raises(InvalidParameterError, match="trim_fraction"):
        est.set_params(trim_fraction=1.5).fit(X, y)
    np.testing.assert_array_equal(est.coef_, coef)
    with pytest.raises(ValueError, match="n_inliers"):  # an error while fitting leaves no state
        est.set_params(trim_fraction=0.1, n_inliers=10 * len(y)).fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


@pytest.mark.parametrize(
    "target", [lambda y: y.astype(str).astype(object), lambda y: y.astype(str),
               lambda y: y.astype(bytes)], ids=["object", "str", "bytes"],
)
def test_text_target_of_the_regressor_is_named(target):
    pd = pytest.importorskip("pandas")
    X, y, _, _ = _regression_with_outliers(n=50)
    labels = np.where(y > 0, "high", "low")
    for y_text in (target(labels), pd.Series(target(labels))):
        with pytest.raises(ValueError, match=r"^y has non-numeric values, and TrimmedRegressor"):
            TrimmedRegressor().fit(pd.DataFrame(X), y_text)

def test_trim_fraction_is_not_lost_to_floating_point_rounding():
    # floor(0.29 * 100) is 28 in floating point (0.29 * 100 = 28.999999999999996)
    X, y, _, _ = _regression_with_outliers(n=100)
    assert TrimmedRegressor(trim_fraction=0.29).fit(X, y).n_inliers_ == 71
    assert TrimmedRegressor(trim_fraction=0.57, solver="alternating").fit(X, y).n_inliers_ == 43
    # every decimal share of 100 (and multiples), every k / n trims exactly k
    for p in range(100):
        reg = TrimmedRegressor(trim_fraction=float(f"0.{p:02d}"))
        assert [reg._n_kept(100 * m) for m in (1, 3, 10)] == [(100 - p) * m for m in (1, 3, 10)]
    for n in range(1, 120):
        kept = [TrimmedRegressor(trim_fraction=k / n)._n_kept(n) for k in range(n)]
        assert kept == [n - k for k in range(n)]
    # just below k / n still trims fewer; trim_fraction < 1 keeps at least one sample
    assert TrimmedRegressor(trim_fraction=0.2899)._n_kept(100) == 72
    assert TrimmedRegressor(trim_fraction=1 - 1e-12)._n_kept(1000) == 1


@pytest.mark.parametrize("n_classes", [2, 3])
def test_predict_log_proba_is_the_log_of_predict_proba_without_underflow(n_classes):
    X, y, _ = _classification_with_flips(n_classes=n_classes)
    clf = TrimmedClassifier(alpha=1e-2, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(clf.predict_proba(X)), rtol=1e-10)
    # far from the data the smaller probabilities underflow to 0; their logs do not
    far = 1e3 * X[:5]
    log_p = clf.predict_log_proba(far)
    assert np.all(np.isfinite(log_p)) and np.any(clf.predict_proba(far) == 0)
    np.testing.assert_allclose(np.exp(log_p), clf.predict_proba(far), atol=1e-300)
    # the log-odds of the binary model are the difference of the two columns
    if n_classes == 2:
        np.testing.assert_allclose(log_p[:, 1] - log_p[:, 0], clf.decision_function(far))


def test_too_many_inliers_names_the_parameter():
    X, y, _, _ = _regression_with_outliers(n=50)
    with pytest.raises(ValueError, match="n_inliers=60"):
        TrimmedRegressor(n_inliers=60).fit(X, y)


@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
def test_nan_is_rejected(Est):
    X, y, _ = _classification_with_flips()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est().fit(X, y)


def _no_solver(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(skrate._trimmed, "smart", fail)
    monkeypatch.setattr(skrate._trimmed, "concentration_steps", fail)


def _hard_minority(seed=0, n=200, n_minority=8):
    """Binary data whose few minority samples lie among the majority: the worst explained."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.zeros(n, dtype=np.int64)
    y[:n_minority] = 1
    X[n_minority:, 0] += 1.0
    return X, y


@pytest.mark.parametrize(
    "params", [{"solver": "smart"}, {"solver": "alternating"}, {"weight_step": 1.0}]
)
def test_trimming_more_than_the_minority_keeps_half_of_it(params):
    # 20 trimmed, 8 minority samples: without a floor the fit could keep class 0 alone
    X, y = _hard_minority()
    clf = TrimmedClassifier(trim_fraction=0.1, alpha=1e-2, random_state=0, **params).fit(X, y)
    kept = np.bincount(y, weights=clf.sample_weights_)
    assert clf.inlier_mask_.sum() == clf.n_inliers_ == 180
    # the floor binds: the minority is the worst explained, so exactly half of it stays
    assert kept[1] == pytest.approx(4)
    # the weights are the best under the floor: the 4 best-explained minority
    # samples and the 176 best-explained majority ones
    S = clf.decision_function(X)
    loss = np.logaddexp(0, -np.where(y == 1, 1, -1) * S)
    for k, m in [(0, 176), (1, 4)]:
        idx = np.flatnonzero(y == k)
        best = np.sort(idx[np.argsort(loss[idx])[:m]])
        np.testing.assert_array_equal(np.flatnonzero(clf.inlier_mask_ & (y == k)), best)
    assert clf.predict_proba(X)[:8, 1].mean() > clf.predict_proba(X)[8:, 1].mean()


def test_default_classifier_fits_imbalanced_folds():
    # minority of 5%: each training fold has about 8 minority samples, fewer than the
    # default trim_fraction=0.1 trims; no fold fails
    X, y = make_classification(
        n_samples=200, n_features=4, weights=[0.95], flip_y=0, random_state=0
    )
    scores = cross_val_score(TrimmedClassifier(random_state=0), X, y, cv=5, error_score="raise")
    assert np.all(scores > 0.9)


def test_more_trimmed_than_the_class_floors_allow_is_rejected_before_solving(monkeypatch):
    X = np.random.default_rng(1).normal(size=(60, 2))
    y = np.repeat(["a", "b", "c"], [50, 5, 5])  # floors 25 + 3 + 3 = 31
    with monkeypatch.context() as m:
        _no_solver(m)
        with pytest.raises(ValueError) as err:
            TrimmedClassifier(trim_fraction=0.5).fit(X, y)
        msg = str(err.value)
        assert "trim_fraction=0.5 keeps 30 of the 60 training samples, fewer than the 31" in msg
        assert "np." not in msg
        with pytest.raises(ValueError, match=r"n_inliers of at least 31\."):
            TrimmedClassifier(n_inliers=30).fit(X, y)
    # the suggested value works, and keeps half of every class
    k, n = map(int, re.search(r"trim_fraction below (\d+)/(\d+)", msg).groups())
    clf = TrimmedClassifier(trim_fraction=(k - 1) / n, alpha=1e-2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(np.unique(y[clf.inlier_mask_], return_counts=True)[1], [25, 3, 3])


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_a_small_class_in_the_noise_keeps_half_and_a_failed_refit_leaves_no_state(solver):
    # two clear classes and 5 scattered samples of a third, 10 trimmed
    rng = np.random.default_rng(0)
    X = np.vstack(
        [rng.normal(size=(100, 2)) + [4, 0], rng.normal(size=(100, 2)) - [4, 0],
         rng.normal(scale=3, size=(5, 2))]
    )
    y = np.repeat(np.array([0, 1, 2], dtype=np.int64), [100, 100, 5])
    clf = TrimmedClassifier(trim_fraction=0.05, alpha=1e-2, solver=solver, random_state=0)
    clf.fit(X, y)
    assert np.bincount(y[clf.inlier_mask_]).min() >= 3
    with pytest.raises(ValueError, match="fewer than the"):
        clf.set_params(trim_fraction=0.6).fit(X, y)
    # no attribute of the first fit survives a failed refit
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not any(k.endswith("_") and not k.startswith("__") for k in vars(clf))


def test_refit_with_other_classes_replaces_every_attribute():
    X3, y3 = _classification_with_flips(n_classes=3)[:2]
    clf = TrimmedClassifier(alpha=1e-2, random_state=0).fit(X3, y3)
    X2, y2 = _classification_with_flips(seed=1, n=100, d=2)[:2]
    clf.fit(X2, y2 + 5)
    np.testing.assert_array_equal(clf.classes_, [5, 6])
    assert clf.coef_.shape == (1, 2) and clf.intercept_.shape == (1,)
    assert clf.sample_weights_.shape == (100,) and clf.n_features_in_ == 2
    assert set(clf.predict(X2)) <= {5, 6}


def test_one_class_is_an_error():
    X = np.random.default_rng(0).normal(size=(10, 2))
    clf = TrimmedClassifier()
    with pytest.raises(ValueError, match=r"at least 2 classes; y has 1 class \(1.0\)"):
        clf.fit(X, np.ones(10))
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)


def test_tied_losses_with_a_finite_weight_step_end_on_zero_one_weights():
    # a heavy l1 penalty zeroes the model: every loss ties, and weight_step=1 left weights of
    # 0.9 on all 60 rows, so inlier_mask_ kept all of them
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = np.repeat([0, 1], 30)
    m = TrimmedClassifier(weight_step=1.0, penalty="l1", alpha=10, random_state=0).fit(X, y)
    assert set(np.unique(m.sample_weights_)) <= {0.0, 1.0}
    assert m.inlier_mask_.sum() == m.n_inliers_


@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("value", [1e100, 1e250])
def test_a_large_constant_column_is_taken_by_the_intercept(solver, value):
    # centred by its rounded mean it kept 1e234 of rounding: a LinAlgError, NaN, or a null model;
    # it must fit as a column of zeros does (the same shape, so the same solver path)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.0, 0.5, -2.0] + rng.normal(size=300) > 0).astype(int)
    zeros = TrimmedClassifier(solver=solver, random_state=0).fit(np.column_stack([X, np.zeros(300)]), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = TrimmedClassifier(solver=solver, random_state=0).fit(np.column_stack([X, np.full(300, value)]), y)
    assert est.coef_.ravel()[-1] == 0.0
    np.testing.assert_allclose(est.coef_, zeros.coef_, rtol=1e-4)
    assert est.objective_ == pytest.approx(zeros.objective_, rel=1e-6)


@pytest.mark.parametrize("Estimator", [TrimmedRegressor, TrimmedClassifier])
@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_a_column_whose_penalty_weight_is_infinite_gets_coefficient_zero(Estimator, solver):
    # a column below 1e-154 makes alpha / scale^2 inf: inf * 0 in the steps and the refits'
    # rescaling gave NaN coefficients (alternating) and invalid-value warnings (smart); the fit
    # must be the one without that column
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, 2.0, -1.0] + 0.3 * rng.normal(size=300)
    if Estimator is TrimmedClassifier:
        y = (y > 0).astype(int)
    tiny = X.copy()
    tiny[:, 1] *= 1e-200
    without = Estimator(solver=solver, random_state=0).fit(X[:, [0, 2]], y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = Estimator(solver=solver, random_state=0).fit(tiny, y)
    coef = np.atleast_2d(fit.coef_)
    assert np.all(coef[:, 1] == 0.0)
    np.testing.assert_allclose(coef[:, [0, 2]], np.atleast_2d(without.coef_), rtol=1e-9)
    np.testing.assert_allclose(fit.intercept_, without.intercept_, rtol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # one epoch
def test_a_classifiers_first_epoch_selects_incrementally(monkeypatch):
    # a classifier starts at log 2 on every row: the cut fell among n equal losses, the zones held
    # them all and nearly every step took the O(n) full selection (quadratic in n: 52 s for one
    # epoch at 200k rows)
    import skrate._kept_set as kept_set
    from skrate._smart import _ordered_ties

    full, calls = kept_set.KeptSet._full, []
    monkeypatch.setattr(kept_set.KeptSet, "_full", lambda self, *a: calls.append(1) or full(self, *a))
    rng = np.random.RandomState(0)
    X = rng.randn(30000, 5)
    y = (X @ rng.randn(5) + rng.randn(30000) > 0).astype(int)
    TrimmedClassifier(max_iter=1, random_state=0).fit(X, y)
    assert len(calls) < 30
    # ties are ordered by row within a few units in the last place; other values, NaN and inf stay
    losses = np.array([0.5, np.log(2), np.inf, np.log(2), 0.1, np.inf, np.nan, np.log(2)])
    out = _ordered_ties(losses)
    np.testing.assert_array_equal(out[[0, 2, 4, 5, 6]], losses[[0, 2, 4, 5, 6]])
    assert out[1] == np.log(2) < out[3] < out[7] <= np.log(2) * (1 + 1e-15)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_a_gross_entry_of_any_size_leaves_a_finite_fit(solver):
    # an entry of 1e200 overflowed the curvature bounds: smart raised, alternating gave NaN. Then
    # its row was kept: fitted from coefficients 0, where its loss is small, it held its
    # column's coefficient at 0 (objective 0.36 where setting it aside gives 0.003)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, 2.0, 3.0] + 0.1 * rng.normal(size=100)
    fits = []
    for gross, sparse in ((1e20, False), (1e200, False), (1e308, False), (1e200, True)):
        Xg = X.copy()
        Xg[0, 0] = gross
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit = TrimmedRegressor(solver=solver, random_state=0).fit(sp.csr_matrix(Xg) if sparse else Xg, y)
        assert not fit.inlier_mask_[0] and fit.sample_weights_[0] == 0
        fits.append(fit.coef_)
    assert np.all(np.isfinite(fits))
    for other in fits[1:]:
        np.testing.assert_allclose(other, fits[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fits[0], [1.0, 2.0, 3.0], atol=0.05)  # column 0 is fitted, not held at 0
    yc = (y > 0).astype(int)
    Xg = X.copy()
    Xg[0, 0] = 1e200
    assert np.all(np.isfinite(TrimmedClassifier(random_state=0).fit(Xg, yc).coef_))


@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_alpha_zero_is_no_penalty_also_for_tiny_columns(penalty):
    # columns near 1e-200 overflowed the penalty's rescaling to a NaN objective: coef_ stayed 0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, 2.0, 3.0] + 0.1 * rng.normal(size=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = TrimmedRegressor(penalty=penalty, alpha=0.0, random_state=0).fit(X * 1e-200, y).coef_
    want = TrimmedRegressor(penalty="none", random_state=0).fit(X * 1e-200, y).coef_
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got * 1e-200, [1.0, 2.0, 3.0], atol=0.05)


def _wide_regression_with_outliers(seed=0, n=200, d=2001, n_out=20):
    """More features than the eigenvalue path takes (d + intercept > 2000), few of them relevant."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    coef = np.zeros(d)
    coef[:5] = [1.0, -2.0, 0.5, 1.5, -1.0]
    y = X @ coef + 0.5 + 0.1 * rng.normal(size=n)
    out = rng.choice(n, n_out, replace=False)
    y[out] += 20.0
    return X, y, out


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lipschitz_of_wide_data_is_a_tight_upper_bound_of_the_exact_constant(loss, fit_intercept):
    X, y, _ = _wide_regression_with_outliers(n=60)
    if loss == "logistic":
        y = (y > np.median(y)).astype(float)
    h = 50.0
    P = TrimmedProblem(X, y, loss, h, "l2", 1e-2, fit_intercept)
    L_full, L_terms = P.lipschitz()
    Xt = np.hstack([X, np.ones((len(y), 1))]) if fit_intercept else X
    assert Xt.shape[1] > GRAM_MAX  # the Lanczos path
    kappa = CURVATURE[loss]
    # the exact constant: the largest eigenvalue of Xt' Xt, that of the small Xt Xt'
    exact = kappa * np.linalg.eigvalsh(Xt @ Xt.T)[-1] / h
    row_sq = (Xt**2).sum(axis=1)
    # a bound (a step of 1 / L_full cannot overshoot), and a tight one: the trace, a cheap bound,
    # is several times larger and shrank the first steps as much
    assert exact <= L_full <= 1.002 * exact
    assert kappa * row_sq.sum() / h > 5 * exact
    assert L_terms == pytest.approx(kappa * len(y) * np.sqrt(np.mean(row_sq**2)) / h, rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_wide_regressor_reaches_the_ridge_optimum_on_its_inliers(fit_intercept):
    X, y, out = _wide_regression_with_outliers()
    alpha = 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = TrimmedRegressor(trim_fraction=0.1, alpha=alpha, tol=1e-8, fit_intercept=fit_intercept,
                               random_state=0).fit(X, y)
    keep, h = reg.inlier_mask_, reg.n_inliers_
    assert h == 180 and keep.sum() == h
    assert not keep[out].any()  # every shifted target trimmed
    # a fixed point: the ridge fit on its own kept samples, (1/h) sum r^2 / 2 + alpha |w|^2 / 2
    ref = Ridge(alpha=alpha * h, fit_intercept=fit_intercept, solver="cholesky").fit(X[keep], y[keep])
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=1e-6)
    assert reg.intercept_ == pytest.approx(ref.intercept_, abs=1e-6)
    # whose kept samples are those of the h smallest losses
    r2 = (y - reg.predict(X)) ** 2
    assert r2[keep].max() <= r2[~keep].min()
    expected = r2[keep].sum() / (2 * h) + alpha * ref.coef_ @ ref.coef_ / 2
    assert reg.objective_ == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("kw", [dict(alpha=0.0), dict(), dict(penalty="l1"), dict(penalty="l0")])
@pytest.mark.parametrize("weight_step", [1.0, 5.0])
def test_a_finite_weight_step_on_kept_rows_fitted_exactly_is_the_exact_step(kw, weight_step):
    # kept losses of 0 floored the step's scale at the smallest float: weight_step / tiny
    # overflowed, inf * 0 put NaN in the weights, and coef_ came out NaN (l0: a LinAlgError)
    X = np.random.default_rng(0).normal(size=(10, 2))
    y = np.full(10, 2.5)
    y[0] += 1e6  # one gross outlier on a constant target
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = TrimmedRegressor(trim_fraction=0.2, weight_step=weight_step, random_state=0, **kw).fit(X, y)
    exact = TrimmedRegressor(trim_fraction=0.2, weight_step=np.inf, random_state=0, **kw).fit(X, y)
    np.testing.assert_allclose(model.coef_, exact.coef_, atol=1e-12)
    assert model.intercept_ == pytest.approx(2.5) == exact.intercept_
    assert model.sample_weights_[0] == 0


def test_an_all_zero_design_under_a_strong_l1_penalty_fits_zero_not_nan():
    # no curvature: the step 1 / tiny times alpha overflowed, and the prox at an infinite
    # step with no ridge part took inf * 0
    X, y = np.zeros((4, 1)), np.array([1.1, 1.2, 0.2, 0.5])
    for alpha in (1.0, 4.0, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = TrimmedRegressor(penalty="l1", alpha=alpha, solver="alternating", fit_intercept=False).fit(X, y)
        np.testing.assert_array_equal(model.coef_, [0.0])
        np.testing.assert_array_equal(model.predict(X), np.zeros(4))
    from skrate._prox import prox_elastic_net

    np.testing.assert_array_equal(prox_elastic_net(np.array([3.0, -1.0]), np.inf, 1.0, 1.0), [0.0, 0.0])


def test_n_inliers_beyond_the_samples_is_refused_in_scikit_learns_words():
    # "exceeds the 1 training samples" met none of the phrases check_fit2d_1sample accepts
    from sklearn.utils.estimator_checks import check_fit2d_1sample

    check_fit2d_1sample("TrimmedRegressor", TrimmedRegressor(n_inliers=10))
    with pytest.raises(ValueError, match=r"n_inliers=10 exceeds the number of training samples, n_samples = 4"):
        TrimmedRegressor(n_inliers=10).fit(np.zeros((4, 1)), np.arange(4.0))
