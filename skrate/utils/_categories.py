"""Category values a fitted one-hot encoding never saw.

With ``handle_unknown="ignore"`` a value new at predict time is encoded as none of its column's
categories. That is right for a rare new value and wrong for a column coded anew (sex as 0/1
after "F"/"M"), so skrate says which values and rows it met.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


def unseen_rows(onehot, categories: Sequence[np.ndarray]) -> Iterator[tuple[int, np.ndarray]]:
    """``(index, mask)`` of each encoded column holding values its fit never saw: ``mask`` marks
    the rows whose block of ``onehot`` (dense or sparse, blocks in the order of ``categories``,
    no category dropped) is all zeros."""
    bounds = np.cumsum([0] + [len(known) for known in categories])
    for index, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        unseen = np.asarray(onehot[:, start:stop].sum(axis=1)).ravel() == 0
        if unseen.any():
            yield index, unseen
