"""Group membership columns, from whatever form the user passed them in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from ..exceptions import UndefinedRateError
from ..rates._slice import RESERVED, Slice
from ..utils._frames import check_collected, frame_items, is_frame, is_polars
from ..utils._validation import missing_entries, positive_rows
from ..utils._warnings import listed


def _numbers_only(col: np.ndarray) -> bool:
    """Whether an object column holds only (non-boolean) numbers."""
    try:
        from pandas.api.types import infer_dtype
    except ImportError:  # without pandas, object columns stay as written
        return False
    return infer_dtype(col, skipna=False) in ("integer", "floating", "mixed-integer-float", "decimal")


def _object_numbers(col: np.ndarray) -> np.ndarray:
    """An object column of numbers, named by value so that 1 and 1.0 are one group ``"1"``.

    Without integers it is a float column, named as one. Integers keep every digit (ids read
    from a CSV as Python ints beyond 2**53 would merge as floats), and whole floats beside
    them are named as the integer they equal; each distinct value is named once.
    """
    import pandas as pd  # present: _numbers_only read the column with it

    codes, uniques = pd.factorize(col)  # equal numbers (1, 1.0) share a code
    uniques = np.asarray(uniques, dtype=object)
    integral = np.array([isinstance(v, Integral) for v in uniques], dtype=bool)
    if not integral.any():
        return col.astype(float)
    floats = np.where(integral, 0.0, uniques).astype(float)  # an integer might not fit a float
    whole = integral | (np.isfinite(floats) & (floats == np.round(floats)))
    names = floats.astype(str).astype(object)
    names[whole] = [str(int(v)) for v in uniques[whole]]  # int() of a whole float is exact
    return names[codes].astype(str)


def _check_rows(col: np.ndarray, name: str, n: int) -> None:
    """Refuse a group column that is not one value per row of X."""
    if col.ndim != 1:
        raise ValueError(f"Group column {name!r} must be 1-D, got shape {col.shape}.")
    if col.shape[0] != n:
        hint = (" A dict of arrays is not split by cross-validation: pass groups as a DataFrame or a 1-D "
                "array, which Pipeline and GridSearchCV index by row." if col.shape[0] > n else "")
        raise ValueError(f"Group column {name!r} has {col.shape[0]} entries but X has {n} rows; "
                         f"pass one group value per row.{hint}")


def _column(values, name: str, n: int) -> np.ndarray:
    """Each row's value of a group column, named as a spec names it (a float-coded ``1.0`` as
    ``"1"``); a clear error for a missing value or not one value per row."""
    col = _checked(values, name, n)
    if col.dtype == object and _numbers_only(col):
        col = _object_numbers(col)  # numbers in an object column (1 and 1.0) are named by value
    elif col.dtype == object:
        return _mixed_names(col, name)
    if (col.dtype.kind == "f" and np.isfinite(col).all() and np.all(col == np.round(col))
            and np.all(np.abs(col) < 2.0**63)):  # beyond, the cast would merge distinct values
        col = col.astype(np.int64)  # a float-coded group (1.0) is named as written in specs (1)
    return col.astype(str)


def _checked(values, name: str, n: int) -> np.ndarray:
    """A group column as an array, refused when it is not one value per row or misses one."""
    col = np.asarray(values)
    _check_rows(col, name, n)
    missing = missing_entries(col)
    if missing.any():
        raise ValueError(f"Group column {name!r} has a missing value in {int(missing.sum())} rows (first: row "
                         f"{int(np.argmax(missing))}); give every row a group value, e.g. fill them with a "
                         "category of their own.")
    return col


def _named_codes(values, name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A group column's distinct value names (sorted as text) and each row's index into them.

    A column of one dtype is coded first and only its distinct values are named (each row
    named as text would cost ~84 bytes and a conversion per row); an object column, whose
    values pandas may equate across types (True and 1), is named row by row as it holds them.
    """
    col = np.asarray(values)
    if col.dtype == object:
        return np.unique(_column(col, name, n), return_inverse=True)
    uniques, codes = np.unique(_checked(col, name, n), return_inverse=True)
    if uniques.dtype.kind == "f":
        uniques = uniques + 0.0  # -0.0 == 0.0 merged them: name the group 0.0, not by which sorted first
    names, merged = np.unique(_column(uniques, name, uniques.shape[0]), return_inverse=True)
    return names, merged[codes.ravel()]


class _Flag:
    """A boolean in an object column, kept apart from the numbers pandas takes it for (True == 1)."""

    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)

    def __str__(self) -> str:
        return str(self.value)


_FLAGS = (_Flag(False), _Flag(True))


def _categories(column) -> list | None:
    """The categories of a pandas categorical Series or Categorical, in their order; None for
    anything else."""
    dtype = getattr(column, "dtype", None)
    categories = getattr(dtype, "categories", None)
    is_categorical = hasattr(column, "cat") or hasattr(column, "codes")  # a Series, a bare Categorical
    return None if categories is None or not is_categorical else list(categories)


def _mixed_names(col: np.ndarray, name: str) -> np.ndarray:
    """An object column of text and numbers: text and booleans as written, numbers by value (1 and
    1.0 are one group, as in pandas). Two values of one name (1 and "1", True and "True") are
    refused: a spec names both alike. Without pandas, named as written."""
    try:
        import pandas as pd
    except ImportError:
        return col.astype(str)
    if pd.api.types.infer_dtype(col, skipna=False) == "string":  # text alone, the usual case
        codes, uniques = pd.factorize(col)
        return np.asarray(uniques, dtype=str)[codes]
    keys = col
    flags = pd.Series(col, copy=False).map(type).isin([bool, np.bool_]).to_numpy()
    if flags.any():  # else True and 1 would be one group, named by whichever came first
        keys = col.copy()
        keys[flags] = np.where(col[flags].astype(bool), _FLAGS[1], _FLAGS[0])
    codes, uniques = pd.factorize(keys)
    uniques = np.asarray(uniques, dtype=object)
    number = np.array([isinstance(v, (Integral, float, np.floating)) for v in uniques], dtype=bool)
    names = uniques.astype(str).astype(object)  # object: a number's name may be longer than its text
    if number.any():
        names[number] = _column(uniques[number], name, int(number.sum()))
    seen: dict[str, object] = {}
    for value, label in zip(uniques, names):
        if label in seen:
            raise ValueError(f"Group column {name!r} holds {seen[label]!r} and {value!r}, two values a spec "
                             f"names alike ({label}); give the column one type, e.g. with .astype(str) "
                             "on the column.")
        seen[label] = value
    return names[codes].astype(str)


# inside a search, a missing group column most often means the groups were not routed
ROUTING_HINT = (" Inside a Pipeline, GridSearchCV or cross_validate, groups reach the estimator and "
                "scorers by metadata routing: sklearn.set_config(enable_metadata_routing=True), "
                "estimator.set_fit_request(groups=True) and scorer.set_score_request(groups=True).")


class _Columns(Mapping):
    """Group columns by name: those given, then the columns of a DataFrame ``X`` behind them,
    each read from the frame only when asked for (a wide or sparse frame is never copied whole;
    most goals name none of its columns). ``rows`` selects the frame's rows, in that order."""

    def __init__(self, own: dict, frame=None, rows: np.ndarray | None = None, labels: dict | None = None,
                 order: dict | None = None):
        self.own, self.frame, self.rows = own, frame, rows
        self.order = {} if order is None else order  # the categories of given categorical columns
        if labels is None:  # the frame's column labels by name
            labels = {} if frame is None else {str(k): k for k in frame.columns}
        self._labels = {k: v for k, v in labels.items() if k not in own}

    def __getitem__(self, key: str):
        if key in self.own:
            return self.own[key]
        column = self.frame[self._labels[key]].to_numpy()  # KeyError for an unknown name
        return column if self.rows is None else column[self.rows]

    def __iter__(self):
        yield from self.own
        yield from self._labels

    def __len__(self) -> int:
        return len(self.own) + len(self._labels)

    def __contains__(self, key) -> bool:
        return key in self.own or key in self._labels

    def take(self, idx: np.ndarray) -> "_Columns":
        """The rows ``idx``: the given columns indexed now, the frame's when read."""
        rows = idx if self.rows is None else self.rows[idx]
        return _Columns({k: np.asarray(v)[idx] for k, v in self.own.items()}, self.frame, rows, self._labels,
                        self.order)

    def with_column(self, key: str, values: np.ndarray) -> "_Columns":
        """These columns and ``key`` (standing before a frame column of its name)."""
        return _Columns({**self.own, key: values}, self.frame, self.rows, self._labels, self.order)

    def categories(self, key: str) -> list | None:
        """The categories of a pandas categorical column, in their order; None for any other."""
        if key in self.own:
            return self.order.get(key)
        if self.frame is None or key not in self._labels:
            return None
        return _categories(self.frame[self._labels[key]])


def cell_index(columns: list[tuple[np.ndarray, int]], n: int) -> tuple[np.ndarray, int]:
    """Each of ``n`` rows' combination of ``columns`` (codes, number of codes) as its index among
    the combinations that occur, in the order of the codes, and their number."""
    cell, size = np.zeros(n, dtype=np.intp), 1
    for codes, card in columns:
        cell, size = cell * card + codes, size * card
        if size > 4 * max(n, 1):  # keep the mixed-radix number small (and far from overflow)
            uniques, cell = np.unique(cell, return_inverse=True)
            cell, size = cell.astype(np.intp).ravel(), len(uniques)
    present = np.bincount(cell, minlength=size) > 0
    return (np.cumsum(present) - 1)[cell], int(present.sum())


@dataclass
class GroupTable:
    """Named group columns, validated and coded on first use.

    ``groups`` may be a pandas DataFrame, a dict of arrays, a 1-D array or Series (the
    column ``"group"``, or the Series' name), or None. When ``X`` is a DataFrame its columns
    are also available by name, behind the columns of ``groups``. :meth:`from_input` builds
    the table from them.

    Parameters
    ----------
    raw : Mapping
        The columns by name, each with one value per row, as given (a dict is wrapped in the
        table's own mapping, which may also read a DataFrame ``X``'s columns).
    n : int
        The number of rows.
    named_x : bool, default=False
        Whether the columns of a DataFrame ``X`` are among the columns.
    """

    raw: Mapping
    n: int
    named_x: bool = False  # whether X's columns are among the columns
    _cache: dict = field(default_factory=dict, repr=False, init=False)

    def __post_init__(self):
        if not isinstance(self.raw, _Columns):
            self.raw = _Columns(dict(self.raw))

    @property
    def given(self) -> list[str]:
        """The names of the group columns given (not those read from a DataFrame ``X``)."""
        return list(self.raw.own)

    @classmethod
    def from_input(cls, groups, X, n: int) -> "GroupTable":
        check_row_order(X, groups=groups)
        _check_names_given(groups, X, n)
        own: dict = {}
        order: dict = {}  # the categories of categorical columns, the order of their values
        if groups is None:
            pass
        elif is_frame(groups) or isinstance(groups, dict):
            items = frame_items(groups) if is_frame(groups) else list(groups.items())  # repeated labels too
            names = [str(k) for k, _ in items]
            twice = next((name for i, name in enumerate(names) if names.index(name) != i), None)
            if twice is not None:  # one would hide the other: 1 and "1" are both the column "1"
                raise ValueError(f"groups has more than one column named {twice!r} (labels "
                                 f"{[k for k, _ in items if str(k) == twice]}); rename them apart.")
            own = {str(k): v.to_numpy() if is_frame(groups) else v for k, v in items}
            order = {str(k): cats for k, v in items if (cats := _categories(v)) is not None}
        else:
            if np.ndim(groups) != 1:
                raise ValueError("groups must be a DataFrame, a dict {name: values} or a 1-D array; "
                                 f"got an array of shape {np.shape(groups)} (a 2-D array has no column names).")
            # a Series of a frame without column names is named 0; polars names an unnamed one ""
            name = getattr(groups, "name", None)
            own = {str("group" if name is None or (name == "" and is_polars(groups)) else name): groups}
            order = {key: cats for key in own if (cats := _categories(groups)) is not None}
        # a group column stands before X's column of its name
        raw = _Columns(own, X if is_frame(X) else None, order=order)
        # now, whether or not a goal reads the column: routed groups come with every fit
        for key, values in own.items():
            _check_rows(np.asarray(values), key, n)
        clash = sorted(set(own) & set(RESERVED))
        if clash:  # a slice filter on it would select by the label or the baseline decision instead
            raise ValueError(f"The group column name {clash[0]!r} is reserved: in a rate, {clash[0]}=... "
                             f"selects rows by the {'true label' if clash[0] == 'label' else 'baseline decision'}. "
                             "Rename the group column, e.g. groups=groups.rename(columns={"
                             f"{clash[0]!r}: 'my_{clash[0]}'}}).")
        return cls(raw, n, is_frame(X))

    @classmethod
    def coded(cls, columns: dict[str, tuple[list[str], np.ndarray]], n: int) -> "GroupTable":
        """A table of columns given as :meth:`codes` gives them: sorted distinct values and each
        row's index into them. Every value stays known, whether a row holds it or not, so a
        filter naming a value no row holds matches no row instead of raising.

        Parameters
        ----------
        columns : dict of str to (list of str, ndarray of int)
            For each column name, its sorted distinct values and each row's index into them
            (an ndarray of shape (n,)).
        n : int
            The number of rows.

        Returns
        -------
        GroupTable
            A new table of the columns, their codes already computed.
        """
        table = cls({key: np.asarray(known)[codes] for key, (known, codes) in columns.items()}, n)
        for key, (known, codes) in columns.items():
            table._cache[("codes", key)] = (list(known), codes)
        return table

    def check_rows(self) -> None:
        """Refuse a column that is not one value per row now, as its first use would: before
        the rows are split, after which a longer column would go unnoticed."""
        for key, values in self.raw.own.items():  # a frame's columns have its rows
            _check_rows(np.asarray(values), key, self.n)

    def take(self, idx: np.ndarray) -> "GroupTable":
        """The rows ``idx`` of every column; columns already validated and coded carry over.

        Parameters
        ----------
        idx : ndarray of int
            The rows to keep, in order (repeats allowed).

        Returns
        -------
        GroupTable
            A new table of ``len(idx)`` rows; the codes of a coded column keep only the values
            these rows hold.
        """
        table = GroupTable(self.raw.take(idx), len(idx), self.named_x)
        for key, value in self._cache.items():
            if key[0] == "codes":  # keep the values the rows hold, renumbered in order
                known, codes = value
                sub = codes[idx]
                held = np.bincount(sub, minlength=len(known)) > 0
                table._cache[key] = ([v for v, h in zip(known, held) if h], (np.cumsum(held) - 1)[sub])
        return table

    def weighted(self, sample_weight: np.ndarray | None) -> "GroupTable":
        """The rows of positive ``sample_weight`` (this table when every row has one, or no
        weights are given): a row of weight 0 is a row dropped, its group values unseen.

        Parameters
        ----------
        sample_weight : ndarray of shape (n,) or None
            The rows' weights; None means every row is kept.

        Returns
        -------
        GroupTable
            This table itself when every row is kept, else a new table of the rows of positive
            weight (see :meth:`take`).
        """
        kept = positive_rows(sample_weight)
        return self if kept is None else self.take(kept)

    def column(self, key: str) -> np.ndarray:
        """The group column ``key`` as strings; a clear error when it is unknown.

        Parameters
        ----------
        key : str
            The column's name.

        Returns
        -------
        ndarray of str of shape (n,)
            Each row's value, named as a spec names it (a float-coded ``1.0`` as ``"1"``),
            read from the column's :meth:`codes` (only the distinct values are held as text).

        Raises
        ------
        ValueError
            When no column is named ``key``, or it has a missing value or not one value per
            row.
        """
        known, codes = self.codes(key)
        return np.asarray(known)[codes]

    def _check_known(self, key: str) -> None:
        """Refuse an unknown column ``key``, listing the known ones and how to pass groups."""
        if key not in self.raw:
            known = sorted(self.raw)
            how = "pass groups=... as a DataFrame, a dict of arrays or a 1-D array (the column 'group')"
            if not known:
                given = f"no groups were given: {how}"
            elif not self.given:  # X's columns alone: the likelier slip is a groups= left out
                given = (f"no groups were given, and X's columns ({listed(known)}) do not include it: "
                         f"{how}, or add the column to X")
            else:
                given = f"known group columns: {', '.join(map(repr, known))}"
            unnamed = ("" if self.named_x else " X reached the estimator as an array, whose columns have no "
                       "names: to name a column of X, pass X as a DataFrame (in a Pipeline, the steps before "
                       "keep names with set_output(transform='pandas')).")
            raise ValueError(f"Unknown group column {key!r}; {given}.{self._value_hint(key)}{unnamed}"
                             f"{ROUTING_HINT}")

    def _value_hint(self, key: str) -> str:
        """When ``key`` is a value of a known column (``tpr(group="Black")``), how to filter on it:
        the slice as a spec writes it (quoted as needed), whatever the rate."""
        for name in sorted(self.raw):
            try:
                if self._matches(name, key):
                    return (f" {key!r} is a value of the column {name!r}: group= names columns to expand "
                            f"over; filter on a value with where={{{name!r}: {key!r}}}, or in a spec with the "
                            f"slice [{Slice.make({name: key})}] after the rate's name.")
            except ValueError:  # a column that is no group column (missing values), or no such filter
                continue
        return ""

    def codes(self, key: str) -> tuple[list[str], np.ndarray]:
        """Sorted distinct values and each row's index into them, computed once per column.

        Parameters
        ----------
        key : str
            The column's name.

        Returns
        -------
        values : list of str
            The distinct values, sorted: in the order of a categorical column's categories,
            numbers by number, else as text.
        codes : ndarray of int of shape (n,)
            Each row's index into ``values``.
        """
        cache_key = ("codes", key)
        if cache_key not in self._cache:
            self._check_known(key)
            uniques, codes = _named_codes(self.raw[key], key, self.n)
            order = self._value_order(key, uniques) if uniques.size > 1 else None
            if order is not None:
                uniques, codes = uniques[order], np.argsort(order)[codes]
            self._cache[cache_key] = (uniques.tolist(), codes)
        return self._cache[cache_key]

    def _value_order(self, key: str, uniques: np.ndarray) -> np.ndarray | None:
        """The order of a column's distinct value names ``uniques`` (sorted as text) when text is
        not theirs: a categorical column's follows its categories (``"<25", "25-45", ">45"``),
        numbers sort by number (2 before 10); None to keep the text order."""
        categories = self.raw.categories(key)
        if categories is not None:
            names = _column(np.asarray(categories, dtype=object), key, len(categories)).tolist()
            rank = {name: i for i, name in enumerate(names)}
            if all(u in rank for u in uniques):
                return np.argsort([rank[u] for u in uniques], kind="stable")
        raw = np.asarray(self.raw[key])
        if raw.dtype.kind in "iuf" or (raw.dtype == object and _numbers_only(raw)):
            return np.argsort(uniques.astype(float), kind="stable")
        return None

    def _index(self, key: str) -> dict[str, int]:
        """Value -> its index among the sorted distinct values of column ``key``."""
        cache_key = ("index", key)
        if cache_key not in self._cache:
            self._cache[cache_key] = {v: i for i, v in enumerate(self.values(key))}
        return self._cache[cache_key]

    def values(self, key: str) -> list[str]:
        """The distinct values of a group column, sorted (numbers by number).

        Parameters
        ----------
        key : str
            The column's name.

        Returns
        -------
        list of str
            The values, in the order of :meth:`codes`.
        """
        return list(self.codes(key)[0])

    def cells(self, keys: Sequence[str]) -> tuple[np.ndarray, int]:
        """Each row's combination of values of the columns ``keys``, as its index among the
        combinations that occur (in the order of the values), and their number.

        Parameters
        ----------
        keys : sequence of str
            The columns' names.

        Returns
        -------
        cell : ndarray of int of shape (n,)
            Each row's combination, numbered from 0.
        n_cells : int
            The number of combinations that occur.
        """
        return cell_index([(self.codes(k)[1], len(self.codes(k)[0])) for k in keys], self.n)

    def combinations(self, keys: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The combinations of values of the columns ``keys`` that occur in some row, sorted.

        Parameters
        ----------
        keys : tuple of str
            The columns' names.

        Returns
        -------
        list of tuple of str
            One tuple of values (in the order of ``keys``) per combination, in the order of
            the values; ``[()]`` for no keys and at least one row.
        """
        cell, size = self.cells(keys)
        row = np.empty(size, dtype=np.intp)
        row[cell] = np.arange(self.n)  # a row of each combination
        columns = [[self.values(k)[i] for i in self.codes(k)[1][row]] for k in keys]
        return list(zip(*columns)) if keys else [()] * size

    def _matches(self, key: str, value: str) -> list[int]:
        """Indices of the values of column ``key`` that ``value`` names: itself, or a value equal
        as a number (``"1.0"`` names the group ``1``, ``"2"`` the group ``2.0``)."""
        index = self._index(key)
        if value in index:
            return [index[value]]
        known = self.values(key)
        number = _number(value)
        hits = [] if number is None else [i for i, k in enumerate(known) if _number(k) == number]
        if len(hits) > 1:  # "01", "1" and "1.0" in a text column: which one was meant?
            names = [known[i] for i in hits]
            raise ValueError(f"The value {value!r} for group column {key!r} matches several groups as a number: "
                             f"{', '.join(map(repr, names))}; name the one meant exactly as written, e.g. "
                             f"where={{{key!r}: {names[0]!r}}} or [{Slice.make({key: names[0]})}] in a spec.")
        return hits

    def selected(self, key: str, values: Iterable) -> set[str]:
        """The values of column ``key`` that filters on ``values`` select, as :meth:`mask` matches
        them (itself first, else the one equal as a number); a value matching several selects
        none here (its filter raises, naming them).

        Parameters
        ----------
        key : str
            The column's name.
        values : iterable of str
            The values a filter names.

        Returns
        -------
        set of str
            The column's values they select.
        """
        known, out = self.values(key), set()
        for value in values:
            try:
                out.update(known[i] for i in self._matches(key, value))
            except ValueError:
                pass
        return out

    def unknown(self, key: str, values: tuple[str, ...]) -> list[str]:
        """The ``values`` no row of column ``key`` holds.

        Parameters
        ----------
        key : str
            The column's name.
        values : tuple of str
            The values a filter names.

        Returns
        -------
        list of str
            Those of ``values`` that match no value of the column (neither as written nor as a
            number), in their order.
        """
        return [v for v in values if not self._matches(key, v)]

    def mask(self, key: str, values: tuple[str, ...]) -> np.ndarray:
        """Rows whose ``key`` is any of ``values``. A value no row holds leaves the slice undefined:
        an :class:`~skrate.exceptions.UndefinedRateError` that lists the known values (reports
        on new rows show it as NaN).

        Parameters
        ----------
        key : str
            The column's name.
        values : tuple of str
            The values the rows may hold.

        Returns
        -------
        ndarray of bool of shape (n,)
            True for the rows whose value is one of ``values``.

        Raises
        ------
        UndefinedRateError
            When no row holds one of ``values``.
        ValueError
            When a value matches several of the column's values as a number.
        """
        known, codes = self.codes(key)
        unknown = self.unknown(key, values)
        if unknown:
            raise UndefinedRateError(f"Unknown value {unknown[0]!r} for group column {key!r}; "
                                     f"known values: {', '.join(map(repr, known))}.")
        hit = np.zeros(len(known), dtype=bool)
        hit[[i for v in values for i in self._matches(key, v)]] = True
        return hit[codes]


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _check_names_given(groups, X, n: int) -> None:
    """Refuse column names passed as ``groups``, which takes each row's group values."""
    names = [groups] if isinstance(groups, str) else groups if isinstance(groups, (list, tuple)) else None
    if not names or not all(isinstance(g, str) for g in names):
        return
    columns = {str(k) for k in X.columns} if is_frame(X) else set()
    if isinstance(groups, str) or (len(names) != n and set(names) <= columns):
        raise ValueError(f"groups={groups!r} names columns, but groups takes each row's group values: pass the "
                         f"columns themselves, e.g. groups=X[{names!r}], a DataFrame with one column per group "
                         "attribute.")


def check_row_order(X, **columns) -> None:
    """Rows are matched by position, as everywhere in scikit-learn. A frame or Series (also one
    in a dict of columns) whose index holds X's labels in another order
    (``y[y.index.isin(X_test.index)]``) would be matched to the wrong rows without a word, so it
    is refused, naming its keyword (``groups=``, ``y=``, ``sample_weight=``...).

    An ``X`` indexed ``0, 1, ..., n - 1`` (a ``RangeIndex``) has no row labels to check: pandas
    gives that index to every frame built without one, a pipeline step's pandas output made
    from an array included, whose rows are the array's in its order.

    A polars LazyFrame among them, a query rather than rows, is refused first, naming its
    keyword (:func:`~skrate.utils._frames.check_collected`)."""
    check_collected(X=X, **{name: v for name, v in columns.items() if not isinstance(v, dict)})
    if not _is_indexed(X) or _is_default_index(X.index):
        return
    for name, values in columns.items():
        entries = values.items() if isinstance(values, dict) else [(None, values)]
        for key, column in entries:
            if not _is_indexed(column):  # a list's .index is a method, not row labels
                continue
            ci, xi = column.index, X.index
            if not ci.equals(xi) and len(ci) == len(xi) and _same_labels(ci, xi):
                which = name if key is None else f"{name}[{key!r}]"
                raise ValueError(f"The index of {which} holds the labels of X's index in another order, and "
                                 f"rows are matched by position. If {which} is labelled like X's rows, align "
                                 f"it: {which}.loc[X.index]; if it is already in X's row order, give it X's "
                                 f"index: {which}.set_axis(X.index).")


def _same_labels(a, b) -> bool:
    """Whether two indexes of one length hold the same labels, each as often (repeated ones too,
    as after a concat); by hashing, where sorting fails on mixed labels."""
    if a.is_unique and b.is_unique:
        return bool(a.isin(b).all())
    ca, cb = a.value_counts(dropna=False), b.value_counts(dropna=False)
    return len(ca) == len(cb) and bool(ca.reindex(cb.index).eq(cb).all())


def _is_default_index(index) -> bool:
    """Whether ``index`` is pandas' default ``RangeIndex`` ``0, 1, ..., n - 1``."""
    return type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1


def _is_indexed(obj) -> bool:
    """Whether ``obj`` is a pandas DataFrame or Series, whose rows carry index labels."""
    return hasattr(obj, "iloc") and hasattr(getattr(obj, "index", None), "equals")
