"""How far a rung's ranking predicts the end: rank correlations learned from the run's own trials.

Link ``i`` joins rung level ``i`` to level ``i + 1`` (the last level is R itself: a trial that
completed). Its estimate is the Spearman rank correlation of the scores that the same trials
recorded at both levels. Only trials that passed the lower rung reach the upper one, so the
pairs come from a restricted range of the lower rung; the correlation is corrected for that
(Thorndike's case 2 on normal scores: each lower score is given as its percentile among all
the scores recorded at that rung, mapped through the normal quantile function, whose spread
over the whole rung is 1). A link is then read as the upper end of a ``z``-standard-error band
around that estimate, so that a rung loses trust only as far as the evidence shows that it
misleads (successive halving's behaviour is the prior, kept while pairs are few or noisy):

    link_i = min(1, rho_corrected + z * u * (1 - rho^2) / sqrt(n - 3))     (1 while n <= 3)

with ``rho`` the correlation seen, ``u`` the range ratio of the correction (which multiplies the
sampling error as it multiplies the correlation) and ``n`` the pairs. A shrinkage towards 1 by
a fixed number of pairs instead let the noise of a few dozen top-of-rung pairs pause less than
successive halving on curves whose early rungs do inform (MetaQNN), docs/results/quality.md.

A rung's *trust* is the product of the links from it up to R: how well its ranking should
predict the final one if each link only passes on what the one below it knew. Trust 1 keeps
successive halving's cutoff, trust 0 pauses nothing at that rung.
"""

from __future__ import annotations

from collections import deque
from statistics import NormalDist

import numpy as np


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (ties ranked by order, as a stable sort gives); 0 for < 3 pairs."""
    n = len(x)
    if n < 3:
        return 0.0
    rx = np.empty(n)
    ry = np.empty(n)
    rx[np.argsort(x, kind="stable")] = np.arange(n)
    ry[np.argsort(y, kind="stable")] = np.arange(n)
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return 0.0
    return float(((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy))


MAX_RANGE_RATIO = 10.0


def normal_score(percentile: float) -> float:
    """A percentile in [0, 1] as a standard normal quantile (clipped away from 0 and 1)."""
    return NormalDist().inv_cdf(min(0.995, max(0.005, percentile)))


def normal_scores(percentiles: np.ndarray) -> np.ndarray:
    """``normal_score`` of each percentile."""
    return np.array([normal_score(float(p)) for p in percentiles])


def range_ratio(selected_sd: float) -> float:
    """u: the spread over everyone (1 on the normal scale) over the spread ``selected_sd`` seen, in [1, 10]."""
    return MAX_RANGE_RATIO if selected_sd <= 0 else min(MAX_RANGE_RATIO, max(1.0, 1.0 / selected_sd))


def corrected_for_range(rho: float, selected_sd: float) -> float:
    """Thorndike's case-2 correction of a correlation seen where the selecting variable (on the
    normal scale, spread 1 over everyone) has spread ``selected_sd``; in [0, 1]."""
    if rho <= 0 or selected_sd <= 0:
        return max(0.0, rho)
    u = range_ratio(selected_sd)
    return min(1.0, rho * u / np.sqrt(1.0 - rho * rho + rho * rho * u * u))


class RungTrust:
    """Online trust per rung level (0 = lowest) for a bracket with ``levels`` rungs below R."""

    def __init__(self, levels: int, z: float = 1.0, window: int = 256):
        if not z >= 0.0:
            raise ValueError(f"z must be >= 0, got {z!r}")
        self.levels = levels
        self.z = z
        # per link: (lower percentile, its normal score, upper score)
        self._pairs: list[deque[tuple[float, float, float]]] = [deque(maxlen=window) for _ in range(levels)]
        self._links: list[float] = [1.0] * levels
        self._trust: list[float] = self._chain(self._links)

    def add_pair(self, level: int, lower_percentile: float, upper: float) -> None:
        """One trial's score at rung ``level`` (as its percentile in [0, 1] among the scores
        recorded there) and its score at the level above (R for the top rung)."""
        pairs = self._pairs[level]
        pairs.append((lower_percentile, normal_score(lower_percentile), upper))
        n = len(pairs)
        if n > 3:
            values = np.asarray(pairs, dtype=float)
            selected_sd = float(values[:, 1].std())
            seen = spearman(values[:, 0], values[:, 2])
            error = range_ratio(selected_sd) * (1.0 - seen * seen) / np.sqrt(n - 3)
            self._links[level] = min(1.0, corrected_for_range(seen, selected_sd) + self.z * error)
        self._trust = self._chain(self._links)

    def pairs(self, level: int) -> int:
        return len(self._pairs[level])

    def link(self, level: int) -> float:
        return self._links[level]

    def trust(self, level: int) -> float:
        """Product of the links from ``level`` up to R, in [0, 1]."""
        return self._trust[level]

    def _chain(self, links: list[float]) -> list[float]:
        out = [1.0] * self.levels
        acc = 1.0
        for level in reversed(range(self.levels)):
            acc *= links[level]
            out[level] = acc
        return out
