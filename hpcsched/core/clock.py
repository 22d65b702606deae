"""Clocks injected into the controller: the wall clock sleeps, the virtual clock jumps."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep_until(self, t: float) -> None: ...


class WallClock:
    """Real time in seconds since the epoch (absolute, so a resumed run keeps its deadline)."""

    def now(self) -> float:
        return time.time()

    def sleep_until(self, t: float) -> None:
        delay = t - time.time()
        if delay > 0:
            time.sleep(delay)


class VirtualClock:
    """Simulated time: ``sleep_until`` jumps forward at once."""

    def __init__(self, start: float = 0.0):
        self._now = start

    def now(self) -> float:
        return self._now

    def sleep_until(self, t: float) -> None:
        if t > self._now:
            self._now = t
