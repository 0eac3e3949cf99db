"""Silencing a warning without crossing threads."""

from __future__ import annotations

import contextlib
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
