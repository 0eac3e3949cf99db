"""Utilities shared across skrate."""

from ._discovery import all_estimators

__all__ = ["all_estimators"]
