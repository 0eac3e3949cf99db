"""Silencing a warning without crossing threads; pointing one at the user's line."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import sysconfig
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


def _folder(package: str) -> str:
    return os.path.dirname(importlib.import_module(package).__file__) + os.sep


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointed at the user's line: the first frame outside skrate and the
    libraries that call into it (scikit-learn's Pipeline, searches and scorers, joblib),
    however deep the call chain between. In a worker process or thread, where that walk ends
    in the standard library's bootstrap, the first frame outside skrate."""
    ours, libraries = _folder("skrate"), tuple(_folder(p) for p in ("skrate", "sklearn", "joblib"))
    frame, level, outside_ours = sys._getframe(), 1, None  # level 1: this frame
    while frame is not None and frame.f_code.co_filename.startswith(libraries):
        if outside_ours is None and not frame.f_code.co_filename.startswith(ours):
            outside_ours = level
        frame, level = frame.f_back, level + 1
    paths = sysconfig.get_paths()
    if frame is None or (frame.f_code.co_filename.startswith(paths["stdlib"])
                         and not frame.f_code.co_filename.startswith((paths["purelib"], paths["platlib"]))):
        level = outside_ours or level
    warnings.warn(message, category, stacklevel=level)


def listed(items, limit: int = 10) -> str:
    """``items`` for a message: all of them up to ``limit``, else the first ``limit`` and how many
    more (hundreds of expanded constraints made messages of tens of kilobytes)."""
    items = [str(item) for item in items]
    if len(items) <= limit:
        return repr(items)
    return f"{items[:limit]!r} and {len(items) - limit} more"
