"""Warnings and errors raised by skrate."""

__all__ = ["InfeasibleConstraintsWarning", "UndefinedRateError"]


class InfeasibleConstraintsWarning(UserWarning):
    """The fitted classifier does not meet every constraint on the data its solution is chosen on.

    ``ConstrainedClassifier`` warns when its ``"m_stochastic"`` solution does not meet every
    constraint, margins included, on the training data, or on the held-out rows when
    ``validation_fraction`` or ``validation_mask`` splits them off (no mixture of its trained
    candidates does, or a ratio is left undefined), and when the selected solution
    (``solution=``), if another, does not. ``MetricOptimizer`` warns when the selected
    solution (``solution=``, e.g. ``"best"``) breaks a constraint on the training data, even
    if another solution meets them all. The message gives the largest violation, in the
    constraint's own units, and the constraint attaining it; ``ConstrainedClassifier``'s also
    says whether any classifier at all could meet the constraints on those rows.
    """


class UndefinedRateError(ValueError):
    """A rate is undefined on the given rows: its slice matched no rows of positive weight (a
    group value absent from these rows, or a slice without the class the rate conditions on).

    A ``ValueError``; reports on new data (``constraint_report``) show such a constraint as
    NaN instead of raising.

    Parameters
    ----------
    message : str
        The error message.
    rate : Rate or None, default=None
        The undefined rate (None when the error is not about a single rate), kept as the
        attribute ``rate``.
    """

    def __init__(self, message: str, *, rate=None):
        super().__init__(message)
        self.rate = rate
