"""SMART's exact weight step kept up to date as a few losses change at a time.

The weight block of SMART (Aravkin et al.) keeps the ``h`` smallest losses, each class's
floor first. Between minibatch steps only the rows of the batch change their losses, so
the selection is settled by each row's loss except near a cut; :class:`KeptSet` tracks the
rows near the cuts and re-selects among them, with the same result as the full selection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from skrate._trimmed_problem import TrimmedProblem


def keep_first(v: np.ndarray, rows: np.ndarray, f: int) -> tuple[np.ndarray, float]:
    """The ``f`` smallest of the losses ``v`` of ``rows`` (``1 <= f <= v.size``) and
    the ``f``-th smallest ``t``; of the losses equal to ``t``, those of the first rows.

    The tie rule of a floor, for :meth:`TrimmedProblem.greedy` and :class:`KeptSet`
    alike: a stable sort by group and loss would keep the same rows.
    """
    t = np.partition(v, f - 1)[f - 1]
    keep = v <= t
    extra = np.count_nonzero(keep) - f
    if extra:  # equal losses at the cut: drop those of the last rows
        at = np.flatnonzero(v == t)
        keep[at[np.argsort(rows[at])[-extra:]]] = False
    return keep, t


class KeptSet:
    """The exact weight block of SMART, ``keep_smallest`` of a loss table that
    changes a few rows at a time.

    :meth:`update` returns the rows whose weight changes, their new weights, the
    largest kept and the least trimmed loss. With ``incremental`` false each
    update is the full selection (:meth:`TrimmedProblem.greedy`, ``O(n)``). With
    it, whether a row is kept is settled by its loss except near a cut (per group
    the floor's, then the rest's): below ``lo`` of the cut kept, above ``hi`` not,
    ``lo`` and ``hi`` fixed when the zones are built (an ``O(n)`` selection) about
    ``band`` rows either side of the cut. An update sorts only the rows touched
    since the last one (passed to :meth:`touch`) into the zones and selects among
    the rows between ``lo`` and ``hi``: ``O(touched + band)``. The zones are rebuilt
    when a cut leaves its band or the band swells (a value range grown dense). The band adapts
    (up to ``n / 8``) so that updates and rebuilds cost about alike; as the cut drifts further
    between rebuilds on more rows the band widens, so an epoch's selections grow somewhat faster
    than ``n`` (about ``n^1.25`` measured from 100,000 to 800,000 rows). The
    full selection is taken when the rest's cut falls on equal losses (where the
    choice of ``argpartition`` decides, in the full selection), and for a while
    after zones were built too dense to help (equal losses: the start of a
    classifier, all losses log(K)). So the result is always that of
    ``keep_smallest``, ties included.
    """

    def __init__(self, problem: TrimmedProblem, band: int, incremental: bool = True):
        P = self.P = problem
        n = self.n = P.X.shape[0]
        self.band = self.min_band = max(1, int(band))
        self.max_band = max(self.band, n // 8)
        self.f = P.floor_counts  # as many kept by each floor as keep_smallest keeps
        self.floor_groups = [int(k) for k in np.flatnonzero(self.f > 0)]
        self.m = round(P.h) - int(self.f.sum())  # kept beyond the floors
        # a cut of the rest with rows either side (else the full selection is as cheap)
        self.incremental = incremental and 0 < self.m < n - int(self.f.sum())
        self.wait, self.backoff, self.lasted = 0, 1, 0
        self.reset()

    def reset(self):
        """Forget the zones: the table or the weights were replaced."""
        self.valid = False
        self.pending = []

    def touch(self, rows: np.ndarray):
        """Rows whose loss in the table has changed."""
        if self.valid:
            self.pending.append(rows)

    def _zone(self, l, g):
        """Zones of losses ``l`` of rows in groups ``g``: 0 kept by the group's floor,
        1 near the floor's cut; then for the rest 2 kept, 3 near its cut, 4 trimmed."""
        z = (l >= self.lo).astype(np.int8) + (l > self.hi) + np.int8(2)
        if self.floor_groups:
            z = np.where(l < self.lo_g[g], np.int8(0), np.where(l <= self.hi_g[g], np.int8(1), z))
        return z

    def _full(self, losses, w):
        """The full selection as an update against ``w``, and the rows left after the
        floors (which the zones need)."""
        w_new, rest, top, low = self.P.greedy(losses, bounds=True)
        idx = np.flatnonzero(w_new != w)
        return (idx, w_new[idx], top, low), rest

    @staticmethod
    def _cut(v, k, band):
        """Zone bounds about the ``k``-th smallest of ``v`` (from 0); -/+inf past its ends."""
        lo_rank, hi_rank = k - band, k + band
        ranks = [r for r in (lo_rank, hi_rank) if 0 <= r < v.size]
        p = np.partition(v, ranks) if ranks else v
        lo = p[lo_rank] if lo_rank >= 0 else -np.inf
        return lo, (p[hi_rank] if hi_rank < v.size else np.inf)

    def _rebuild(self, losses, w, outgrown=False):
        # a rebuild selects among all n rows, an update among about band: a cut that left
        # its band before the updates' work (lasted x band) reached a rebuild's widens the
        # band (fewer rebuilds), zones that lasted long past it narrow it (less per update)
        work = self.lasted * self.band
        if outgrown and work < self.n:
            self.band = min(2 * self.band, self.max_band)
        elif work > 8 * self.n:
            self.band = max(self.band // 2, self.min_band)
        self.valid, self.pending, self.lasted = False, [], 0
        if not self.incremental:
            return self._full(losses, w)[0]
        if self.wait > 0:  # zones were too dense to help: the full selection for now
            self.wait -= 1
            return self._full(losses, w)[0]
        result, rest = self._full(losses, w)
        _, _, top, low = result
        if np.isnan(top) or np.isnan(low):  # NaN losses (a diverging epoch): no zones
            return result
        P, G, M = self.P, self.f.size, self.band
        self.lo, self.hi = self._cut(losses if rest is None else losses[rest], self.m - 1, M)
        self.lo_g, self.hi_g = np.full(G, -np.inf), np.full(G, -np.inf)  # no cut: zones 2-4
        self.n_floor, self.near_g = np.zeros(G, np.intp), [None] * G
        n_near = 0
        for k in self.floor_groups:
            rows = P.group_rows[k]
            v = losses[rows]
            lo, hi = self.lo_g[k], self.hi_g[k] = self._cut(v, self.f[k] - 1, M)
            self.n_floor[k] = np.count_nonzero(v < lo)
            self.near_g[k] = rows[np.flatnonzero((v >= lo) & (v <= hi))]
            n_near += self.near_g[k].size
        z = self.zone = self._zone(losses, P.groups)
        self.n_kept = int(np.count_nonzero(z == 2))
        self.near = np.flatnonzero(z == 3)
        self.swollen = 8 * M * (1 + len(self.floor_groups))  # rows near the cuts
        if n_near + self.near.size > self.swollen:  # equal losses filling the bands
            self.wait, self.backoff = self.backoff, min(2 * self.backoff, 16)
        else:
            self.valid, self.backoff = True, 1
        return result

    def _sync(self, losses):
        """Sort the rows touched since the last update into the zones.

        Returns those not near a cut and their weights, or None on a NaN loss."""
        U = self.pending[0] if len(self.pending) == 1 else np.unique(np.concatenate(self.pending))
        self.pending = []
        l_U = losses[U]
        if np.isnan(l_U).any():
            return None
        g_U = self.P.groups[U] if self.floor_groups else None
        new = self._zone(l_U, g_U)
        old = self.zone[U]
        self.zone[U] = new
        self.n_kept += int(np.count_nonzero(new == 2)) - int(np.count_nonzero(old == 2))
        near = self.near
        self.near = np.concatenate([near[self.zone[near] == 3], U[(new == 3) & (old != 3)]])
        if self.floor_groups:
            G = self.f.size
            self.n_floor += np.bincount(g_U[new == 0], minlength=G)
            self.n_floor -= np.bincount(g_U[old == 0], minlength=G)
            moved = (new == 1) != (old == 1)
            if moved.any():
                into = (new == 1) & (old != 1)
                entered, g_entered = U[into], g_U[into]
                for k in np.flatnonzero(np.bincount(g_U[moved], minlength=G)):
                    near = self.near_g[k]
                    kept_near = near[self.zone[near] == 1]
                    self.near_g[k] = np.concatenate([kept_near, entered[g_entered == k]])
        settled = (new != 1) & (new != 3)
        return U[settled], (new[settled] != 4).astype(float)

    def update(self, losses: np.ndarray, w: np.ndarray):
        """``keep_smallest(losses)`` against ``w`` (its previous result, or any weights
        after :meth:`reset`): the rows whose weight changes, their new weights, the
        largest kept and the least trimmed loss."""
        if not self.valid:
            return self._rebuild(losses, w)
        rows, vals = [], []
        if self.pending:
            settled = self._sync(losses)
            if settled is None:
                return self._rebuild(losses, w)
            rows.append(settled[0])
            vals.append(settled[1])
        # each floor keeps the need = f - n_floor smallest near its cut (of equal
        # losses the first rows, as keep_smallest); the others join the rest
        n_kept, top, l_near, floors = self.n_kept, -np.inf, [losses[self.near]], []
        size = self.near.size
        for k in self.floor_groups:
            r = self.near_g[k]
            need = self.f[k] - self.n_floor[k]
            size += r.size
            if self.hi_g[k] < self.lo:  # all the group's rows near the floor's cut are
                if not 0 <= need <= r.size:  # kept, by the floor or as the rest's
                    return self._rebuild(losses, w, outgrown=True)
                n_kept += r.size - need
                floors.append((r, None, None))
                continue
            if not 1 <= need <= r.size:
                return self._rebuild(losses, w, outgrown=True)
            v = losses[r]
            by_floor, t = keep_first(v, r, need)
            top = max(top, float(t))
            if self.lo_g[k] <= self.hi:  # else all the others are trimmed
                v_rest = v[~by_floor]
                n_kept += int(np.count_nonzero(v_rest < self.lo))
                l_near.append(v_rest[(v_rest >= self.lo) & (v_rest <= self.hi)])
            floors.append((r, v, by_floor))
        if size > self.swollen:
            return self._rebuild(losses, w)
        # the rest keeps its losses up to theta, the k-th smallest near its cut
        l_near = np.concatenate(l_near) if len(l_near) > 1 else l_near[0]
        k = self.m - n_kept
        if not 1 <= k < l_near.size:
            return self._rebuild(losses, w, outgrown=True)
        theta, low = np.partition(l_near, [k - 1, k])[k - 1 : k + 1]
        if not theta < low:  # equal losses at the cut: argpartition's choice
            return self._full(losses, w)[0]
        rows.append(self.near)
        vals.append(losses[self.near] <= theta)
        for r, v, by_floor in floors:
            rows.append(r)
            vals.append(np.ones(r.size, bool) if v is None else by_floor | (v <= theta))
        rows = np.concatenate(rows)
        vals = np.concatenate(vals).astype(float)
        changed = np.flatnonzero(vals != w[rows])
        idx = rows[changed]
        order = np.argsort(idx)
        self.lasted += 1
        return idx[order], vals[changed[order]], max(float(theta), top), float(low)
