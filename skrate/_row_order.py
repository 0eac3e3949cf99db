"""``score`` that refuses a ``y`` or ``sample_weight`` in another row order than ``X``."""

from __future__ import annotations

from sklearn.utils.validation import _num_samples

from .problem._groups import check_row_order
from .utils._validation import check_sample_weight


class RowOrderScoreMixin:
    """Put before scikit-learn's ``ClassifierMixin`` / ``RegressorMixin``: their ``score`` matches
    ``y`` to ``X`` by position, so a ``y`` indexed like ``X`` in another order would be scored
    against the wrong rows without a word; it is refused as in ``fit``
    (:func:`~skrate.problem._groups.check_row_order`). Weights are checked as in ``fit``:
    negative ones are refused."""

    def score(self, X, y, sample_weight=None) -> float:
        return super().score(X, y, sample_weight=self._score_weights(X, y, sample_weight))

    @staticmethod
    def _score_weights(X, y, sample_weight):
        """``sample_weight`` checked as in ``fit``, once ``y`` and it are known to be in ``X``'s
        row order."""
        check_row_order(X, y=y, sample_weight=sample_weight)
        return None if sample_weight is None else check_sample_weight(sample_weight, _num_samples(X))
