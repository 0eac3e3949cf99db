"""SMART, the stochastic block prox-gradient solver of trimmed linear M-estimation.

:func:`smart` minimises the objective of a
:class:`~skrate._trimmed_problem.TrimmedProblem` jointly over the model ``(W, b)``
and the weights ``w`` (Aravkin and Davis), with variance-reduced minibatch steps on
the model and exact (or projected-gradient) steps on the weights. Plain functions
over arrays; no scikit-learn estimators here.
"""

from __future__ import annotations

import numpy as np

from skrate._centred_columns import row_sq_norms
from skrate._concentration import fit_weighted
from skrate._kept_set import KeptSet
from skrate._trimmed_losses import linear_loss
from skrate._trimmed_problem import TrimmedFit, TrimmedProblem, kept_sum


# ---------------------------------------------------------------------------- SMART
# From this many rows on, SMART's exact weight steps use KeptSet (below, the full
# selection costs less than its bookkeeping); the weights are the same either way.
_KEPT_SET_MIN_ROWS = 20000
_KEPT_SET_BUCKET = 1  # rows a bucket of loss values holds when built, in minibatches
_CAPPED_SELECTIONS = 16  # most exact weight steps an epoch with sample weights (each a sort)


def _ordered_ties(losses: np.ndarray) -> np.ndarray:
    """``losses`` with each run of equal values raised by 0, 1, 2, ... units in the last place,
    in row order.

    A classifier starts at log K on every row: the weight block's cut then falls among n equal
    losses, where the incremental selection's zones hold them all and every step of the first
    epoch took an O(n) selection (quadratic in n). Ordered by row, the tie rule of
    :meth:`TrimmedProblem.keep_smallest`, the ties part within about ``n`` units in the last
    place (1e-10 relative at a million rows), and the zones hold a band of rows again.
    """
    order = np.lexsort((np.arange(losses.shape[0]), losses))
    v = losses[order]
    run = np.r_[True, v[1:] != v[:-1]]  # NaN != NaN: each its own run
    if run.all():
        return losses
    start = np.maximum.accumulate(np.where(run, np.arange(v.shape[0]), 0))
    out = losses.copy()
    with np.errstate(invalid="ignore"):  # spacing(inf) is NaN: infinite losses stay as they are
        ulp = np.where(np.isfinite(v), np.spacing(np.abs(v)), 0.0)
    out[order] = v + (np.arange(v.shape[0]) - start) * ulp
    return out


def smart(
    problem: TrimmedProblem,
    *,
    variance_reduction: str = "saga",
    batch_size: int | str = "auto",
    block: str = "cyclic",
    weight_step: float = np.inf,
    max_iter: int = 100,
    tol: float = 1e-4,
    rng: np.random.Generator | None = None,
    step_size: float | None = None,
    step_scale: float = 1.0,
    step_growth: float = 1.5,
    polish: bool = True,
) -> TrimmedFit:
    """Stochastic variance-reduced block prox-gradient on ``(W, b)`` and ``w``.

    The ``(W, b)`` block takes minibatch prox-gradient steps with a variance-
    reduced gradient: a table of per-sample score derivatives ``dS_i`` (one row per
    sample, ``K`` numbers, not a full gradient) and its weighted aggregate
    ``X^T (w/h * dS)``. "saga" refreshes the rows of the sampled minibatch at each
    step; "svrg" only between epochs. Both refresh the whole table at the end of
    each accepted epoch, in the pass that computes the exact objective, so the
    aggregate is then the exact gradient. The ``w`` block takes
    projected-gradient steps onto the capped simplex; its gradient is the loss
    vector ``f / h``, read from a table of the latest per-sample losses, so a
    ``w`` step costs no pass over the data; only the rows whose weight changed
    update the aggregate.

    ``block="cyclic"`` updates ``(W, b)`` then ``w`` at every iteration;
    ``block="random"`` updates one block per iteration, drawn uniformly.

    Steps: ``(W, b)`` uses ``step_scale / L(b)`` with the minibatch smoothness
    ``L(b) = n(b-1)/(b(n-1)) L_full + (n-b)/(b(n-1)) L_terms`` built from the
    Lipschitz constants of :meth:`TrimmedProblem.lipschitz`. The objective is
    linear in ``w``: that block's Lipschitz constant is 0 and its step ``1/0``
    unbounded, so the default ``weight_step=inf`` takes the exact block minimiser
    (weight 1 on the ``h`` smallest table losses, :meth:`TrimmedProblem.keep_smallest`;
    it changes only when a touched row crosses the cut, and from
    ``_KEPT_SET_MIN_ROWS`` rows on it is updated from the touched rows and those
    in the buckets of loss values at the cuts, not by a pass over all ``n``: same weights,
    see :class:`KeptSet`; with
    caps it is a sort, run at most ``_CAPPED_SELECTIONS`` times an epoch).
    A finite ``weight_step`` takes
    the projected-gradient step ``w <- P(w - weight_step * f / fbar)`` onto the
    capped simplex instead, with ``fbar`` the current weighted mean loss (so the
    step is free of the loss scale); its fixed points are the same.

    The exact objective is evaluated once per epoch (one pass). The ``(W, b)``
    step starts from the Lipschitz value above and grows by ``step_growth`` after
    each epoch that lowered the objective; an epoch that raised it is undone, the
    step halved and growth stopped. So the recorded objective is non-increasing.

    Stopping: after an accepted epoch, the run has converged when the norm of the
    prox-gradient mapping of the ``(W, b)`` block (full gradient at the current
    weights, step ``1 / L(b)``) is at most ``tol`` times a reference, and the
    weights are optimal for the exact losses to within ``tol`` (relative) of the
    weighted loss. The reference is the norm of that mapping at the start
    (:meth:`TrimmedProblem.start_model`), or the median norm of the per-sample gradients
    there when smaller, but at least ``tol`` times that median (a start already
    stationary has a gradient of rounding size). A small decrease
    of the objective alone is not enough: on a badly conditioned problem it is
    small far from a solution.

    When ``polish`` is true and an epoch ends with a kept set (``w > 0.5``) seen at
    the end of an earlier one (it has settled, or the epochs cycle), the ``(W, b)``
    block is minimised on it exactly by :func:`fit_weighted` (to ``tol`` times
    the reference, warm-started), then the epochs go on if the test fails. The
    run ends with the exact weight block on the exact losses when that lowers the
    objective (``h`` integer).

    References
    ----------
    .. [1] Aravkin, A. and Davis, D. "A SMART Stochastic Algorithm for Nonconvex
       Optimization with Applications to Robust Machine Learning", 2016.
    .. [2] Gazagnadou, N., Gower, R. M. and Salmon, J. "Optimal mini-batch and
       step sizes for SAGA", ICML 2019.
    """
    rng = np.random.default_rng() if rng is None else rng
    P = problem
    X, Y, h = P.X, P.Y, P.h
    n = X.shape[0]
    L_full, L_terms = P.lipschitz()
    if batch_size == "auto":
        # An epoch advances about as much as n / (b + L_terms / L_full) full-gradient
        # steps: b near that ratio is within 2x of b = 1 at a fraction of the
        # per-step overhead. At least 128 rows (a step of fewer costs more in Python
        # overhead than in arithmetic), at most 256; on small data at least 8 steps an
        # epoch (down to 64 rows), so the steps between two exact objective checks
        # stay stochastic.
        batch_size = int(min(np.clip(np.ceil(L_terms / max(L_full, 1e-300)), 128, 256), max(64, n // 8)))
    bsz = int(min(max(1, batch_size), n))
    n_batches = -(-n // bsz)
    fi = float(P.fit_intercept)

    if step_size is None:
        L_b = (
            L_full
            if n == 1
            else n * (bsz - 1) / (bsz * (n - 1)) * L_full + (n - bsz) / (bsz * (n - 1)) * L_terms
        )
        step_size = step_scale / max(L_b, 1e-12)  # all-zero design: any step
    eta = eta_ref = float(step_size)

    W, b = P.start_model()
    loss_tab, D = linear_loss(P.loss, P.scores(W, b), Y)
    loss_tab = _ordered_ties(loss_tab)
    w = P.start_weights(loss_tab)

    def aggregate(w, D):
        c = w / h
        return X.T @ (c[:, None] * D), c @ D * fi

    def residual(W, agg_W, agg_b):
        """Norm of the prox-gradient mapping of the (W, b) block at step eta_ref."""
        G_W = (W - P.prox(W - eta_ref * agg_W, eta_ref)) / eta_ref
        return float(np.sqrt(np.sum(G_W * G_W) + np.sum(agg_b * agg_b)))

    def stationary(W, w, agg_W, agg_b, losses):
        """The stopping test, with the aggregate at the exact gradient."""
        # the weights' loss exceeds the best weights' by 0 at a block minimiser
        kept = kept_sum(w, losses)
        gap = kept - kept_sum(P.keep_smallest(losses), losses)
        return residual(W, agg_W, agg_b) <= tol * ref and gap <= tol * abs(kept)

    agg_W, agg_b = aggregate(w, D)
    # Scale of the stopping test: the gradient at the start, or the median norm of
    # the per-sample gradients there when smaller: a few gross leverage rows can
    # dominate the former and make every later point look stationary. Not below tol
    # times the latter: a start already stationary (a penalty that zeroes every
    # coefficient) has a gradient of rounding size, which no later point would beat.
    with np.errstate(over="ignore"):  # a gross target's is inf, which the median ignores
        sample_grad = np.linalg.norm(D, axis=1) * np.sqrt(row_sq_norms(X) + fi)
    res0, typical = residual(W, agg_W, agg_b), float(np.median(sample_grad))
    ref = max(min(res0, typical), tol * typical) if 0 < typical < np.inf else res0

    # Exact weight block: the kept set stays optimal while (a bound on) the largest
    # kept loss is <= (a bound on) the smallest trimmed one; the bounds follow the
    # rows a step touched, and only a crossing triggers a new selection. That
    # selection, keep_smallest of the table, is kept up to date by KeptSet in
    # O(batch log batch + bucket) per step (an O(n log n) build about once an epoch); on
    # small problems the plain O(n) selection costs less. Both give the same weights.
    exact_w = np.isinf(weight_step)
    # With caps the selection is a sort (KeptSet's buckets count rows), and the row kept in part
    # sits at the cut, so nearly every step crosses it: the selection then runs at most
    # _CAPPED_SELECTIONS times an epoch (the weights wait a few steps, as a block left out)
    kept_set = KeptSet(P, _KEPT_SET_BUCKET * bsz, incremental=n >= _KEPT_SET_MIN_ROWS and P.caps is None)
    bounds = [np.inf, -np.inf]  # [upper bound of max kept loss, lower bound of min trimmed]
    every = 1 if P.caps is None else max(1, n_batches // _CAPPED_SELECTIONS)
    waited = [0]  # steps since the last selection

    def w_step(w, loss_tab, agg_W, agg_b, touched=None):
        """The weight block; updates ``w`` in place."""
        if exact_w:
            if touched is not None and bounds[0] <= bounds[1]:
                lt, kept = loss_tab[touched], w[touched] > 0
                # rows with weight to take: the trimmed, and with caps one kept in part
                free = ~kept if P.caps is None else w[touched] < P.caps[touched]
                if kept.any():
                    bounds[0] = max(bounds[0], float(lt[kept].max()))
                if free.any():
                    bounds[1] = min(bounds[1], float(lt[free].min()))
                if bounds[0] <= bounds[1]:
                    return w, agg_W, agg_b
            waited[0] += 1
            if waited[0] < every and bounds[0] < np.inf:  # bounds[0] is inf at an epoch's start
                return w, agg_W, agg_b
            waited[0] = 0
            idx, w_idx, bounds[0], bounds[1] = kept_set.update(loss_tab, w)
        else:
            # a step in units of the kept losses (an infinite move leaves a row out, as a
            # gross target's infinite loss does); when they are 0 (kept rows fitted exactly),
            # its limit, the exact step, where inf * 0 is NaN
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                move = (weight_step / np.float64(kept_sum(w, loss_tab) / h)) * loss_tab
            w_new = P.keep_smallest(loss_tab) if np.isnan(move).any() else P.project(w - move)
            idx = np.flatnonzero(w_new != w)
            w_idx = w_new[idx]
        if idx.size:
            dc = (w_idx - w[idx]) / h
            agg_W = agg_W + X[idx].T @ (dc[:, None] * D[idx])
            agg_b = agg_b + dc @ D[idx] * fi
            w[idx] = w_idx
        return w, agg_W, agg_b

    # P.objective(W, b, w) term for term, on the losses already at hand
    objective = [kept_sum(w, loss_tab) / h + P.alpha * P.penalty_value(W)]
    n_iter, converged, rejected, grow = 0, False, 0, step_growth
    seen, stalled_key = {np.packbits(P.kept_mask(w)).tobytes()}, None  # kept sets after epochs
    for epoch in range(max_iter):
        saved = (W, b, w.copy(), D.copy(), loss_tab.copy(), agg_W, agg_b)
        bounds[:] = [np.inf, -np.inf]  # tables are refreshed below or were restored
        kept_set.reset()
        perm = rng.permutation(n)
        n_steps = n_batches if block == "cyclic" else 2 * n_batches
        pick_w = rng.random(n_steps) < 0.5 if block == "random" else None
        k = 0
        prox = P.prox_at(eta)
        for step in range(n_steps):
            if block == "random" and pick_w[step]:
                w, agg_W, agg_b = w_step(w, loss_tab, agg_W, agg_b)
                continue
            rows = slice((k % n_batches) * bsz, (k % n_batches + 1) * bsz)
            B = perm[rows]
            k += 1
            XB = X[B]  # gathered per minibatch: X[perm] held a second copy of X for the epoch
            l_B, D_B = linear_loss(P.loss, XB @ W + b, Y[B])
            cdiff = (w[B] / h)[:, None] * (D_B - D[B])
            corr_W = XB.T @ cdiff
            corr_b = cdiff.sum(axis=0) * fi
            scale = n / B.size
            W = prox(W - eta * (scale * corr_W + agg_W))
            b = b - eta * (scale * corr_b + agg_b)
            loss_tab[B] = l_B
            kept_set.touch(B)
            if variance_reduction == "saga":
                D[B] = D_B
                agg_W = agg_W + corr_W
                agg_b = agg_b + corr_b
            if block == "cyclic":
                w, agg_W, agg_b = w_step(w, loss_tab, agg_W, agg_b, B)
        n_iter = epoch + 1

        losses, D_now = linear_loss(P.loss, P.scores(W, b), Y)
        f_new = kept_sum(w, losses) / h + P.alpha * P.penalty_value(W)
        f_old = objective[-1]
        if not f_new <= f_old + 1e-12 * abs(f_old):  # beyond rounding: a real rise
            W, b, w, D, loss_tab, agg_W, agg_b = saved  # undo the epoch
            eta *= 0.5
            grow = 1.0  # the largest stable step is now bracketed
            rejected += 1
            if rejected > 30:
                break
            continue
        objective.append(f_new)
        eta *= grow
        # fresh tables: the aggregate becomes the exact gradient (it also clears the
        # drift of the running sums), the snapshot of "svrg"
        loss_tab, D = losses, D_now
        agg_W, agg_b = aggregate(w, D)
        key = np.packbits(P.kept_mask(w)).tobytes()
        recurring, stalled = key in seen, key == stalled_key
        seen.add(key)
        done = stationary(W, w, agg_W, agg_b, loss_tab)
        if polish and recurring and not stalled and not done:
            # The kept set has settled, or the epochs cycle between kept sets (at a
            # tie of the h-th smallest loss): minimise the model block on it
            # exactly. Where the loss is flat (small alpha, nearly separable classes)
            # first-order epochs close the last gap at a rate set by the condition
            # number, a quasi-Newton refit does not; and refits followed by exact
            # weight steps cannot cycle (each change of the kept set lowers the
            # objective). Not again on a set where it gained nothing.
            W_p, b_p, _ = fit_weighted(P, w / h, W, b, tol=tol * ref / np.sqrt(W.size + b.size))
            losses, D_now = linear_loss(P.loss, P.scores(W_p, b_p), Y)
            f_p = kept_sum(w, losses) / h + P.alpha * P.penalty_value(W_p)
            stalled_key = None if f_p < objective[-1] else key
            if f_p <= objective[-1]:
                W, b, loss_tab, D = W_p, b_p, losses, D_now
                objective.append(f_p)
                agg_W, agg_b = aggregate(w, D)
                done = stationary(W, w, agg_W, agg_b, loss_tab)
        if done:
            converged = True
            break
    # finish with the exact weight block on the exact losses: the minimiser over the capped
    # simplex, so it never raises the objective but by rounding, and its weights are 0 / 1
    # where a finite weight_step on tied losses leaves fractions. Every exit leaves loss_tab
    # exact at (W, b): an accepted epoch or a refit refreshes it, a rejected one restores the
    # table saved with the model
    w = P.keep_smallest(loss_tab)
    f_exact = kept_sum(w, loss_tab) / h + P.alpha * P.penalty_value(W)
    if f_exact < objective[-1]:
        objective.append(f_exact)
    return TrimmedFit(W, b, w, n_iter, objective, converged)
