"""How an audit reads: text tables when printed, HTML tables in notebooks."""

from __future__ import annotations

import html
import math

import pandas as pd

_TABLES = (("value", "rates"), ("difference", "difference to the overall rate"),
           ("ratio", "ratio to the overall rate"))


def _cell(value: float, low: float, high: float, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if not (math.isnan(low) or math.isnan(high)):
        text += f" [{low:.2f},{high:.2f}]" if not signed else f" [{low:+.2f},{high:+.2f}]"
    return text


def audit_tables(frame: pd.DataFrame) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the tables an audit shows: rates, differences, ratios, constraints."""
    rates = frame[frame["attribute"] != "constraint"]
    metrics = list(dict.fromkeys(rates["metric"]))
    slices = list(dict.fromkeys(zip(rates["attribute"], rates["group"], rates["count"])))
    by_key = {(r.attribute, r.group, r.metric): r for r in rates.itertuples(index=False)}
    tables = []
    for name, title in _TABLES:
        body = []
        for attr, group, count in slices:
            label = "all" if attr == "all" else f"{attr}={group}"
            if name != "value" and attr == "all":
                continue
            cells = [_cell(getattr(r, name), getattr(r, f"{name}_low"), getattr(r, f"{name}_high"),
                           signed=name == "difference") for r in (by_key[(attr, group, m)] for m in metrics)]
            body.append([label, str(count)] + cells)
        if body:
            tables.append((title, ["group", "rows"] + metrics, body))
    cons = frame[frame["attribute"] == "constraint"]
    if len(cons):
        nan = float("nan")
        body = [[r.group, _cell(r.value, nan, nan), _cell(r.bound, nan, nan),
                 _cell(r.violation, r.violation_low, r.violation_high, True)]
                for r in cons.itertuples(index=False)]
        tables.append(("constraints (violation > 0: broken)", ["constraint", "lhs", "rhs", "violation"], body))
    return tables


def _caption(frame: pd.DataFrame) -> str:
    a = frame.attrs
    text = f"Audit of {a.get('estimator', 'a classifier')} on {a.get('n_samples', '?')} rows"
    if a.get("weighted"):
        left = a.get("n_weightless", 0)
        text += f" weighted by sample_weight ({left} of weight 0 left out)" if left else " weighted by sample_weight"
    text += " (rates in expectation over its randomised predictions)" if a.get("decisions") == "expected" else ""
    if a.get("n_bootstrap"):
        text += f"; [{100 * a['confidence_level']:g}% bootstrap intervals, {a['n_bootstrap']} resamples]"
    return text


def format_audit(frame: pd.DataFrame) -> str:
    """The audit as plain-text tables."""
    out = [_caption(frame)]
    for title, header, rows in audit_tables(frame):
        widths = [max(len(x) for x in col) for col in zip(header, *rows)]
        out.append("")
        out.append(title)
        for line in [header] + rows:
            cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]
            out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def audit_html(frame: pd.DataFrame) -> str:
    """The audit as HTML tables."""
    out = [f"<p>{html.escape(_caption(frame))}</p>"]
    for title, header, rows in audit_tables(frame):
        out.append(f"<p><b>{html.escape(title)}</b></p><table><thead><tr>")
        out.extend(f"<th>{html.escape(h)}</th>" for h in header)
        out.append("</tr></thead><tbody>")
        for row in rows:
            out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
        out.append("</tbody></table>")
    return "".join(out)


class AuditFrame(pd.DataFrame):
    """The tidy audit frame; prints as tables. Derived frames (slices, queries) are plain DataFrames."""

    @property
    def _constructor(self):
        return pd.DataFrame

    @classmethod
    def wrap(cls, frame: pd.DataFrame) -> "AuditFrame":
        return cls(frame)

    def __repr__(self) -> str:
        try:
            return format_audit(self)
        except (KeyError, AttributeError, TypeError, ValueError):  # columns edited in place
            return pd.DataFrame(self).__repr__()

    __str__ = __repr__

    def _repr_html_(self) -> str:
        try:
            return audit_html(self)
        except (KeyError, AttributeError, TypeError, ValueError):
            return pd.DataFrame(self)._repr_html_()
