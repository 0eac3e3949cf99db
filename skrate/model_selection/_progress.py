"""A one-line text progress bar for sweeps, on stderr."""

from __future__ import annotations

import sys
import time


class Progress:
    """``with Progress(total, label) as bar: bar.update()`` redraws ``label [####    ] k/total  12.3 s``.

    On a terminal the line is redrawn in place; elsewhere (a log file, a pipe) one line is
    written per quarter of the work, so logs stay short. ``enabled=None`` draws on a terminal
    only; with no stream at all (pythonw and some launchers have no stderr) nothing is drawn.
    """

    def __init__(self, total: int, label: str, *, enabled: bool | None = True, stream=None, width: int = 24):
        self.total, self.label, self.width = total, label, width
        self.stream = sys.stderr if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.stream is not None and (self.live if enabled is None else enabled)
        self.done = 0
        self.start = time.perf_counter()
        self._quarter = -1

    def __enter__(self) -> "Progress":
        self._draw()
        return self

    def update(self, k: int = 1) -> None:
        self.done += k
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        quarter = 4 * self.done // max(self.total, 1)
        if not self.live and quarter == self._quarter:
            return
        self._quarter = quarter
        filled = self.width * self.done // max(self.total, 1)
        secs = time.perf_counter() - self.start
        line = f"{self.label} [{'#' * filled}{' ' * (self.width - filled)}] {self.done}/{self.total}  {secs:.1f} s"
        self.stream.write(f"\r{line}" if self.live else f"{line}\n")
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        if self.enabled and self.live:
            self.stream.write("\n")
            self.stream.flush()
