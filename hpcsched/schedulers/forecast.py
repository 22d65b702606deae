"""What a trial's curve up to a rung foretells: its normal score at the next milestone, learned in the run.

A rung score alone ranks a family's trials badly where curves cross: lstm-ptb's best configurations
start slowly and stand 20-55 % down at step 4, but their curve from step 1 to step 4 tells them apart.
So every rung above the first records a forecast instead of the raw score:

1. **Features.** The trial's normal scores (by rank among all trials that reached that step, as in
   kept.py) at the previous milestone, half-way (geometrically) and the rung's own milestone.
2. **Target.** Its normal score at the next milestone (R above the top rung): what a promotion buys.
3. **Fit.** Least squares on the run's trials that reached the target. The run chose them by scores that
   the regression conditions on, so the fit is not biased by that selection (it is where the run
   promotes that it needs to be right). Refitted each time those trials have doubled, until a fit read
   MOST_ROWS of them; each refit re-ranks the rung (``on_refit``).

Until a level has MIN_ROWS rows beyond its coefficients its rung records the raw score, as ASHA's.
Scores are normalised: higher is better.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from hpcsched.schedulers.kept import MIN_ROWS, MOST_ROWS, NORMAL, normal_scores, share_below

REFIT = 2.0  # refit once this many times the rows of the last fit reached the target (a refit re-ranks a rung)


class RecentScores:
    """Every trial's score at one step, each ranked against the latest MOST_ROWS recorded there (an
    estimate, not a census: a record costs O(MOST_ROWS) at most, whatever the run's size)."""

    def __init__(self) -> None:
        self.recorded: dict[str, float] = {}
        self.sorted_scores: list[float] = []  # the latest MOST_ROWS scores, ascending
        self._order: deque[float] = deque()

    def __len__(self) -> int:
        return len(self.sorted_scores)

    def record(self, trial_id: str, score: float) -> None:
        """Record the trial's first score here (a later one is ignored)."""
        if trial_id in self.recorded:
            return
        self.recorded[trial_id] = score
        bisect.insort(self.sorted_scores, score)
        self._order.append(score)
        if len(self._order) > MOST_ROWS:
            del self.sorted_scores[bisect.bisect_left(self.sorted_scores, self._order.popleft())]

    def rank(self, score: float) -> int:
        """How many of the latest scores are strictly better than ``score``."""
        return len(self.sorted_scores) - bisect.bisect_right(self.sorted_scores, score)


def feature_steps(marks: tuple[int, ...], level: int) -> tuple[int, ...]:
    """The steps whose scores forecast rung ``level`` (>= 1): the previous milestone, half-way, the rung's."""
    prev, mark = marks[level - 1], marks[level]
    return tuple(dict.fromkeys((prev, max(prev, round((prev * mark) ** 0.5)), mark)))


class Forecast:
    """Forecasts for the rungs at ``marks`` (levels 0.., below ``R``); ``on_refit(level)`` is called when
    level's regression changes, so that its rung's recorded values are recomputed (``values``)."""

    def __init__(self, marks: tuple[int, ...], R: int, on_refit: Callable[[int], None]):
        self.on_refit = on_refit
        self.features = {level: feature_steps(marks, level) for level in range(1, len(marks))}
        self.target = {level: marks[level + 1] if level + 1 < len(marks) else R for level in self.features}
        self._steps = sorted({s for steps in self.features.values() for s in steps} | set(self.target.values()))
        self._first = self._steps[0] if self._steps else math.inf  # (one rung: nothing to forecast)
        self._levels_at = {step: [level for level, t in self.target.items() if t == step] for step in self._steps}
        self.columns = {step: RecentScores() for step in self._steps}
        self._next: dict[str, float] = {}  # trial -> the next tracked step it has no score at (inf: none left)
        self._reached: dict[int, list[str]] = {level: [] for level in self.features}  # at the target, in order
        self.coef: dict[int, np.ndarray] = {}  # level -> (intercept, one coefficient per feature step)
        self._fitted_rows: dict[int, int] = {}

    def observe(self, trial_id: str, step: int, score: float) -> None:
        """A report: its score is the trial's at every tracked step up to ``step`` it has none at yet."""
        if step < self._next.get(trial_id, self._first):
            return  # (the common case: no tracked step reached)
        steps = self._steps
        i = bisect.bisect_left(steps, self._next.get(trial_id, self._first))
        while i < len(steps) and steps[i] <= step:
            self.columns[steps[i]].record(trial_id, score)
            for level in self._levels_at[steps[i]]:
                self._reached[level].append(trial_id)
                self._maybe_fit(level)
            i += 1
        self._next[trial_id] = steps[i] if i < len(steps) else math.inf

    def ready(self, level: int) -> bool:
        """Whether rung ``level`` has a forecast (else it records the raw score)."""
        return level in self.coef

    def rung_value(self, trial_id: str, level: int, score: float) -> float:
        """What rung ``level`` records for the trial's report of ``score``: its forecast once there is one."""
        return self.value(level, trial_id) if self.ready(level) else score

    def value(self, level: int, trial_id: str) -> float:
        """The forecast for one trial with a score at every feature step of ``level``."""
        intercept, *slopes = self.coef[level].tolist()
        total = intercept
        for c, step in zip(slopes, self.features[level]):
            column = self.columns[step]
            total += c * NORMAL.inv_cdf(share_below(column.rank(column.recorded[trial_id]), len(column)))
        return total

    def values(self, level: int, trial_ids: list[str]) -> dict[str, float]:
        """The forecasts of ``trial_ids`` (each with a score at every feature step of ``level``), at once."""
        if not trial_ids:
            return {}
        return dict(zip(trial_ids, (self._design(level, trial_ids) @ self.coef[level]).tolist()))

    def _maybe_fit(self, level: int) -> None:
        rows, fitted = self._reached[level], self._fitted_rows.get(level, 0)
        if len(rows) < MIN_ROWS + len(self.features[level]) + 1 or len(rows) < fitted * REFIT or fitted >= MOST_ROWS:
            return  # (too few rows; not doubled since the last fit; or fitted on the most a fit reads)
        latest = rows[-MOST_ROWS:]
        target = normal_scores(self.columns[self.target[level]], latest)
        y = np.fromiter(map(target.__getitem__, latest), dtype=float, count=len(latest))
        self.coef[level] = np.linalg.lstsq(self._design(level, latest), y, rcond=None)[0]
        self._fitted_rows[level] = len(rows)
        self.on_refit(level)

    def _design(self, level: int, trial_ids: list[str]) -> np.ndarray:
        columns = [normal_scores(self.columns[step], trial_ids) for step in self.features[level]]
        return np.column_stack([np.ones(len(trial_ids))]
                               + [np.fromiter(map(c.__getitem__, trial_ids), dtype=float, count=len(trial_ids))
                                  for c in columns])
