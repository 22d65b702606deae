"""How many of a rung's trials go on: where the trials that lead later ranked at that rung.

Successive halving keeps the best ``1/eta`` of the scores recorded at a rung. That is right where a
rung's ranking already tells the leaders apart, and wrong where the configurations that end best
start slowly (a lower learning rate): their rung scores sit just below the cut and they are paused
for good. A run can see which of the two holds from its own trials. Of the trials recorded both at
rung ``k`` and at the furthest later rung that ``LATER_EVIDENCE`` of them reached, take the leaders
there (the best ``1/eta`` by their later score) and read where they ranked at rung ``k`` (0: first,
1: last). Leaders that came from the top of the rung say the cut is safe; leaders spread across the
kept band (its median rank at half the band) say the rung's ranking told nothing within it, and the
band widens. The kept fraction is

    keep_k = min(1, max(1 / eta, WIDEN * median rank of the leaders))

so that leaders spread evenly through a band widen it by half each time, and leaders from the top
narrow it to successive halving's ``1/eta``. The top rung keeps ``1/eta`` (nothing later to read).
Scores are normalised: higher is better.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hpcsched.schedulers.rungs import Rung
from hpcsched.schedulers.sorted_scores import Ranking

WIDEN = 3.0  # the kept fraction over the leaders' median rank (2 would keep an evenly spread band as it is)
MOST_LEADERS = 32  # leaders read per rung at most (the best of the later rung's arrivals)


class KeptFractions:
    """The kept fraction of each of ``levels`` rungs (0 = lowest); ``rung(level)`` gives the rung."""

    def __init__(self, levels: int, eta: float, rung: Callable[[int], Rung]):
        self._levels = levels
        self._eta = eta
        self._rung = rung
        self._later_evidence = max(2, math.ceil(eta))  # arrivals at a later rung that give one leader
        # (lower, upper) -> the trials recorded at both, ranked by their score at the upper level
        self._pairs = {(k, j): Ranking() for k in range(levels) for j in range(k + 1, levels)}
        self._cache: dict[int, tuple[tuple[int, ...], float]] = {}

    def recorded(self, trial_id: str, level: int) -> None:
        """``trial_id`` now has a score recorded at rung ``level``: pair it with the other rungs it has."""
        for other in range(self._levels):
            if other == level or trial_id not in self._rung(other).recorded:
                continue
            lower, upper = min(level, other), max(level, other)
            self._pairs[(lower, upper)].set(trial_id, self._rung(upper).recorded[trial_id])

    def keep(self, level: int) -> float:
        """The fraction of rung ``level``'s recorded scores that go on."""
        base = 1.0 / self._eta
        if level >= self._levels - 1:
            return base
        rung = self._rung(level)
        upper = next((j for j in range(self._levels - 1, level, -1)
                      if len(self._pairs[(level, j)]) >= self._later_evidence), None)
        if upper is None or len(rung) < 2:
            return base
        pairs = self._pairs[(level, upper)]
        cached = self._cache.get(level)
        if cached is not None and cached[0][1:] == (upper, len(pairs)) and len(rung) <= cached[0][0] * 1.01:
            return cached[1]  # (ranks are shares of the rung: 1 % more arrivals barely move them)
        version = (len(rung), upper, len(pairs))
        count = min(MOST_LEADERS, max(1, int(len(pairs) / self._eta)))
        ranks = []
        for trial_id, _ in pairs.best_first():
            ranks.append(rung.rank(rung.recorded[trial_id]) / len(rung))
            if len(ranks) == count:
                break
        ranks.sort()
        median = (ranks[(count - 1) // 2] + ranks[count // 2]) / 2
        value = min(1.0, max(base, WIDEN * median))
        self._cache[level] = (version, value)
        return value

    def quantile(self, level: int) -> float:
        """The cutoff quantile of rung ``level``: 1 - its kept fraction (the rungs' own convention)."""
        return 1.0 - self.keep(level)
