"""The finalist candidates: trials that could still be trained to R, and where each of them stands.

A candidate (live or paused, not done) is filed by the highest rung level it recorded a score at,
and ranked there by that score; a trial below the first rung by its last score. A trial stands
above another when it reached a higher level, or the same level with a better score there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

from hpcsched.schedulers.sorted_scores import Ranking

NO_LEVEL = -1  # a trial that has not reached the first rung


class Candidates:
    """Where the candidates stand. ``recorded_at(level)``: the (normalised, higher is better) scores
    the rung at ``level`` recorded, by trial; ``levels``: how many rungs there are."""

    def __init__(self, levels: int, recorded_at: Callable[[int], Mapping[str, float]]):
        self._levels = levels
        self._recorded_at = recorded_at
        self._by_level = [Ranking() for _ in range(levels + 1)]  # index level + 1
        self._level: dict[str, int] = {}
        self._steps: dict[str, int] = {}
        self._best: dict[str, float] = {}

    def note_score(self, trial_id: str, score: float) -> None:
        """A (normalised) score ``trial_id`` reported: its best so far counts."""
        self._best[trial_id] = max(score, self._best.get(trial_id, -math.inf))

    def best_score(self, trial_id: str) -> float:
        """The best (normalised) score ``trial_id`` reported as a candidate (-inf: none)."""
        return self._best.get(trial_id, -math.inf)

    def level(self, trial_id: str) -> int:
        """The highest rung level ``trial_id`` recorded a score at (``NO_LEVEL``: none)."""
        return self._level.get(trial_id, NO_LEVEL)

    def steps(self, trial_id: str) -> int:
        """The furthest step ``trial_id`` reported (0: none)."""
        return self._steps.get(trial_id, 0)

    def track(self, trial_id: str, step: int, score: float) -> list[int]:
        """File ``trial_id``, which reported ``score`` at ``step`` (after the rungs recorded it), by the
        highest level it has reached; return the levels it newly reached, lowest first (a trial may
        jump rungs when steps are skipped)."""
        self._steps[trial_id] = max(step, self._steps.get(trial_id, 0))
        before = self.level(trial_id)
        reached = [higher for higher in range(before + 1, self._levels)
                   if trial_id in self._recorded_at(higher)]
        level = reached[-1] if reached else before
        if level != before:
            self._by_level[before + 1].discard(trial_id)
            self._level[trial_id] = level
        key = score if level == NO_LEVEL else self._recorded_at(level)[trial_id]
        if level != before or level == NO_LEVEL or trial_id not in self._by_level[level + 1]:
            self._by_level[level + 1].set(trial_id, key)
        return reached

    def drop(self, trial_id: str) -> None:
        """``trial_id`` is no candidate any more (done, or it will not be trained on)."""
        self._best.pop(trial_id, None)
        self._by_level[self._level.pop(trial_id, NO_LEVEL) + 1].discard(trial_id)
        self._steps.pop(trial_id, None)

    def best_first(self) -> Iterator[str]:
        """The candidates, best first: highest rung level reached, then the score recorded there."""
        for ranking in reversed(self._by_level):
            for trial_id, _ in ranking.best_first():
                yield trial_id

    def standing(self, trial_id: str) -> tuple[int, float]:
        """How high ``trial_id`` stands (greater is higher): its level, then minus its rank there
        (-inf when it is no candidate)."""
        level = self.level(trial_id)
        ranking = self._by_level[level + 1]
        return level, (-ranking.rank(trial_id) if trial_id in ranking else -math.inf)
