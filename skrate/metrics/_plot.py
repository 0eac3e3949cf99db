"""Plots of audits and trade-off curves; matplotlib is imported only when plotting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("Plotting needs matplotlib: pip install matplotlib (or pip install skrate[plot]).") from exc
    return plt


def _require_columns(frame, columns: Sequence[str], name: str, takes: str) -> None:
    """Refuse a frame of another kind (a constraint report, a fit report) by its missing columns."""
    have = getattr(frame, "columns", None)
    missing = [c for c in columns if have is None or c not in have]
    if missing:
        kind = f"a {type(frame).__name__}" if have is None else f"a frame with columns {list(have)}"
        raise ValueError(f"{name} lacks the column(s) {missing}: {takes}, got {kind}.")


def plot_audit(report: pd.DataFrame, metrics: str | Sequence[str] | None = None, *,
               ax: Axes | np.ndarray | None = None) -> np.ndarray:
    """Per-group rates with their bootstrap intervals, one panel per metric.

    A dashed line marks the overall rate (the row of attribute ``"all"``) when the report holds it.

    Parameters
    ----------
    report : DataFrame
        The result of :func:`skrate.metrics.audit`.
    metrics : str or list of str, default=None
        Metric(s) to show (default: every metric of the audit).
    ax : matplotlib Axes or array of Axes, default=None
        Where to draw (one Axes per metric); new ones by default.

    Returns
    -------
    axes : ndarray of matplotlib Axes
    """
    plt = _pyplot()
    _require_columns(report, ("attribute", "group", "metric", "value", "value_low", "value_high"), "report",
                     "plot_audit takes the frame skrate.metrics.audit returns")
    rates = report[report["attribute"] != "constraint"]
    if metrics is None:
        metrics = list(dict.fromkeys(rates["metric"]))
        if not metrics:
            raise ValueError("the report holds no rates of groups, only constraint rows: plot an audit "
                             "that measures rates (audit's default metrics, or metrics=['tpr', ...]).")
    else:  # one name alone is one metric, not its letters
        metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if not metrics:
        raise ValueError("metrics is empty: name at least one metric of the audit, or pass None for all of them.")
    if ax is None:
        n_rows = len(rates[["attribute", "group"]].drop_duplicates())  # a 0/1 value of two attributes is two rows
        _, ax = plt.subplots(1, len(metrics), figsize=(2.6 * len(metrics) + 1.5, 0.35 * n_rows + 1.8),
                             sharey=True, squeeze=False)
    axes = np.atleast_1d(ax).ravel()
    if axes.shape[0] != len(metrics):
        raise ValueError(f"Got {axes.shape[0]} Axes for {len(metrics)} metrics; pass one Axes per metric.")
    for axis, metric in zip(axes, metrics):
        rows = rates[rates["metric"] == metric]
        if not len(rows):
            raise ValueError(f"The audit has no metric {metric!r}; it has {sorted(set(rates['metric']))}.")
        labels = ["all" if a == "all" else f"{a}={g}" for a, g in zip(rows["attribute"], rows["group"])]
        pos = np.arange(len(rows))[::-1]
        value = rows["value"].to_numpy(float)
        err = np.vstack([value - rows["value_low"].to_numpy(float), rows["value_high"].to_numpy(float) - value])
        axis.errorbar(value, pos, xerr=None if np.isnan(err).all() else np.abs(err), fmt="o", capsize=3)
        overall = rows["attribute"].to_numpy() == "all"
        if overall.any():  # a report filtered to one attribute has no overall row: no line
            axis.axvline(value[overall][0], color="0.6", lw=1, ls="--")
        axis.set_yticks(pos, labels)
        axis.set_title(metric)
    return axes


def plot_tradeoff(curve: pd.DataFrame, *, ax: Axes | None = None, violation: str = "violation") -> Axes:
    """The error / violation frontier of a :func:`skrate.model_selection.tradeoff_curve`.

    Parameters
    ----------
    curve : DataFrame
        The result of ``tradeoff_curve``: columns ``slack``, ``train_error``, ``test_error``,
        ``train_violation``, ``test_violation``, ``train_gap`` and ``test_gap``.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure's Axes by default.
    violation : {"violation", "gap"}, default="violation"
        Plot the violation of each setting's own constraints, or the gap: the violation of
        the constraints at slack 0.

    Returns
    -------
    ax : matplotlib Axes
        The Axes drawn on.
    """
    if violation not in ("violation", "gap"):
        raise ValueError(f"violation must be 'violation' or 'gap', got {violation!r}.")
    plt = _pyplot()
    _require_columns(curve, ("slack", "train_error", f"train_{violation}"), "curve",
                     "plot_tradeoff takes the frame skrate.model_selection.tradeoff_curve returns")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    curve = curve.sort_values("slack", kind="stable")  # the line joins neighbouring slacks
    for split, marker in (("train", "o-"), ("test", "s--")):
        if f"{split}_error" in curve and not np.isnan(curve[f"{split}_error"].to_numpy(float)).all():
            ax.plot(curve[f"{split}_{violation}"], curve[f"{split}_error"], marker, label=split)
            for s, x, y in zip(curve["slack"], curve[f"{split}_{violation}"], curve[f"{split}_error"]):
                ax.annotate(f"{s:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.axvline(0.0, color="0.6", lw=1)
    ax.set_xlabel("max constraint violation" if violation == "violation" else "gap (violation at slack 0)")
    ax.set_ylabel("error rate")
    ax.set_title("error / violation trade-off (labels: slack)")
    ax.legend()
    return ax
