"""The fast stable argsort against NumPy's stable sort."""

import numpy as np
import pytest

from skrate.utils._sorting import stable_argsort


@pytest.mark.parametrize("seed", range(20))
def test_stable_argsort_matches_numpys_stable_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    pool = np.r_[-np.inf, -1.0, -0.0, 0.0, 0.5, np.nan, np.inf, rng.standard_normal(5)]
    values = np.where(rng.random(n) < 0.5, rng.choice(pool, size=n), rng.standard_normal(n))
    np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))
    np.testing.assert_array_equal(stable_argsort(-values), np.argsort(-values, kind="stable"))


@pytest.mark.parametrize("values", [np.zeros(0), np.ones(1), np.full(7, np.nan), np.zeros(100), np.arange(50.0)[::-1],
                                    np.arange(50.0), np.r_[-0.0, 0.0, -0.0, 1.0, 1.0], np.r_[0.0, 1.0, np.nan, 2.0]])
def test_stable_argsort_edge_cases(values):
    np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))
