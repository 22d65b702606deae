"""Could it still win? The largest gains a run has seen from each rung on the way to R.

Per rung level, the largest gain any trial made from its score at that rung to its score at the
next rung, and at the top rung, from there to its best score by R. A trial at a rung with score
``s`` could beat the best so far only if ``s`` plus the gains from its rung up reach it. The gains
come from the trials that passed the rung, its leaders; a trial further behind there than every
trial whose gain was seen (a late bloomer: a slower start, as with a lower learning rate) may gain
more, so the bound covers only scores at or above the lowest one a gain was seen from.
Scores are normalised: higher is better.
"""

from __future__ import annotations

import math


class GainBounds:
    """The largest gain seen from each of ``levels`` rung levels (0 = lowest) to the next, and from
    the top rung to the best score by R."""

    def __init__(self, levels: int):
        self._largest: list[float | None] = [None] * levels
        self._lowest_start: list[float] = [math.inf] * levels

    def note(self, level: int, start: float, gain: float) -> None:
        """A trial scored ``start`` at rung ``level`` and ``start + gain`` at the next level (at the
        top rung: its best by R)."""
        self._lowest_start[level] = min(self._lowest_start[level], start)
        known = self._largest[level]
        self._largest[level] = gain if known is None else max(known, gain)

    def bound(self, level: int) -> float | None:
        """The most a trial at rung ``level`` has been seen to gain on its way to its best score by R:
        the largest gains from each rung to the next, summed up to R (None until a trial has completed
        and every rung from ``level`` up has seen a trial pass it)."""
        total = 0.0
        for gain in self._largest[level:]:
            if gain is None:
                return None
            total += gain
        return total

    def beyond_reach(self, level: int, score: float, best: float) -> bool:
        """Whether ``score`` at rung ``level`` plus the largest gains seen from there stays below
        ``best`` (False while there is no bound)."""
        bound = self.bound(level)
        return bound is not None and score + bound < best

    def covers(self, level: int, score: float) -> bool:
        """Whether some trial whose gain from rung ``level`` was seen scored ``score`` or less there."""
        return self._lowest_start[level] <= score
