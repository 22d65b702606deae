"""Baselines every quality table shows beside ASHA and HyperSched (DESIGN.md §8).

- ``random``: random search, first in first out: every trial trains to R (or the end of its
  curve) on ``atoms_per_trial`` atoms; a new trial starts whenever atoms are free.
- ``one_epoch`` (Egele et al. 2023, "Is one epoch all you need?"): every configuration trains
  r steps and pauses, until max(D - (R - r) * T_a, D / 2) has passed (T_a: measured seconds per
  step on the trials' atoms); then the best paused trials by their step-r score train to R,
  ``atoms / atoms_per_trial`` at a time. A trial still screening at the switch pauses at r too
  and joins that ranking (it does not keep its atoms to train on as if it had been chosen).
"""

from __future__ import annotations

import math

from hpcsched.core.mode import Mode
from hpcsched.core.records import Exited, Launched, Record, Reported, StopIntent, StopRequested
from hpcsched.schedulers.decisions import (Decision, PauseTrial, ResumeTrial, Situation, StartTrial, StopTrial,
                                           new_trials, rung_steps)
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.schedulers.sorted_scores import Ranking, RunningQuantile
from hpcsched.spec import SchedulerSpec
from hpcsched.core.state import TrialStatus, TrialView


class RandomSearch:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self._live: set[str] = set()
        self._verdicts: dict[str, Decision] = {}

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Launched):
            self._live.add(record.trial)
        elif isinstance(record, Reported):
            if record.trial in self._live and record.step >= self.spec.R:
                self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
        elif isinstance(record, (StopRequested, Exited)):
            self._live.discard(record.trial)
            self._verdicts.pop(record.trial, None)

    def decision_steps(self) -> DecisionSteps:
        return DecisionSteps()  # every trial runs to R

    def next_decision_time(self, situation: Situation) -> float:
        return math.inf  # only records change its decisions

    def decide(self, situation: Situation) -> list[Decision]:
        out: list[Decision] = list(self._verdicts.values())
        self._verdicts.clear()
        size = self.spec.atoms_per_trial
        return out + new_trials(situation.free_atoms // size, size, situation.trials_left)


class OneEpoch:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self.sign = Mode(mode).sign
        self._live: set[str] = set()
        self._verdicts: dict[str, Decision] = {}
        self._screened = Ranking()  # paused after r steps, by their step-r score
        self._pausing: dict[str, float] = {}  # asked to pause after screening -> step-r score
        self._fresh: set[str] = set()  # started from scratch, not yet screened: paused at r even after the switch
        self._step_times = RunningQuantile(0.5)
        self.screening = True

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Launched):
            self._live.add(record.trial)
            self._screened.discard(record.trial)
            if record.from_step < self.spec.r:
                self._fresh.add(record.trial)
        elif isinstance(record, Reported):
            if trial is not None and trial.step_time is not None:
                self._step_times.add(trial.step_time)
            if record.trial not in self._live:
                return
            if record.step >= self.spec.R:
                self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
            elif record.trial in self._fresh and record.step >= self.spec.r:
                # screened; one still in flight at the switch joins the ranking the best are taken from
                self._fresh.discard(record.trial)
                self._verdicts[record.trial] = PauseTrial(record.trial, f"screened at step {record.step}")
                self._pausing[record.trial] = self.sign * record.score
        elif isinstance(record, StopRequested):
            self._live.discard(record.trial)
            self._verdicts.pop(record.trial, None)
            if record.intent != StopIntent.PAUSE:
                self._pausing.pop(record.trial, None)
        elif isinstance(record, Exited):
            self._live.discard(record.trial)
            self._verdicts.pop(record.trial, None)
            score = self._pausing.pop(record.trial, None)
            if score is not None and trial is not None and trial.status == TrialStatus.PAUSED:
                self._screened.set(record.trial, score)

    def decision_steps(self) -> DecisionSteps:
        return rung_steps((self.spec.r,), self.spec.R)

    def switch_time(self, situation: Situation) -> float | None:
        """When screening ends: max(D - (R - r) * T_a, D / 2) after the start (None before T_a is measured)."""
        step_time = self._step_times.value()
        if step_time is None:
            return None
        span = situation.deadline - situation.started_at
        return situation.started_at + max(span - (self.spec.R - self.spec.r) * step_time, span / 2)

    def next_decision_time(self, situation: Situation) -> float:
        """The switch from screening to training the best, once known."""
        switch = self.switch_time(situation) if self.screening else None
        return switch if switch is not None and switch > situation.now else math.inf

    def decide(self, situation: Situation) -> list[Decision]:
        out: list[Decision] = list(self._verdicts.values())
        self._verdicts.clear()
        if self.screening:
            switch = self.switch_time(situation)
            if switch is not None and situation.now >= switch:
                self.screening = False
        free, size, left = situation.free_atoms, self.spec.atoms_per_trial, situation.trials_left
        while free >= size:
            if self.screening and (left is None or left > 0):
                out.append(StartTrial(size))
                left = None if left is None else left - 1
            elif not self.screening and (best := self._screened.best()) is not None:
                self._screened.discard(best)
                out.append(ResumeTrial(best, size))
            else:
                break
            free -= size
        return out
