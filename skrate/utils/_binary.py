"""Powers of two that bring magnitudes near 1, so that squares neither overflow nor underflow."""

import numpy as np


def power_of_two_above(magnitude: np.ndarray | float) -> np.ndarray:
    """The power of 2 just above each ``magnitude`` (1 for 0), at most ``2**1023``.

    Dividing by it is exact, so statistics taken of the quotients keep every bit, while their
    squares no longer overflow beyond ``1e154`` (nor underflow below ``1e-154``).
    """
    return np.ldexp(1.0, np.minimum(np.frexp(magnitude)[1], 1023))
