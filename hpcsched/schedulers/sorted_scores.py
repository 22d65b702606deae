"""Small sorted collections for per-event statistics without full scans."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Container


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
        low, high = self._low, self._high
        want = int(self.q * (len(low) + len(high))) + 1  # (the lower part's size with the value added)
        if low and value <= -low[0]:
            if len(low) < want:
                heapq.heappush(low, -value)
            else:  # (the lower part is full: its largest moves up)
                heapq.heappush(high, -heapq.heappushpop(low, -value))
        elif len(low) < want:  # (the upper part's smallest moves down)
            heapq.heappush(low, -heapq.heappushpop(high, value))
        else:
            heapq.heappush(high, value)

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
_UNRANKED = object()  # (no score equals it)


def _key(score: Score, seq: int, item: str) -> tuple:
    """``item``'s sort key, best first: its negated score (a tuple's elements inline), then insertion order."""
    return (*[-x for x in score], seq, item) if isinstance(score, tuple) else (-score, seq, item)


class Ranking:
    """Items ordered by score (a number, or a tuple compared element by element), best first; rank
    lookups and updates by bisection. The order is built at the first question about it and kept from
    then on: until then an update costs a dict write (a ranking nobody reads costs no sorting)."""

    def __init__(self) -> None:
        self._keys: list[tuple] | None = None  # (negated score..., insertion order, item), ascending; None: not built
        self._key_of: dict[str, tuple] = {}
        self._score_of: dict[str, Score] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._key_of)

    def __contains__(self, item: str) -> bool:
        return item in self._key_of

    def set(self, item: str, score: Score) -> None:
        """Insert or move ``item`` (higher score ranks first; unscored items use -inf)."""
        if self._score_of.get(item, _UNRANKED) == score:
            return  # (where it stands already)
        self.discard(item)
        key = _key(score, self._seq, item)
        self._seq += 1
        if self._keys is not None:
            bisect.insort(self._keys, key)
        self._key_of[item] = key
        self._score_of[item] = score

    def discard(self, item: str) -> None:
        key = self._key_of.pop(item, None)
        if key is not None:
            del self._score_of[item]
            if self._keys is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]

    def score(self, item: str) -> Score:
        """``item``'s score (KeyError when it is not ranked)."""
        return self._score_of[item]

    def _ordered(self) -> list[tuple]:
        if self._keys is None:
            self._keys = sorted(self._key_of.values())
        return self._keys

    def rank(self, item: str) -> int:
        return bisect.bisect_left(self._ordered(), self._key_of[item])

    def best(self) -> str | None:
        return self.first()

    def first(self, exclude: Container[str] = ()) -> str | None:
        """The best-ranked item not in ``exclude`` (None: none)."""
        for key in self._ordered():
            if key[-1] not in exclude:
                return key[-1]
        return None

    def best_first(self):
        """(item, score) pairs, best first (a generator; do not mutate while iterating)."""
        for key in self._ordered():
            yield key[-1], self._score_of[key[-1]]

    def worst_first(self):
        """(item, score) pairs, worst first (a generator; do not mutate while iterating)."""
        for key in reversed(self._ordered()):
            yield key[-1], self._score_of[key[-1]]
