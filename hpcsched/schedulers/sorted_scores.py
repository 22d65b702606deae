"""Small sorted collections for per-event statistics without full scans."""

from __future__ import annotations

import bisect


class SortedSample:
    """A growing sample kept sorted: quantiles in O(1), insertion by bisection."""

    def __init__(self) -> None:
        self._values: list[float] = []

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: float) -> None:
        bisect.insort(self._values, value)

    def quantile(self, q: float) -> float | None:
        """Linear-interpolated quantile (as numpy.percentile), None when empty."""
        v = self._values
        if not v:
            return None
        pos = q * (len(v) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (pos - lo) * (v[hi] - v[lo])


class Ranking:
    """Items ordered by score, best first; rank lookups and updates by bisection."""

    def __init__(self) -> None:
        self._keys: list[tuple[float, int, str]] = []
        self._key_of: dict[str, tuple[float, int, str]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, item: str) -> bool:
        return item in self._key_of

    def set(self, item: str, score: float) -> None:
        """Insert or move ``item`` (higher score ranks first; unscored items use -inf)."""
        self.discard(item)
        key = (-score, self._seq, item)
        self._seq += 1
        bisect.insort(self._keys, key)
        self._key_of[item] = key

    def discard(self, item: str) -> None:
        key = self._key_of.pop(item, None)
        if key is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]

    def rank(self, item: str) -> int:
        return bisect.bisect_left(self._keys, self._key_of[item])

    def best(self) -> str | None:
        return self._keys[0][2] if self._keys else None
