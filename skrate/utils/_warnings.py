"""Silencing a warning without crossing threads; pointing one at the user's line."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import warnings
from typing import Iterator


def on_main_thread() -> bool:
    """Whether this is the process's main thread, where ``warnings.catch_warnings`` is safe: it
    swaps the process-wide filters and hook, and blocks of two threads (joblib's threading
    backend, Dask's worker threads) that overlap restore each other's state."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def ignoring(category: type[Warning], message: str = "") -> Iterator[None]:
    """Ignore ``category`` warnings (whose text starts with the regex ``message``) in the block on
    the main thread; on another thread they show, rather than leave a filter behind for good."""
    if not on_main_thread():
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=message, category=category)
        yield


def stacklevel_outside(*packages: str) -> int:
    """The ``stacklevel`` of a ``warnings.warn`` made by this function's caller that names the
    first frame outside ``packages`` (``"skrate"``, and ``"sklearn"`` when it calls a scorer):
    the user's line, however deep the call chain between."""
    prefixes = tuple(os.path.dirname(importlib.import_module(p).__file__) + os.sep for p in packages)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(prefixes):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointed at the user's line: the first frame outside skrate and the
    libraries that call into it (scikit-learn's Pipeline, searches and scorers, joblib's
    sequential backend), however deep the call chain between."""
    warnings.warn(message, category, stacklevel=stacklevel_outside("skrate", "sklearn", "joblib"))
