"""Runner-ups: the lowest rung's cut checked by a few of the trials just below it.

A rung keeps what its correlation with the end says (kept.py), but a correlation measured on the trials
a cut let through cannot say whether the run's best are among those it cut. On lstm-ptb none of the
configurations that end in the pool's best sixth is in step 1's top quarter, whose best ends 47th of
280, while step 1 ranks step 4 as well as on LCBench (0.93). So the lowest rung sends its first eta
runner-ups on, unjudged, to the check rung (two rungs up, or the highest rung below it at most half-way
to R, so that a check costs less than a trial trained to the end): trials it would pause, ranked within
twice its kept share, stepping no slower than the run's lower quartile of steps (the cheapest to check),
while those chosen take less than 1/eta^2 of the run's atom-time and half its atoms. On the rungs above the lowest they
take no place of the trials that passed the cuts. While one of them leads the check rung, each rung
below keeps at least down to where that runner-up stood there (at most a half): the run's own evidence
that its cuts lose its best.
"""

from __future__ import annotations

from collections.abc import Callable

from hpcsched.schedulers.pace import Pace
from hpcsched.schedulers.rungs import Rung

MOST_KEPT = 0.5  # the largest share a rung keeps (kept.py's, where a rung tells nothing)


class RunnerUps:
    """The lowest rung's first ``budget`` runner-ups, sent on unjudged to the rung of level ``check`` (none
    when it is the lowest), and the shares of the rungs below it that the leading one asks them to keep."""

    def __init__(self, budget: int, check: int, check_steps: int, pace: Pace, keep: Callable[[int], float]):
        self.budget = budget if check > 0 else 0
        self.check = check
        self.check_steps = check_steps  # the check rung's milestone
        self._pace = pace
        pace.quick_wanted = self.budget > 0
        self._keep = keep  # the share a rung keeps, by its level
        self.trials: dict[str, None] = {}

    def goes_on(self, rung: Rung, trial_id: str, value: float) -> bool:
        """Whether ``trial_id``, which ``rung`` would pause with ``value``, goes on: a runner-up below the
        check rung, or the lowest rung's next one."""
        if trial_id in self.trials:
            return rung.level < self.check
        if rung.level != 0 or len(self.trials) >= self.budget or len(rung) < 2 * rung.eta \
                or len(self.trials) >= self._affordable(rung):
            return False
        if rung.rank(value) >= int(len(rung) * min(1.0, 2 * self._keep(0)) + 1e-9) \
                or not self._pace.steps_quickly(trial_id):
            return False
        self.trials[trial_id] = None
        self._pace.quick_wanted = len(self.trials) < self.budget
        return True

    def _affordable(self, lowest: Rung) -> float:
        """How many runner-ups' steps from the lowest rung to the check rung, at the run's median step, make
        1/eta^2 of the run's atom-time, and at most half its atoms: one is chosen while fewer were (eta on
        lstm-ptb at 2M)."""
        atoms, length = self._pace.run_atoms
        step = self._pace.run_step_time()
        if step is None or self.check_steps <= lowest.milestone or not atoms:
            return self.budget
        return min(atoms / 2, atoms * length / (lowest.eta ** 2 * (self.check_steps - lowest.milestone) * step))

    def floor(self, rung: Rung, check: Rung) -> float:
        """The share of ``rung`` (below the ``check`` rung) down to where the check rung's leader stood
        there, when a runner-up leads it over at least one other trial (else 0), at most MOST_KEPT."""
        if rung.level >= check.level or len(check) < 2:  # (a lead over no one is no evidence)
            return 0.0
        best = check.best()
        leader = next((t for t in self.trials if check.recorded.get(t, best - 1.0) >= best), None)
        value = None if leader is None else rung.recorded.get(leader)
        if value is None:
            return 0.0
        return min(MOST_KEPT, (rung.rank(value) + 1) / len(rung))
