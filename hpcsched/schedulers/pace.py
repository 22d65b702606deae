"""How long things take in this run, as measured: startups, stops and steps, and where each trial is.

Step times are kept as on one atom (a trial on ``a`` atoms steps ``rate(a) / rate(1)`` times
faster under the scheduler's scaling belief): per trial, the median of its last few (configurations
differ in cost: width, batch size), and over the run, the median of every step timed on one atom
(for a trial that has not stepped yet) and its lower quartile (a trial that steps quickly). Startups
and stops are read at a configured quantile.
"""

from __future__ import annotations

import math

from hpcsched.core.scaling import Scaling
from hpcsched.schedulers.sorted_scores import RunningQuantile

OWN_STEP_TIMES = 8  # a trial's step time: the median of its last this many measurements
QUICK = 0.25  # the quantile of the run's step times below which a trial steps quickly


class Pace:
    """Measured startups, stops and step times of one run (``quantile`` for startups and stops)."""

    def __init__(self, quantile: float, scaling: Scaling):
        self._scaling = scaling
        self._startups = RunningQuantile(quantile)  # O(log n) per launch, not O(n)
        self._stops = RunningQuantile(quantile)  # from the request (or a report after it) to the exit
        self._run_step_times = RunningQuantile(0.5)  # steps timed on one atom; grows with every report
        self._quick_steps = RunningQuantile(QUICK)  # the same steps' lower quartile, while asked for:
        self.quick_wanted = False  # (a runner-up is still to be chosen: runner_ups.py)
        self.run_atoms = (0, math.inf)  # the run's atoms and its length in seconds (set by the policy)
        self._own: dict[str, list[float]] = {}
        self._own_median: dict[str, float] = {}  # (of _own: asked at most decisions, changed at reports)
        self._furthest: dict[str, int] = {}  # the furthest step each trial reported
        self._last_report: dict[str, float] = {}
        self.longest_run = 0.0  # the longest a trial has run so far (T' of the paper's entrance rule)

    def add_startup(self, seconds: float) -> None:
        self._startups.add(seconds)

    def add_stop(self, seconds: float) -> None:
        self._stops.add(max(0.0, seconds))

    def add_report(self, trial_id: str, step: int, t: float, run_time: float, atoms: int,
                   step_time: float | None) -> None:
        """A report of ``step`` at time ``t`` by ``trial_id``, which has run ``run_time`` seconds and
        stepped in ``step_time`` seconds on ``atoms`` atoms (None: not timed)."""
        if step > self._furthest.get(trial_id, 0):
            self._furthest[trial_id] = step
        self._last_report[trial_id] = t
        if run_time > self.longest_run:
            self.longest_run = run_time
        if step_time is None or atoms < 1:
            return
        if atoms == 1:
            self._run_step_times.add(step_time)
            if self.quick_wanted:
                self._quick_steps.add(step_time)
        recent = self._own.setdefault(trial_id, [])
        recent.append(step_time if atoms == 1 else step_time * self._scaling.rate(atoms) / self._scaling.rate(1))
        if len(recent) > OWN_STEP_TIMES:
            del recent[0]
        self._own_median.pop(trial_id, None)

    def forget(self, trial_id: str) -> None:
        self._own.pop(trial_id, None)
        self._own_median.pop(trial_id, None)
        self._furthest.pop(trial_id, None)
        self._last_report.pop(trial_id, None)

    def time_to(self, trial_id: str, step: int, atoms: int) -> float:
        """Seconds ``trial_id`` needs on ``atoms`` atoms to reach ``step`` at its pace (inf before a step was timed)."""
        step_time = self.step_time(trial_id)
        if step_time is None or step_time <= 0:
            return math.inf
        return max(0, step - self._furthest.get(trial_id, 0)) * step_time / self._scaling.rate(atoms)

    def stepping(self, trial_id: str, now: float, atoms: int) -> bool:
        """Whether ``trial_id`` on ``atoms`` atoms reported within two of its steps (a trial gone silent
        does not grow)."""
        step_time = self.step_time(trial_id)
        if step_time is None or step_time <= 0:
            return True
        return now - self._last_report.get(trial_id, now) <= 2 * step_time / self._scaling.rate(atoms)

    def startup(self) -> float | None:
        """A startup (or resize) at the quantile; None before any was measured."""
        return self._startups.value()

    def stop(self) -> float | None:
        """A stop at the quantile; None before any was measured."""
        return self._stops.value()

    def run_step_time(self) -> float | None:
        """The run's median step time on one atom; None before any step was timed on one atom."""
        return self._run_step_times.value()

    def steps_quickly(self, trial_id: str) -> bool:
        """Whether ``trial_id`` steps (as on one atom) no slower than the lower quartile of the run's steps
        timed on one atom while ``quick_wanted`` (True where either is not measured yet)."""
        own, quick = self.own_step_time(trial_id), self._quick_steps.value()
        return own is None or quick is None or own <= quick

    def own_step_time(self, trial_id: str) -> float | None:
        """``trial_id``'s step time as on one atom: the median of its last measurements (None before any)."""
        known = self._own_median.get(trial_id)
        if known is not None:
            return known
        recent = self._own.get(trial_id)
        if not recent:
            return None
        ordered = sorted(recent)  # (statistics.median's arithmetic, without its overhead)
        middle = len(ordered) // 2
        known = self._own_median[trial_id] = ordered[middle] if len(ordered) % 2 else \
            (ordered[middle - 1] + ordered[middle]) / 2
        return known

    def step_time(self, trial_id: str | None) -> float | None:
        """A trial's step time as on one atom: its own where measured, else the run's median (None:
        a trial started now; None before any step was timed)."""
        own = self.own_step_time(trial_id) if trial_id is not None else None
        return own or self.run_step_time()
