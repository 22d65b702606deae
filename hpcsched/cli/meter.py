"""Progress of a batch of tasks on stderr, for ``hpcsched simulate`` (matrix cells x variants x
seeds): on a terminal a bar that redraws itself (done / total, elapsed, time left); otherwise (a
log file, CI) one line each time a group of tasks (a matrix cell) is complete.

Hand-written rather than tqdm: one bar is a few lines, and the core install stays without another
dependency. Time comes from an injected clock (``time.monotonic`` by default).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, TextIO

from hpcsched.core.durations import format_duration

BAR_WIDTH = 28
REDRAW_EVERY = 0.2  # seconds between two redraws of the bar


class Meter:
    """Counts finished tasks by group and shows it; ``close`` ends the bar's line."""

    def __init__(self, groups: Mapping[str, int], out: TextIO, what: str = "runs", tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, shape: str = ""):
        self.groups = dict(groups)
        self.total = sum(self.groups.values())
        self.out = out
        self.what = what
        self.shape = shape  # e.g. "4 cells x 4 variants x 10 seeds"
        self.tty = out.isatty() if tty is None else tty
        self.clock = clock
        self.started = clock()
        self.done = 0
        self._left = dict(self.groups)
        self._groups_done = 0
        self._drawn_at = -REDRAW_EVERY

    def _times(self) -> str:
        elapsed = self.clock() - self.started
        if self.done == 0:
            return f"{format_duration(elapsed)} elapsed"
        left = elapsed / self.done * (self.total - self.done)
        return f"{format_duration(elapsed)} elapsed, ~{format_duration(left)} left"

    def step(self, group: str) -> None:
        """One task of ``group`` finished."""
        self.done += 1
        self._left[group] = self._left.get(group, 1) - 1
        if self.tty:
            now = self.clock()
            if now - self._drawn_at >= REDRAW_EVERY or self.done == self.total:
                self._drawn_at = now
                self._draw()
        elif self._left[group] == 0:
            self._groups_done += 1
            print(f"{group}: done ({self._groups_done}/{len(self.groups)} cells, {self.done}/{self.total} "
                  f"{self.what}, {self._times()})", file=self.out, flush=True)

    def _draw(self) -> None:
        filled = int(BAR_WIDTH * self.done / max(self.total, 1))
        shape = f" ({self.shape})" if self.shape else ""
        print(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} {self.what}{shape}, "
              f"{self._times()}\033[K", end="", file=self.out, flush=True)

    def start(self) -> None:
        """Show the empty bar (a terminal) or say what is coming (otherwise)."""
        if self.tty:
            self._draw()
        else:
            shape = f": {self.shape}" if self.shape else ""
            print(f"{self.total} {self.what}{shape}", file=self.out, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=self.out, flush=True)
