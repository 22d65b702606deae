"""ASHA, promotion variant (Li et al., MLSys 2020), as a pure policy.

At each rung a trial continues only if it is in the top 1/eta of the scores recorded
there so far, otherwise it is paused. Whenever atoms are free, the best promotable paused
trial (rungs in descending order) is resumed, else a new trial is started. Every trial runs
on ``atoms_per_trial`` atoms; nothing is resized; exploration never stops.
"""

from __future__ import annotations

import math

from hpcsched.core.mode import Mode
from hpcsched.core.records import Exited, Launched, Record, Reported, StopRequested, TrialCreated
from hpcsched.schedulers.decisions import (Decision, PauseTrial, ResumeTrial, Situation, StartTrial, StopTrial,
                                           rung_steps)
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.schedulers.rungs import Rung, TopFractionBracket, milestones
from hpcsched.spec import SchedulerSpec
from hpcsched.core.state import TrialStatus, TrialView


class ASHA:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self.sign = Mode(mode).sign
        self.bracket = TopFractionBracket(spec.r, spec.R, spec.eta)
        self._live: set[str] = set()
        self._verdicts: dict[str, Decision] = {}
        self._pause_rung: dict[str, Rung] = {}

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Reported):
            if record.trial not in self._live:
                return
            if record.step >= self.spec.R:
                self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
                return
            rung = self.bracket.evaluate(record.trial, record.step, self.sign * record.score)
            if rung is not None:
                self._pause_rung[record.trial] = rung
                self._verdicts[record.trial] = PauseTrial(record.trial, f"rung {rung.milestone}")
        elif isinstance(record, Launched):
            self._live.add(record.trial)
            self.bracket.unpause(record.trial)
        elif isinstance(record, TrialCreated) and record.from_model:
            self.bracket.from_model.add(record.trial)
        elif isinstance(record, StopRequested):
            self._live.discard(record.trial)
            self._verdicts.pop(record.trial, None)
        elif isinstance(record, Exited):
            self._live.discard(record.trial)
            self._verdicts.pop(record.trial, None)
            rung = self._pause_rung.pop(record.trial, None)
            if rung is not None and trial is not None and trial.status == TrialStatus.PAUSED:
                self.bracket.pause_at(record.trial, rung)

    def decision_steps(self) -> DecisionSteps:
        return rung_steps(milestones(self.spec.r, self.spec.R, self.spec.eta), self.spec.R)

    def next_decision_time(self, situation: Situation) -> float:
        return math.inf  # only records change its decisions

    def decide(self, situation: Situation) -> list[Decision]:
        out: list[Decision] = list(self._verdicts.values())
        self._verdicts.clear()
        free = situation.free_atoms
        size = self.spec.atoms_per_trial
        trials_left = situation.trials_left
        while free >= size:
            candidate = self.bracket.best_promotable()
            if candidate is not None:
                self.bracket.unpause(candidate)
                out.append(ResumeTrial(candidate, size))
            elif trials_left is None or trials_left > 0:
                out.append(StartTrial(size))
                trials_left = None if trials_left is None else trials_left - 1
            else:
                break
            free -= size
        return out
