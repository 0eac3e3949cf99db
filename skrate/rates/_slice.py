"""Slices: the subsets of examples a rate is measured on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Keys with a meaning of their own; every other key names a group column.
LABEL = "label"
BASELINE = "baseline"
RESERVED = (LABEL, BASELINE)


def group_columns(slices: Iterable[Slice]) -> list[str]:
    """The group columns the slices filter on (the label and the baseline are not groups)."""
    return sorted({k for s in slices for k, _ in s.filters} - set(RESERVED))


def as_columns(group: Any) -> tuple[str, ...]:
    """Group columns given as ``group=``, read once into a tuple of names: None is none, a
    string or an integer name (``0``, a DataFrame without named columns) is one column, any
    other iterable (a list, or a generator that a second reading would find empty) is several."""
    if group is None:
        return ()
    if isinstance(group, str) or not isinstance(group, Iterable):
        return (str(group),)
    return tuple(str(k) for k in group)


def _as_values(value: Any) -> tuple[str, ...]:
    """A filter value or list of values ("any of"), canonicalised to sorted strings."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 1) > 0:
        # lists, sets, arrays, Series, ranges: "any of"; a 0-d array is one value (np.ndim is
        # no test: it calls a set 0-d too)
        values = tuple(sorted({str(v) for v in value}))
    else:
        values = (str(value),)
    if not values:
        raise ValueError("A slice filter needs at least one value; got an empty list.")
    return values


@dataclass(frozen=True)
class Slice:
    """A subset of examples: the intersection of filters, optionally expanded over groups.

    Parameters
    ----------
    filters : tuple of (str, tuple of str)
        ``(key, values)`` pairs; an example belongs to the slice when, for every key, its
        value is one of ``values``. Keys are group columns, or ``"label"`` / ``"baseline"``
        (the true label and the baseline model's decision, ``"0"`` or ``"1"``).
    expand : tuple of str
        Group columns to expand over: a constraint holding this slice stands for one
        constraint per value of each column (their Cartesian product when several).
    """

    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    expand: tuple[str, ...] = ()

    @classmethod
    def make(cls, filters: dict[str, Any] | None = None, expand: Iterable[str] | str = ()) -> "Slice":
        """Build a canonical slice from a dict of filters and the columns to expand over.

        Column names are kept as strings, as the group table stores them, so an integer
        column name such as ``0`` (a DataFrame without named columns) matches ``"0"``.

        Parameters
        ----------
        filters : dict, default=None
            Maps a group column, ``"label"`` or ``"baseline"`` to a value or a list of values
            (any of them); values are kept as sorted strings, and ``"label"`` and
            ``"baseline"`` take 0 or 1. None means no filter.
        expand : str or iterable of str, default=()
            Group columns to expand over; a column cannot be both filtered and expanded over.

        Returns
        -------
        Slice
            The slice with its filters and expanded columns sorted.
        """
        filters = {str(k): v for k, v in (filters or {}).items()}
        for key in (LABEL, BASELINE):
            if key in filters:
                values = _as_values(filters[key])
                bad = [v for v in values if v not in ("0", "1")]
                if bad:
                    raise ValueError(f"Slice filter {key!r} takes 0 or 1, got {bad[0]!r}.")
        expand = as_columns(expand)
        for key in expand:
            if key in RESERVED:
                raise ValueError(f"Cannot expand over {key!r}: it is not a group column.")
            if key in filters:
                raise ValueError(f"Column {key!r} is both filtered and expanded over; choose one.")
        return cls(
            tuple(sorted((k, _as_values(v)) for k, v in filters.items())),
            tuple(sorted(set(expand))),
        )

    def bind(self, assignment: dict[str, str]) -> "Slice":
        """Replace expanded columns by the values in ``assignment``.

        Parameters
        ----------
        assignment : dict of str to str
            A value for each expanded group column (further keys are ignored).

        Returns
        -------
        Slice
            A new slice filtering each expanded column on its value, with nothing left to
            expand.
        """
        extra = {k: assignment[k] for k in self.expand}
        return Slice.make({**dict(self.filters), **extra}, ())

    def get(self, key: str) -> tuple[str, ...] | None:
        """The values filtered on ``key``, or None.

        Parameters
        ----------
        key : str
            A group column, ``"label"`` or ``"baseline"``.

        Returns
        -------
        tuple of str or None
            The values the slice keeps for ``key``; None when it does not filter on it.
        """
        return dict(self.filters).get(key)

    def __str__(self) -> str:
        parts = [_quote_key(k) if len(v) == 0 else f"{_quote_key(k)}={'|'.join(_quote(x) for x in v)}"
                 for k, v in self.filters]
        parts += [_quote_key(k) for k in self.expand]
        return ", ".join(parts)


def _quote_key(key: str) -> str:
    """A column name as a spec reads it: in double quotes unless letters, digits and ``_``."""
    plain = key and all(ch.isalnum() or ch == "_" for ch in key)
    return key if plain else _quoted(key)


def _quote(value: str) -> str:
    plain = value and all(ch.isalnum() or ch in "_-.+ " for ch in value) and value == value.strip()
    return value if plain else _quoted(value)


def _quoted(text: str) -> str:
    """``text`` in double quotes, escaped as the parser reads it back."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
