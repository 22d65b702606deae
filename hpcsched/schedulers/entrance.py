"""When exploring stops (the entrance closes), from the run's own evidence or the paper's rule.

- ``deadline`` (ours): a trial started now, on one atom after a startup, would reach step ``s`` by the
  deadline; it could win only if some trial of the run was seen to score as well as the best by step
  ``s``. When none was (the best came from training longer than a newcomer still can), or no new
  trial may start at all, and the atoms can take a leader further instead (the policy's test:
  HyperSched's asks that a leader could not reach R by the deadline on its atoms and that its growth
  passes the overhead-aware test), the entrance closes. Where curves level off early (or end early) a
  trial was seen to match the best early on, so the run keeps exploring to the end.
- ``adaptive`` (the paper's): once time_left < min(R·T_a, eta·T') (T_a: seconds per step on one
  atom; T': the longest a trial has run).
- a fraction of the deadline: after that share of the run; ``none``: never.
Scores are normalised: higher is better.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import NamedTuple


class BestByStep:
    """The best score any trial reported at each step (``best``: over all steps, -inf before any), and
    the first step any trial reached a score (``best_first_at``: the first step it reached ``best``)."""

    def __init__(self) -> None:
        self._steps: list[int] = []  # the steps reported at, ascending
        self._best: dict[int, float] = {}
        self.best = -math.inf
        self.best_first_at: int | None = None

    def add(self, step: int, score: float) -> None:
        if score > self.best:
            self.best, self.best_first_at = score, step
        elif score == self.best and self.best_first_at is not None and step < self.best_first_at:
            self.best_first_at = step
        known = self._best.get(step)
        if known is None:
            bisect.insort(self._steps, step)
            self._best[step] = score
        elif score > known:
            self._best[step] = score

    def first_reaching(self, score: float) -> int | None:
        """The earliest step at which some trial reported ``score`` or better (None: none did)."""
        if score == self.best:
            return self.best_first_at  # (kept as reports come: the entrance asks at every decide)
        for step in self._steps:
            if self._best[step] >= score:
                return step
        return None


class Moment(NamedTuple):
    """What the entrance rules read: the run's clock, its best score and its measured pace (a named
    tuple: one is made at every decision)."""

    now: float
    started_at: float
    deadline: float
    best: float  # -inf before any report
    step_time: float | None  # the run's median seconds per step on one atom (None before any)
    startup: float  # seconds a launch takes (measured, at the configured quantile)
    rate_one: float  # the believed speed of one atom (scaling.rate(1))
    longest_run: float  # the longest a trial has run so far (T')
    trials_left: int | None = None  # new trials that may still start (None: unlimited)

    @property
    def time_left(self) -> float:
        return self.deadline - self.now


class Entrance:
    """The spec's entrance rule (``deadline`` | ``adaptive`` | ``none`` | a fraction of the deadline)."""

    def __init__(self, kind: str | float, R: int, eta: float, by_step: BestByStep):
        self.kind = kind
        self.R = R
        self.eta = eta
        self.by_step = by_step

    def close_reason(self, m: Moment, can_speed_up: Callable[[], bool]) -> str | None:
        """Why exploring stops now (None: it goes on). ``can_speed_up()``: the atoms can take a leader
        further by the deadline (asked only when the rest holds)."""
        if self.kind == "none":
            return None
        if self.kind == "deadline":
            if m.trials_left == 0:
                return "no new trial is left to start; the leaders grow instead" if can_speed_up() else None
            match = self._first_match(m)
            if match is None or m.time_left >= self._time_to_reach(m, match) or not can_speed_up():
                return None
            return (f"a trial started now reaches step {self._reach(m):.0f} by the deadline; none reported the best "
                    f"score before step {match}; the leaders grow instead")
        if self.kind == "adaptive":
            budget = self.exploration_budget(m)
            return f"time left {m.time_left:.4g} < min(R*T_a, eta*T') = {budget:.4g}" if m.time_left < budget else None
        if m.now - m.started_at >= float(self.kind) * (m.deadline - m.started_at):
            return f"explored for {float(self.kind):g} of the deadline"
        return None

    def next_time(self, m: Moment) -> float:
        """When ``close_reason`` would hold as things stand, if no record comes first (math.inf: not by time)."""
        if self.kind == "none":
            return math.inf
        if self.kind == "deadline":
            match = self._first_match(m)
            return math.inf if match is None else m.deadline - self._time_to_reach(m, match)
        if self.kind == "adaptive":
            return m.deadline - self.exploration_budget(m)
        return m.started_at + float(self.kind) * (m.deadline - m.started_at)

    def exploration_budget(self, m: Moment) -> float:
        """min(R * T_a, eta * T'): the time a new trial would need (the paper's entrance rule)."""
        full_run = self.R * m.step_time if m.step_time is not None else math.inf
        return min(full_run, self.eta * m.longest_run)

    def _first_match(self, m: Moment) -> int | None:
        """The earliest step at which a trial matched the best (None before a step was timed)."""
        if m.step_time is None or not math.isfinite(m.best):
            return None
        return self.by_step.first_reaching(m.best)

    def _time_to_reach(self, m: Moment, step: int) -> float:
        """Seconds a new trial needs to report ``step`` on one atom (a startup first)."""
        return m.startup + step * (m.step_time or 0.0) / m.rate_one

    def _reach(self, m: Moment) -> float:
        return max(0.0, m.time_left - m.startup) * m.rate_one / (m.step_time or math.inf)
