"""Reading and checking the CSV files the ``skrate`` command takes, and its errors: every
problem with a file is a :class:`CLIError` naming the file, the line and the fix, and the exit
code of its kind."""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

EXIT_USAGE, EXIT_DATA, EXIT_NOINPUT, EXIT_CANTCREAT = 2, 65, 66, 73
STDIO = "-"  # a data file of "-" is standard input, as for cat and pandas
# a text column is read as numbers with a few stray words above this share of numeric cells
NUMERIC_SHARE = 0.9


class CLIError(Exception):
    """An error to report in one line and exit with ``code``."""

    def __init__(self, message: str, code: int = EXIT_DATA):
        super().__init__(message)
        self.code = code


def require_pandas(purpose: str = "reading CSV files") -> ModuleType:
    """pandas, or a usage error saying how to install it for ``purpose``."""
    try:
        import pandas as pd
    except ImportError:
        raise CLIError(f"{purpose} needs pandas: pip install pandas", EXIT_USAGE) from None
    return pd


PIPED: dict[str, bytes] = {}  # a pipe's bytes, read once: its header and lines are looked up again


def existing_file(path: str) -> Path:
    """``path``, refused unless it names something that exists and is not a folder."""
    p = Path(path)
    if not p.exists():
        raise CLIError(f"{path}: no such file", EXIT_NOINPUT)
    if p.is_dir():
        raise CLIError(f"{path}: a directory, not a file", EXIT_NOINPUT)
    return p


def _input(path: str):
    """``path`` to read: a regular file as itself; a pipe (``-`` for standard input, or bash's
    ``<(...)``) as its bytes, read on first use and kept, for it cannot be read twice."""
    if path != STDIO and existing_file(path).is_file():
        return Path(path)
    if path not in PIPED:
        try:  # bytes: the encoding (and a byte-order mark) read as from a file
            PIPED[path] = sys.stdin.buffer.read() if path == STDIO else Path(path).read_bytes()
        except OSError as exc:
            raise CLIError(f"{path}: cannot read the file ({exc})", EXIT_NOINPUT) from None
    return io.BytesIO(PIPED[path])


def check_writable(path: str, option: str, inputs: tuple[str, ...] = ()) -> None:
    """Refuse an output path that cannot be written, or that is one of the command's ``inputs``
    (it would be replaced by the output), before any work is done, not after training."""
    p = Path(path)
    folder = p.parent  # Path("m.joblib").parent is Path(".")
    same = [i for i in inputs if p.exists() and Path(i).exists() and os.path.samefile(p, i)]
    if same:
        raise CLIError(f"{option} {path}: that is the input file {same[0]}, which the output would replace; "
                       "write it elsewhere", EXIT_USAGE)
    if p.is_dir():
        problem = "is a directory"
    elif not folder.is_dir():
        problem = f"the folder {str(folder)!r} does not exist"
    elif not os.access(p if p.exists() else folder, os.W_OK):
        problem = "is not writable" if p.exists() else f"the folder {str(folder)!r} is not writable"
    else:
        return
    raise CLIError(f"{option} {path}: {problem}", EXIT_USAGE)


@contextlib.contextmanager
def writing(path: str) -> Iterator[None]:
    """Report a failure to write ``path`` inside the block as an output error (exit 73)."""
    try:
        yield
    except OSError as exc:  # checked writable up front: a full disk, a folder removed meanwhile
        raise CLIError(f"{path}: cannot write the file ({exc})", EXIT_CANTCREAT) from None


def read_csv(path: str, text: tuple[str, ...] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The CSV file as written: only an empty cell is missing (``NA`` or ``None`` may be a category's
    name), and a column is numbers only when every filled cell is one (``true`` stays text); the
    columns ``text`` stay text throughout (ids: ``007`` keeps its zeros). Returns that frame and
    the cells as written, all text (categorical features read them)."""
    pd = require_pandas()
    p = _input(path)
    try:  # utf-8-sig: a byte-order mark (Excel) must not end up in the first column's name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            # index_col=False: rows that all end in a delimiter (as some tools write them) would
            # otherwise make the first column the index and shift every other one left
            frame = pd.read_csv(p, skipinitialspace=True, encoding="utf-8-sig", dtype=str, keep_default_na=False,
                                na_values=[""], index_col=False)
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8, e.g. "
                       f"iconv -f latin1 -t utf-8 {path} > utf8.csv") from None
    except OSError as exc:
        raise CLIError(f"{path}: cannot read the file ({exc})", EXIT_NOINPUT) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CLIError(f"{path}: not a readable CSV file ({str(exc).strip()})") from None
    if frame.shape[0] == 0:
        raise CLIError(f"{path}: the file has a header but no rows")
    _check_header(path)
    if any(issubclass(w.category, pd.errors.ParserWarning) for w in caught):
        _refuse_extra_values(path)
    frame.columns = [name.strip() for name in frame.columns]  # as options name them: "id " is id
    written = frame.copy()
    for col in frame.columns.difference(list(text)):
        number = pd.to_numeric(frame[col], errors="coerce")
        if (number.notna() | frame[col].isna()).all():  # a "NaN" written out stays a word
            frame[col] = number
    return frame, written


def _records(path: str):
    """The file's CSV records as pandas reads them, the header first, each with the line it
    starts on: blank lines are skipped, and a quoted cell may span several lines."""
    source = _input(path)
    text = (open(source, newline="", encoding="utf-8-sig") if isinstance(source, Path)
            else io.TextIOWrapper(source, newline="", encoding="utf-8-sig"))
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # pandas reads cells of any length; the default stops at 128 KiB
    try:
        with text as fh:
            reader = csv.reader(fh, skipinitialspace=True)
            end = 0
            for record in reader:
                if len(record) > 1 or record and record[0].strip():  # pandas skips lines of white space
                    yield end + 1, record
                end = reader.line_num
    finally:
        csv.field_size_limit(limit)


def _check_header(path: str) -> None:
    """Refuse a header with an empty or a repeated name (spaces around a name do not count): pandas
    would rename them (``Unnamed: 0``, ``x.1``), and the renamed column, a saved index often,
    would be trained on unnoticed."""
    header = [name.strip() for name in next((record for _, record in _records(path)), [])]
    unnamed = [i + 1 for i, name in enumerate(header) if not name]
    if unnamed:
        raise CLIError(f"{path}: column {unnamed[0]} of the header has no name (a saved index, as "
                       "DataFrame.to_csv writes by default?); name it in the header, or save the file without "
                       "it (to_csv(..., index=False))")
    seen: set[str] = set()
    repeated = [name for name in header if name in seen or seen.add(name)]
    if repeated:
        raise CLIError(f"{path}: the header names column {repeated[0]!r} more than once; give each column its "
                       "own name")


def _refuse_extra_values(path: str) -> None:
    """Refuse a row with more values than the header has names (pandas drops them with a warning)."""
    records = _records(path)
    _, header = next(records)
    line, record = next(((line, r) for line, r in records if len(r) > len(header) and any(r[len(header):])),
                         (None, None))
    if line is not None:
        raise CLIError(f"{path}: line {line} holds {len(record)} values, more than the header's {len(header)} "
                       "column names; name every column in the header, or drop the extra values")


def need_columns(frame: pd.DataFrame, columns: list[str], path: str, role: str) -> None:
    """Refuse a file without one of ``columns`` (its ``role``: target, feature...), listing the
    file's columns."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        hint = ""
        if len(frame.columns) == 1 and ";" in str(frame.columns[0]):
            hint = ("; the file seems to separate its values with ';', and skrate reads comma-separated "
                    "values: convert it, e.g. pandas.read_csv(path, sep=';').to_csv(new_path, index=False)")
        raise CLIError(f"{path}: no column {', '.join(map(repr, missing))} ({role}); the file's columns are "
                       f"{', '.join(map(str, frame.columns))}{hint}")


def line_of(path: str, index: int) -> str:
    """Where data row ``index`` (0-based) starts in the file (see :func:`_records`)."""
    return f"line {next(itertools.islice(_records(path), index + 1, None))[0]}"


def no_empty_cells(frame: pd.DataFrame, columns: list[str], path: str) -> None:
    """Refuse an empty cell in ``columns``, naming the line of the first."""
    for col in columns:
        empty = frame[col].isna().to_numpy()
        if empty.any():
            raise CLIError(f"{path}: column {col!r} has {int(empty.sum())} empty value(s), the first on "
                           f"{line_of(path, int(np.flatnonzero(empty)[0]))}; fill or drop those rows")


def _as_text(values) -> np.ndarray:
    """Cells as text, whole numbers written one way (3, 3.0 and '3.0' all read '3'): the CSV reader
    guesses a column's type per file, and a class of the target (a category of a model of format
    /2) must read the same in every file."""
    pd = require_pandas()
    text = pd.Series(np.asarray(values, dtype=object)).astype(str)
    number = pd.to_numeric(text, errors="coerce")
    whole = (number.abs() < 2 ** 53) & (number == np.floor(number))
    text[whole] = number[whole].astype(np.int64).astype(str)
    return text.to_numpy()


def target_classes(frame: pd.DataFrame, name: str, path: str, positive: str | None = None) -> list:
    """The target's two values as [negative, positive]: ``positive`` when given, else the larger."""
    values = sorted(frame[name].unique().tolist())
    if len(values) != 2:
        shown = ", ".join(map(repr, values[:6])) + (", ..." if len(values) > 6 else "")
        raise CLIError(f"{path}: the target column {name!r} has {len(values)} distinct value(s) ({shown}); "
                       "skrate trains binary classifiers and needs exactly two")
    if positive is not None:
        wanted = _as_text([positive])[0]
        if wanted not in _as_text(values):
            raise CLIError(f"--positive-class {positive!r} is not a value of the target column {name!r} (its "
                           f"values: {values[0]!r}, {values[1]!r})")
        values.sort(key=lambda v: _as_text([v])[0] == wanted)  # stable: the positive class last
    return values


def target_01(frame: pd.DataFrame, name: str, path: str, classes: list) -> np.ndarray:
    """The target column as 0/1, 1 for ``classes[1]``; a value that is neither class is refused."""
    text, known = _as_text(frame[name]), _as_text(classes)
    unknown = sorted(frame[name][~np.isin(text, known)].unique().tolist())
    if unknown:
        raise CLIError(f"{path}: the target column {name!r} holds {unknown[:3]} that the model never saw "
                       f"(its classes: {classes})")
    return (text == known[1]).astype(int)


def categorical_features(frame: pd.DataFrame, features: list[str], declared: list[str]) -> list[str]:
    """The features to one-hot encode: those declared, and text columns that are not mostly numbers.
    A numeric column with a stray word stays numeric, so that model_input points at the word
    instead of silently one-hot encoding every number."""
    pd = require_pandas()

    def textual(col):
        cells = frame[col]
        return cells.dtype.kind not in "biuf" and pd.to_numeric(cells, errors="coerce").notna().mean() <= NUMERIC_SHARE

    return [c for c in features if c in declared or textual(c)]


def model_input(frame: pd.DataFrame, written: pd.DataFrame | None, features: list[str], categorical: list[str],
                path: str, advice: str) -> pd.DataFrame:
    """The features as the model reads them, whatever types the CSV reader guessed for this file:
    categorical columns as text (as written, from ``written``; with ``written=None``, numbers as
    whole numbers, as models of format /2 read them), the others as finite numbers; any other
    cell is refused by line."""
    pd = require_pandas()
    columns = {}
    for col in features:
        if col in categorical:
            columns[col] = _as_text(frame[col]) if written is None else written[col].to_numpy(dtype=object)
            continue
        number = pd.to_numeric(frame[col], errors="coerce").astype(float).to_numpy()
        bad = np.flatnonzero(~np.isfinite(number))
        if bad.size:
            more = f" ({bad.size} cells are not finite numbers)" if bad.size > 1 else ""
            raise CLIError(f"{path}: column {col!r} is numeric, but {line_of(path, int(bad[0]))} holds "
                           f"{str(frame[col].iloc[bad[0]])!r}{more}; {advice.format(col=col)}")
        columns[col] = number
    return pd.DataFrame(columns, index=frame.index)
