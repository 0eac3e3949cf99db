"""Synthetic data the tests share."""

import numpy as np


def two_group_data(n: int, seed: int = 0):
    """``X, y, group``: two groups (70/30) whose labels depend on the features differently, so
    unconstrained models are unfair; column 3 of ``X`` is a proxy of the group."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b"], n, p=[0.7, 0.3])
    X = rng.normal(size=(n, 4))
    shift = np.where(group == "a", 0.8, -0.8)
    y = (X[:, 0] + 0.5 * X[:, 1] + shift + rng.normal(scale=0.8, size=n) > 0).astype(int)
    X[:, 3] += shift  # the model can see a proxy of the group
    return X, y, group
