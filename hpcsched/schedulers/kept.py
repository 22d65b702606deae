"""How many of a rung's trials go on: those that could still end as the run's best.

A rung score foretells a final score only as well as the two correlate, and that differs by family:
on LCBench's MLPs a trial's second epoch ranks it well, on lstm-ptb or the CIFAR-10 ResNets the
configurations that end best start slowly. A run measures the correlation from its own trials:

1. **Normal scores.** Each rung's scores, and the final ones (at R, or where a curve ended by itself),
   become normal scores by their rank there, so that no score scale (perplexity's outliers) matters.
2. **Corrected for the run's own selection.** Only trials that did well at a rung reach the next, so
   the raw correlation among the trials seen at both is range-restricted. But the run chose them by
   scores it recorded: the later scores are missing at random given the earlier ones, in a monotone
   pattern, and the Gaussian likelihood factors into one regression per rung on the rungs before it
   (Anderson 1957). Those regressions give the whole population's covariance, hence the correlation
   rho of each rung with the furthest variable estimated (the final score once enough trials ended).
3. **At least a fresh trial's chance.** A trial goes on when its chance to end as the run's best is at
   least that of a new trial, 1/N (N: the trials recorded at the first rung). With correlation rho between
   a rung's normal score x and the final one, that holds above x* = z (1 - sqrt(1 - rho^2)) / rho,
   z = Phi^-1(1 - 1/N), so the rung keeps

       keep = max(1/eta, 1 - Phi(x*))

   successive halving's 1/eta where the rung ranks well (rho near 1), up to a half where it tells
   nothing (rho at or below 0). Before a later variable can be estimated, 1/eta.
4. **Doubt favours halving.** Until the furthest variable has SETTLED_ROWS rows, each rho is read at
   its upper bound, SE_BOUND standard errors of Fisher's z = atanh(rho) (1/sqrt(n - 3)) above the
   estimate: a dozen rows can put a rung that ranks well at rho near 0, and a rung keeps more than
   1/eta only once the run's own evidence says so.

Scores are normalised: higher is better.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain
from statistics import NormalDist
from typing import Protocol

import numpy as np

from hpcsched.schedulers.pace import Pace
from hpcsched.schedulers.rungs import Rung, Tally
from hpcsched.schedulers.runner_ups import RunnerUps

MIN_ROWS = 8  # trials a rung's regression needs beyond its coefficients
MOST_ROWS = 4096  # the latest trials a regression reads (an estimate, not a census: O(1) in the run's size)
REFRESH = 1.05  # re-estimate once the run has this many times the observations of the last estimate
SETTLED_ROWS = 40  # rows at the furthest variable from which its estimate is read as it is
SE_BOUND = 2.0  # standard errors of Fisher's z added to rho while fewer rows are in
CHECK_LEVEL = 2  # runner-ups go on unjudged to the rung this many above the lowest (at most half-way to R)
NORMAL = NormalDist()


def kept_fraction(rho: float, trials: int, eta: float) -> float:
    """The share of a rung whose chance to end as the best of ``trials`` is at least a fresh trial's,
    for correlation ``rho`` between the rung's and the final normal scores; never below 1/eta."""
    base = 1.0 / eta
    if trials <= 1:
        return base
    z = NORMAL.inv_cdf(1.0 - 1.0 / trials)
    rho = min(1.0, max(rho, 1e-9))
    cut = z * (1.0 - math.sqrt(1.0 - rho * rho)) / rho
    return max(base, 1.0 - NORMAL.cdf(cut))


def doubt_bound(rho: float, rows: int) -> float:
    """``rho`` estimated from ``rows`` trials, read at its upper SE_BOUND-standard-error bound (Fisher z)
    while ``rows`` < SETTLED_ROWS; as estimated from then on."""
    if rows >= SETTLED_ROWS:
        return rho
    z = math.atanh(max(-0.999, min(0.999, rho)))
    return math.tanh(z + SE_BOUND / math.sqrt(max(rows - 3, 1)))


def population_covariance(rows: list[np.ndarray]) -> np.ndarray:
    """The covariance of variables 0..k for the whole population, from ``rows[v]``: an (n, v + 1) array of
    the trials observed at variables 0..v (variable 0: a complete column of normal scores, taken as
    standard normal). Each variable is regressed on the ones before it; the result stops at the first
    variable with too few rows (MIN_ROWS beyond its coefficients)."""
    cov = np.ones((1, 1))
    for v in range(1, len(rows)):
        data = rows[v]
        if len(data) < MIN_ROWS + v + 1:
            break
        design = np.hstack([np.ones((len(data), 1)), data[:, :v]])
        coef, *_ = np.linalg.lstsq(design, data[:, v], rcond=None)
        residual = data[:, v] - design @ coef
        noise = float(residual @ residual) / (len(data) - v - 1)
        beta = coef[1:]
        cross = cov @ beta
        variance = float(beta @ cross) + noise
        cov = np.block([[cov, cross[:, None]], [cross[None, :], np.array([[variance]])]])
    return cov


class KeptFractions:
    """The kept fraction of each of ``levels`` rungs (0 = lowest); ``rung(level)`` gives the rung, whose
    records ``tally`` must count (with the finals')."""

    def __init__(self, levels: int, eta: float, rung: Callable[[int], Rung]):
        self._levels = levels
        self._eta = eta
        self._rung = rung
        self.tally = Tally()
        self.finals = Rung(0, eta, levels, self.tally)  # the scores trials ended with (milestone unused)
        self._rho: tuple[float, ...] = ()  # each rung's correlation with the furthest variable estimated
        self._estimated_at = 0  # observations at the last estimate
        self._kept: dict[int, tuple[float, int, float]] = {}  # level -> (rho, trials, kept fraction)
        self._column_list: list[Rung] = []
        self.runner_ups: RunnerUps | None = None  # the lowest rung's runner-ups (runner_ups.py)

    def check_cuts(self, pace: Pace, R: int) -> RunnerUps:
        """From now on the lowest rung's cut is checked by eta runner-ups (runner_ups.py), sent on to the
        rung two above it, or the highest below that at most half-way to R; the rungs below it keep down to
        where one of them stood while it leads there."""
        check = max((level for level in range(min(CHECK_LEVEL + 1, self._levels))
                     if 2 * self._rung(level).milestone <= R), default=0)
        self.runner_ups = RunnerUps(math.ceil(self._eta), check, self._rung(check).milestone if self._levels else 0,
                                    pace, self.keep)
        return self.runner_ups

    def finished(self, trial_id: str, score: float) -> None:
        """``trial_id`` ended with ``score`` (trained to R, or its curve ended there)."""
        self.finals.record(trial_id, score)

    def keep(self, level: int) -> float:
        """The fraction of rung ``level``'s recorded scores that go on: by its correlation with the end,
        and at least down to where a runner-up that leads the check rung stood there."""
        base = 1.0 / self._eta
        if level >= self._levels - 1:
            return base
        ups = self.runner_ups
        floor = 0.0 if ups is None else ups.floor(self._rung(level), self._rung(ups.check))
        rho = self._correlations()
        if level >= len(rho):
            return max(base, floor)  # (no later variable estimated yet)
        trials = max(len(self._rung(0)), math.ceil(self._eta) + 1)
        known = self._kept.get(level)
        if known is None or known[:2] != (rho[level], trials):  # (asked at every report that meets a rung)
            known = self._kept[level] = (rho[level], trials, kept_fraction(rho[level], trials, self._eta))
        return max(known[2], floor)

    def quantile(self, level: int) -> float:
        """The cutoff quantile of rung ``level``: 1 - its kept fraction (the rungs' own convention)."""
        return 1.0 - self.keep(level)

    def _columns(self) -> list[Rung]:
        if not self._column_list:
            self._column_list = [self._rung(level) for level in range(self._levels)] + [self.finals]
        return self._column_list

    def _correlations(self) -> tuple[float, ...]:
        observed = self.tally.count
        if observed > self._estimated_at * REFRESH:
            rows = latest_rows(self._columns())
            cov = population_covariance(rows)
            last = cov.shape[0] - 1
            furthest = len(rows[last])  # the rows behind the furthest variable estimated
            self._rho = tuple(doubt_bound(float(cov[v, last] / math.sqrt(cov[v, v] * cov[last, last])), furthest)
                              for v in range(last))
            self._estimated_at = observed
        return self._rho


class ScoreColumn(Protocol):
    """Scores by trial (``recorded``), and those that ranks are read against, ascending."""

    @property
    def recorded(self) -> dict[str, float]: ...

    @property
    def sorted_scores(self) -> list[float]: ...


def normal_scores(column: ScoreColumn, trial_ids: list[str]) -> dict[str, float]:
    """The normal score in ``column`` of each of ``trial_ids``'s recorded scores: Phi^-1 of its share of
    the column's sorted scores below it (the ranks found at once)."""
    ordered = np.asarray(column.sorted_scores, dtype=float)
    scores = np.fromiter((column.recorded[t] for t in trial_ids), dtype=float, count=len(trial_ids))
    better = len(ordered) - np.searchsorted(ordered, scores, side="right")  # (Rung.rank, for all at once)
    return dict(zip(trial_ids, normal_quantiles(share_below(better, len(ordered))).tolist()))


# Wichura's AS241 (as statistics.NormalDist.inv_cdf computes it), central region |p - 0.5| <= 0.425
_CENTRAL_NUM = (2.5090809287301226727e+3, 3.3430575583588128105e+4, 6.7265770927008700853e+4,
                4.5921953931549871457e+4, 1.3731693765509461125e+4, 1.9715909503065514427e+3,
                1.3314166789178437745e+2, 3.3871328727963666080e+0)
_CENTRAL_DEN = (5.2264952788528545610e+3, 2.8729085735721942674e+4, 3.9307895800092710610e+4,
                2.1213794301586595867e+4, 5.3941960214247511077e+3, 6.8718700749205790830e+2,
                4.2313330701600911252e+1, 1.0)


def normal_quantiles(p: np.ndarray) -> np.ndarray:
    """Phi^-1 of each of ``p`` (in (0, 1)), equal to NORMAL.inv_cdf's to the bit: the central region at
    once by the same polynomials in the same order, the tails (15 % of a uniform sample) one by one."""
    p = np.asarray(p, dtype=float)
    q = p - 0.5
    r = 0.180625 - q * q
    num = np.full_like(r, _CENTRAL_NUM[0])
    den = np.full_like(r, _CENTRAL_DEN[0])
    for a, b in zip(_CENTRAL_NUM[1:], _CENTRAL_DEN[1:]):
        num = num * r + a
        den = den * r + b
    out = 0.0 + (num * q) / den * 1.0  # (mu + x * sigma with mu 0 and sigma 1, as NormalDist computes it)
    tails = np.flatnonzero(np.abs(q) > 0.425)
    if len(tails):
        out[tails] = [NORMAL.inv_cdf(x) for x in p[tails].tolist()]
    return out


def share_below(better, n: int):
    """The share of a column of ``n`` scores below a score that ``better`` of them beat (a count or an
    array of counts), ties at their middle. A score ranked against the column's latest only may be below
    all of them: it takes the lowest share."""
    if isinstance(better, int):  # (one trial's forecast: no array arithmetic)
        return 1.0 - (min(better, n - 1) + 0.5) / n
    return 1.0 - (np.minimum(better, n - 1) + 0.5) / n


def latest_rows(columns: list[Rung]) -> list[np.ndarray]:
    """Per column v: the normal scores at columns 0..v of the latest (at most MOST_ROWS) trials recorded
    at column v that were recorded at every column before it, as an (n, v + 1) array."""
    chosen: list[list[str]] = [[]]
    for v in range(1, len(columns)):
        earlier = [column.recorded for column in columns[:v]]
        found = []
        for trial_id in reversed(columns[v].recorded):
            if all(trial_id in recorded for recorded in earlier):
                found.append(trial_id)
                if len(found) == MOST_ROWS:
                    break
        chosen.append(found)
    scores = [normal_scores(column, list(dict.fromkeys(chain.from_iterable(chosen[c:]))))
              for c, column in enumerate(columns)]
    return [np.zeros((0, 1))] + [
        np.column_stack([np.fromiter(map(scores[c].__getitem__, chosen[v]), dtype=float, count=len(chosen[v]))
                         for c in range(v + 1)])
        for v in range(1, len(columns))]
