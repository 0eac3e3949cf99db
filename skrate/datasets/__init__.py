"""Datasets for rate-constrained learning."""

from ._compas import load_compas

__all__ = ["load_compas"]
