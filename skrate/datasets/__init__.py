"""Datasets for rate-constrained learning."""

from ._adult import fetch_adult
from ._compas import load_compas

__all__ = ["fetch_adult", "load_compas"]
