"""SMART's exact weight step kept up to date as a few losses change at a time.

The weight block of SMART (Aravkin et al.) keeps the ``h`` smallest losses, each class's
floor first. Between minibatch steps only the rows of the batch change their losses, so
the selection is settled by each row's loss except near a cut; :class:`KeptSet` files the
rows in buckets of loss values, counts them per bucket and re-selects only in the buckets of
the cuts, with the same result as the full selection.
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


_CHUNK = 64  # buckets per chunk: a cut is found from the chunk sums, then within one chunk


class KeptSet:
    """The exact weight block of SMART, ``keep_smallest`` of a loss table that
    changes a few rows at a time.

    :meth:`update` returns the rows whose weight changes, their new weights, the
    largest kept and the least trimmed loss. With ``incremental`` false each
    update is the full selection (:meth:`TrimmedProblem.greedy`, ``O(n)``). With
    it, a build (``O(n log n)``, with the full selection) splits the loss values
    into buckets of about ``bucket`` rows each, and files every row under its
    bucket; each floor group and the other rows are counted per bucket. An update
    refiles the rows touched since the last one (passed to :meth:`touch`), finds
    from the counts the bucket of each floor's cut and of the rest's (``O(G n /
    bucket / 64 + G 64)`` for ``G`` groups) and selects only among the rows of the
    buckets between the old and the new cuts, the only untouched rows whose weight
    can change: ``O(touched log touched + bucket)`` when the cuts move by less than a
    bucket, whatever ``n``. Rows are refiled by appending them to their new bucket's
    room; a bucket out of room moves to fresh room twice its size (``O(bucket)``,
    amortised). A NaN loss, or buckets grown so full that reading them since the
    build cost more than a build, bring a new build.

    Ties are those of :meth:`TrimmedProblem.greedy`: equal losses share a bucket,
    so a floor's cut keeps those of the first rows as there; when the rest's cut falls
    on equal losses (where ``argpartition`` chooses, in the full selection) the
    update is the full selection. So the result is always that of
    ``keep_smallest``, ties included.
    """

    def __init__(self, problem: TrimmedProblem, bucket: int, incremental: bool = True):
        P = self.P = problem
        n = self.n = P.X.shape[0]
        self.bucket = max(1, int(bucket))
        f = P.floor_counts  # as many kept by each floor as keep_smallest keeps
        groups = np.flatnonzero(f > 0)
        self.f = f[groups]
        self.m = round(P.h) - int(f.sum())  # kept beyond the floors
        # a cut of the rest with rows either side (else the full selection is as cheap); with
        # caps the selection is a sort, not counts of rows
        self.incremental = incremental and P.caps is None and 0 < self.m < n - int(f.sum())
        if self.incremental:
            # each row's class for the counts: its floor group's place, or the last for the others
            self.cls = np.full(n, groups.size, dtype=np.intp)
            for i, k in enumerate(groups.tolist()):
                self.cls[P.group_rows[k]] = i
            # for _cuts: the classes whose counts it reads (each floor's, then all twice, for
            # the rest's m-th and m + 1-th smallest), and those two ranks
            G = groups.size + 1
            self.k = np.concatenate((np.arange(G - 1), np.tile(np.arange(G), 2)))
            self.q = np.array([self.m, self.m + 1])
            self.chunk = np.arange(_CHUNK)
        self.reset()

    def reset(self):
        """Forget the buckets: the table or the weights were replaced."""
        self.valid = False
        self.pending = []

    def touch(self, rows: np.ndarray):
        """Rows whose loss in the table has changed."""
        if self.valid:
            self.pending.append(rows)

    def _full(self, losses, w):
        """The full selection as an update against ``w``."""
        w_new, _, top, low = self.P.greedy(losses, bounds=True)
        idx = np.flatnonzero(w_new != w)
        return idx, w_new[idx], top, low

    def _rebuild(self, losses, w):
        self.valid, self.pending = False, []
        result = self._full(losses, w)
        if not self.incremental or np.isnan(losses).any():  # NaN (a diverging epoch): no buckets
            return result
        n, s, G = self.n, self.bucket, self.f.size + 1
        # bucket edges: every 16th of a sorted sample of 16 rows a bucket (not a sort of all n)
        n_buckets = max(1, n // s)
        sample = np.sort(losses[:: max(1, n // (16 * n_buckets))])
        step = max(1, sample.size // n_buckets)
        self.edges = np.unique(sample[step::step])
        nb = self.edges.size + 1
        self.nbp = nbp = -(-nb // _CHUNK) * _CHUNK
        self.k_at = self.k * nbp
        self.bk = np.searchsorted(self.edges, losses, side="right")
        self.cnt = np.bincount(self.cls * nbp + self.bk, minlength=G * nbp)  # by class, then bucket
        self.ccnt = self.cnt.reshape(G, -1, _CHUNK).sum(axis=2).ravel()
        self.fill = np.zeros(nbp, dtype=np.intp)  # slots used, stale ones included
        self.base, self.cap = self.fill.copy(), self.fill.copy()
        self.slot_row, self.end = np.empty(3 * n + nbp * s, dtype=np.intp), 0
        self.pos = np.empty(n, dtype=np.intp)
        # bucket ids fit 16 bits (nearly always): a radix sort, O(n)
        order = np.argsort(self.bk.astype(np.uint16) if nbp <= 1 << 16 else self.bk, kind="stable")
        self._place(np.arange(nbp), self.cnt.reshape(G, nbp).sum(axis=0), order)
        self.cc = np.cumsum(self.ccnt.reshape(G, -1), axis=1)
        self.jf, _, self.jr, _, _ = self._cuts()
        self.valid, self.read = True, 0
        return result

    def _place(self, buckets, size, rows, arriving=0):
        """Give ``buckets`` (increasing) fresh room at the end of ``slot_row`` (twice their
        ``size`` rows and ``arriving`` rows, and a bucket's worth); file there ``rows``,
        grouped by bucket. A row's slot is ``pos[row]``: its earlier slots turn stale."""
        cap = 2 * (size + arriving) + self.bucket
        need = self.end + int(cap.sum())
        if need > self.slot_row.size:
            self.slot_row = np.concatenate([self.slot_row, np.empty(need, dtype=np.intp)])
        base = self.end + np.cumsum(cap) - cap
        self.end = need
        self.base[buckets], self.cap[buckets], self.fill[buckets] = base, cap, size
        slots = np.repeat(base - (np.cumsum(size) - size), size) + np.arange(rows.size)
        self.slot_row[slots] = rows
        self.pos[rows] = slots

    def _refile(self, U, new):
        """Move rows ``U`` to their buckets ``new``."""
        old = self.bk[U]
        moved = new != old
        if not moved.any():
            return
        U, new, old = U[moved], new[moved], old[moved]
        order = np.argsort(new, kind="stable")
        U, new, old = U[order], new[order], old[order]
        first = np.searchsorted(new, new)
        slot = self.base[new] + self.fill[new] + np.arange(new.size) - first
        full = slot >= self.base[new] + self.cap[new]
        if full.any():  # move those buckets to room for their rows and these arrivals
            J = np.unique(new[full])
            live = self.cnt.reshape(-1, self.nbp)[:, J].sum(axis=0)
            arriving = np.searchsorted(new, J, side="right") - np.searchsorted(new, J)
            self._place(J, live, self._rows_in(J)[0], arriving)
            slot = self.base[new] + self.fill[new] + np.arange(new.size) - first
        c = self.cls[U]
        at = np.concatenate([c * self.nbp + old, c * self.nbp + new])
        step = np.repeat(np.array([-1, 1]), U.size)
        np.add.at(self.cnt, at, step)
        np.add.at(self.ccnt, at // _CHUNK, step)
        np.add.at(self.fill, new, 1)
        self.bk[U] = new
        self.slot_row[slot] = U
        self.pos[U] = slot

    def _rest(self, cum):
        """Rows left after the floors among those counted in ``cum`` (cumulative counts, by
        class on the axis before the last)."""
        return cum[..., -1, :] + np.maximum(cum[..., :-1, :] - self.f[:, None], 0).sum(axis=-2)

    def _cuts(self):
        """From the counts: each floor's cut (its bucket, and how many of its group's rows there
        the floor keeps); the bucket of the rest's ``m``-th smallest loss and how many of the
        rest lie before it; the bucket of its ``m + 1``-th. Each in two steps: the chunk from
        the chunks' cumulative counts, then the bucket from the cumulative counts within it."""
        f, cc, F, G = self.f, self.cc, self.f.size, self.f.size + 1
        R = self._rest(cc)
        Jr = np.searchsorted(R, self.q)
        Jf = np.count_nonzero(cc[:F] < f[:, None], axis=1)
        J = np.concatenate((Jf, Jr.repeat(G)))
        start = np.where(J > 0, cc[self.k, J - 1], 0)
        cum = start[:, None] + np.cumsum(self.cnt[(self.k_at + J * _CHUNK)[:, None] + self.chunk], axis=1)
        j = np.count_nonzero(cum[:F] < f[:, None], axis=1)
        need = f - np.where(j > 0, cum[self.k[:F], j - 1], start[:F])
        R_in = self._rest(cum[F:].reshape(2, G, _CHUNK))
        jr, jl = np.count_nonzero(R_in < self.q[:, None], axis=1).tolist()
        J0, J1 = Jr.tolist()
        before = R_in[0, jr - 1] if jr else (R[J0 - 1] if J0 else 0)
        return Jf * _CHUNK + j, need, J0 * _CHUNK + jr, int(before), J1 * _CHUNK + jl

    def _rows_in(self, buckets):
        """The rows filed in ``buckets``, and how many slots were read."""
        n_slots = self.fill[buckets]
        total = int(n_slots.sum())
        slots = np.repeat(self.base[buckets] - (np.cumsum(n_slots) - n_slots), n_slots) + np.arange(total)
        rows = self.slot_row[slots]
        return rows[self.pos[rows] == slots], total

    def update(self, losses: np.ndarray, w: np.ndarray) -> tuple:
        """``keep_smallest(losses)`` against ``w`` (its previous result, or any weights
        after :meth:`reset`): the rows whose weight changes, their new weights, the
        largest kept and the least trimmed loss."""
        if not self.valid:
            return self._rebuild(losses, w)
        if len(self.pending) == 1:
            U = self.pending[0]
        else:
            U = np.unique(np.concatenate(self.pending)) if self.pending else np.zeros(0, np.intp)
        self.pending = []
        l_U = losses[U]
        if np.isnan(l_U).any():
            return self._rebuild(losses, w)
        self._refile(U, np.searchsorted(self.edges, l_U, side="right"))
        self.cc = np.cumsum(self.ccnt.reshape(self.f.size + 1, -1), axis=1)
        jf, need, jr, before, jl = self._cuts()
        # untouched rows change weight only in buckets between a cut's old and new place
        spans = sorted([(min(self.jr, jr), max(self.jr, jl))]
                       + [(min(a, b), max(a, b)) for a, b in zip(self.jf.tolist(), jf.tolist())])
        runs = [list(spans[0])]
        for a, b in spans[1:]:  # merged where they meet (a few spans: one a cut)
            if a <= runs[-1][1] + 1:
                runs[-1][1] = max(runs[-1][1], b)
            else:
                runs.append([a, b])
        buckets = np.concatenate([np.arange(a, b + 1) for a, b in runs])
        near, read = self._rows_in(buckets)
        self.jf, self.jr, self.read = jf, jr, self.read + read
        bU = self.bk[U]
        away = buckets[np.minimum(np.searchsorted(buckets, bU), buckets.size - 1)] != bU
        rows = np.concatenate([near, U[away]])
        v, b, c = losses[rows], self.bk[rows], self.cls[rows]
        cut = np.append(jf, -1)[c]  # -1: the rows of no floor
        by_floor, top = b < cut, -np.inf
        at = np.flatnonzero(b == cut)
        for i in range(self.f.size):
            r = at[c[at] == i]
            by_floor[r], t = keep_first(v[r], rows[r], int(need[i]))
            top = max(top, float(t))
        # the rest keeps its losses up to theta, its (m - before)-th smallest, in bucket jr
        k = self.m - before
        theta, low = np.partition(v[~by_floor & ((b == jr) | (b == jl))], [k - 1, k])[k - 1 : k + 1]
        if self.read > self.n and read > 4 * self.bucket * buckets.size:
            self.valid = False  # buckets grown too full since the build: a new one next time
        if not theta < low:  # equal losses at the cut: argpartition's choice
            return self._full(losses, w)
        vals = (by_floor | (v <= theta)).astype(float)
        changed = np.flatnonzero(vals != w[rows])
        idx = rows[changed]
        order = np.argsort(idx)
        return idx[order], vals[changed[order]], max(float(theta), top), float(low)
