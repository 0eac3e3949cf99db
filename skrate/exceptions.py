"""Warnings and errors raised by skrate."""


class InfeasibleConstraintsWarning(UserWarning):
    """No mixture of the trained candidates meets every constraint on the training data.

    The returned model is the mixture with the smallest maximum violation; the message gives
    that violation and the constraint attaining it.
    """
