"""Small sorted collections for per-event statistics without full scans."""

from __future__ import annotations

import bisect
import heapq


class RunningQuantile:
    """One fixed quantile of a growing sample (linear interpolation, as numpy.percentile).

    Two heaps split the sample at the quantile's lower neighbour: ``_low`` (a max-heap of
    negated values) holds the smallest ``int(q * (n - 1)) + 1`` values, ``_high`` the rest.
    Adding costs O(log n) however large the sample grows (a sorted list costs O(n) per insert).
    """

    def __init__(self, q: float) -> None:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {q!r}")
        self.q = q
        self._low: list[float] = []
        self._high: list[float] = []
        self._value: float | None = None  # (read far more often than it changes)

    def __len__(self) -> int:
        return len(self._low) + len(self._high)

    def add(self, value: float) -> None:
        self._value = None
        if self._low and value <= -self._low[0]:
            heapq.heappush(self._low, -value)
        else:
            heapq.heappush(self._high, value)
        want = int(self.q * (len(self) - 1)) + 1
        while len(self._low) > want:
            heapq.heappush(self._high, -heapq.heappop(self._low))
        while len(self._low) < want:
            heapq.heappush(self._low, -heapq.heappop(self._high))

    def value(self) -> float | None:
        """The linear-interpolated quantile (as numpy.percentile), None when empty."""
        if self._value is None and self._low:
            pos = self.q * (len(self) - 1)
            lo = int(pos)
            low = -self._low[0]
            high = self._high[0] if self._high else low
            self._value = low + (pos - lo) * (high - low)
        return self._value


Score = float | tuple[float, ...]


def _negated(score: Score) -> Score:
    return tuple(-x for x in score) if isinstance(score, tuple) else -score


class Ranking:
    """Items ordered by score (a number, or a tuple compared element by element), best first; rank
    lookups and updates by bisection."""

    def __init__(self) -> None:
        self._keys: list[tuple[Score, int, str]] = []
        self._key_of: dict[str, tuple[Score, int, str]] = {}
        self._score_of: dict[str, Score] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, item: str) -> bool:
        return item in self._key_of

    def set(self, item: str, score: Score) -> None:
        """Insert or move ``item`` (higher score ranks first; unscored items use -inf)."""
        if item in self._score_of and self._score_of[item] == score:
            return  # (where it stands already)
        self.discard(item)
        key = (_negated(score), self._seq, item)
        self._seq += 1
        bisect.insort(self._keys, key)
        self._key_of[item] = key
        self._score_of[item] = score

    def discard(self, item: str) -> None:
        key = self._key_of.pop(item, None)
        if key is not None:
            del self._score_of[item]
            del self._keys[bisect.bisect_left(self._keys, key)]

    def score(self, item: str) -> Score:
        """``item``'s score (KeyError when it is not ranked)."""
        return self._score_of[item]

    def rank(self, item: str) -> int:
        return bisect.bisect_left(self._keys, self._key_of[item])

    def best(self) -> str | None:
        return self._keys[0][2] if self._keys else None

    def best_first(self):
        """(item, score) pairs, best first (a generator; do not mutate while iterating)."""
        for _, _, item in self._keys:
            yield item, self._score_of[item]

    def worst_first(self):
        """(item, score) pairs, worst first (a generator; do not mutate while iterating)."""
        for _, _, item in reversed(self._keys):
            yield item, self._score_of[item]
