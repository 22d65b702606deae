"""HyperSched (Liaw et al., SoCC 2019) as a pure policy.

Mechanisms, each a switch of SchedulerSpec so the paper's ablations are configurations:
- speculative evaluation: a first arrival at a rung continues; a trial whose recorded score
  at any passed rung falls below that rung's (1 - 1/eta) cutoff is paused (retrospective).
  ``speculative: false`` uses ASHA's rungs instead.
- entrance policy: stop starting and promoting trials once
  time_left < min(R * T_a, eta * T') (adaptive), after a fixed fraction of the deadline, or never.
- dynamic allocation: every live trial keeps one atom, spare atoms go round-robin in score
  order (uniform) or to the best trial (top_job); a trial grows only when the overhead-aware
  test H'·(T − T_o) > (1 + margin)·H·T passes under the believed scaling; T_o is a quantile of
  measured startup times. Grown trials shrink to make room while exploration still wants atoms.
- backfill (our addition, ``backfill: false`` for the paper's behaviour): after the entrance
  closed, atoms that the live trials cannot take under the allocation policy (none live, all
  at their useful maximum, or no allocation) go to promotions and new trials instead of idling;
  and when nothing runs and nothing may start, the best paused trials resume rather than the
  run ending early.
"""

from __future__ import annotations

import math

from hpcsched.records import EntranceClosed, Exited, Launched, Record, Reported, Running, StopRequested
from hpcsched.schedulers.allocation import allowed_size, target_atoms, worth_resizing
from hpcsched.schedulers.decisions import (CloseEntrance, Decision, PauseTrial, ResizeTrial, ResumeTrial,
                                           Situation, StartTrial, StopTrial)
from hpcsched.schedulers.rungs import Rung, SpeculativeBracket, TopFractionBracket
from hpcsched.schedulers.sorted_scores import Ranking, RunningQuantile
from hpcsched.spec import SchedulerSpec
from hpcsched.state import TrialView


class HyperSched:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self.sign = 1.0 if mode == "max" else -1.0
        self.bracket = (SpeculativeBracket if spec.speculative else TopFractionBracket)(spec.r, spec.R, spec.eta)
        self.scaling = spec.scaling
        self.closed = False
        self._live: dict[str, int] = {}  # launching/running trials (not stopping) -> atoms
        self._live_atoms = 0
        self._grown: set[str] = set()  # live trials holding more than one atom
        self._ranking = Ranking()  # live trials by last score
        self._verdicts: dict[str, Decision] = {}
        self._pause_rung: dict[str, Rung] = {}
        self._reported: dict[str, int] = {}  # trials that reported since the last decide -> reports since launch
        self._shrinking: set[str] = set()
        self._idle_resumed: set[str] = set()  # resumed only because nothing else could use the atoms
        self._startups = RunningQuantile(spec.startup_quantile)  # O(log n) per launch, not O(n)
        self._single_atom_step_times = RunningQuantile(0.5)  # grows with every report
        self._longest_run = 0.0
        self._caps: dict[int, int] = {}

    # ------------------------------------------------------------ observing

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Reported):
            self._on_report(record, trial)
        elif isinstance(record, Running):
            self._startups.add(record.startup)
        elif isinstance(record, Launched):
            self._live[record.trial] = len(record.atoms)
            self._live_atoms += len(record.atoms)
            self._set_grown(record.trial, len(record.atoms))
            self._shrinking.discard(record.trial)
            if trial is not None and trial.last_score is not None:
                self._ranking.set(record.trial, self.sign * trial.last_score)
            else:
                self._ranking.set(record.trial, -math.inf)
            self.bracket.unpause(record.trial)
        elif isinstance(record, StopRequested):
            self._forget_live(record.trial)
            if record.intent != "resize":  # a resized trial keeps its idle-time exemption
                self._idle_resumed.discard(record.trial)
            if record.intent == "resize" and record.atoms < (trial.atoms if trial else 0):
                self._shrinking.add(record.trial)
        elif isinstance(record, Exited):
            self._forget_live(record.trial)
            self._shrinking.discard(record.trial)
            rung = self._pause_rung.pop(record.trial, None)
            if rung is not None and trial is not None and trial.status == "paused" \
                    and (self.spec.backfill or not self.closed):
                self.bracket.pause_at(record.trial, rung)
        elif isinstance(record, EntranceClosed):
            self.closed = True

    def _on_report(self, record: Reported, trial: TrialView | None) -> None:
        if trial is not None:
            self._longest_run = max(self._longest_run, trial.run_time)
            if trial.atoms == 1 and trial.step_time is not None:
                self._single_atom_step_times.add(trial.step_time)
        if record.trial not in self._live:
            return
        score = self.sign * record.score
        self._ranking.set(record.trial, score)
        if record.step >= self.spec.R:
            self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
            return
        rung = self.bracket.evaluate(record.trial, record.step, score)
        if rung is not None and record.trial not in self._idle_resumed:
            self._pause_rung[record.trial] = rung
            self._verdicts[record.trial] = PauseTrial(record.trial, f"rung {rung.milestone}")
        else:
            self._reported[record.trial] = trial.reports_since_launch if trial else 0

    def _forget_live(self, trial_id: str) -> None:
        self._live_atoms -= self._live.pop(trial_id, 0)
        self._grown.discard(trial_id)
        self._ranking.discard(trial_id)
        self._verdicts.pop(trial_id, None)
        self._reported.pop(trial_id, None)

    def _set_grown(self, trial_id: str, atoms: int) -> None:
        if atoms > 1:
            self._grown.add(trial_id)
        else:
            self._grown.discard(trial_id)

    # ------------------------------------------------------------ estimates

    @property
    def startup_estimate(self) -> float:
        """T_o: the configured quantile of measured startup/resize times (0 when ignoring overhead)."""
        if not self.spec.overhead_aware:
            return 0.0
        measured = self._startups.value()
        if measured is None:
            return self.spec.startup_estimate or 0.0
        return measured

    def exploration_budget(self) -> float:
        """min(R * T_a, eta * T'): time a new trial would need; explore only while time_left exceeds it."""
        step_time = self._single_atom_step_times.value()
        full_run = self.spec.R * step_time if step_time is not None else math.inf
        return min(full_run, self.spec.eta * self._longest_run)

    def _entrance_should_close(self, situation: Situation) -> str | None:
        entrance = self.spec.entrance
        if entrance == "none":
            return None
        if entrance == "adaptive":
            budget = self.exploration_budget()
            if situation.time_left < budget:
                return f"time left {situation.time_left:.4g} < min(R*T_a, eta*T') = {budget:.4g}"
            return None
        spent = situation.now - situation.started_at
        if spent >= float(entrance) * (situation.deadline - situation.started_at):
            return f"explored for {entrance:g} of the deadline"
        return None

    # ------------------------------------------------------------ deciding

    def decide(self, situation: Situation) -> list[Decision]:
        out: list[Decision] = list(self._verdicts.values())
        self._verdicts.clear()
        for verdict in out:  # leaving now: not candidates for growth or shrinking
            self._reported.pop(verdict.trial_id, None)
            self._grown.discard(verdict.trial_id)
        free = situation.free_atoms
        if not self.closed:
            reason = self._entrance_should_close(situation)
            if reason is not None:
                self.closed = True
                out.append(CloseEntrance(reason))
        if situation.time_left <= self.startup_estimate:
            pass  # a trial started now would not finish starting before the deadline
        elif not self.closed:
            free = self._explore(situation, free, out)
        elif self.spec.backfill and free > 0:
            spare = free - self._growth_demand(situation.total_atoms)
            if spare > 0:
                free -= spare - self._explore(situation, spare, out, make_room=False)
        if self.spec.allocation != "none" and free > 0:
            self._grow(situation, free, out)
        if free > 0 and not self._live and not out and (self.spec.backfill or not self.closed) \
                and situation.time_left > self.startup_estimate:
            self._resume_idle(free, out)
        self._reported.clear()
        return out

    def _resume_idle(self, free: int, out: list[Decision]) -> None:
        """Nothing runs, nothing may start: rather than end early, resume the best paused trials.

        They then train on regardless of rung cutoffs (pausing them again would only idle the atoms)."""
        while free > 0:
            candidate = self.bracket.best_paused()
            if candidate is None:
                return
            self.bracket.unpause(candidate)
            self._idle_resumed.add(candidate)
            out.append(ResumeTrial(candidate, 1))
            free -= 1

    def _growth_demand(self, total: int) -> int:
        """Atoms the live trials would still take under the allocation policy (0 without one)."""
        live = len(self._live)
        if self.spec.allocation == "none" or not live:
            return 0
        cap = self._cap(total)
        if self.spec.allocation == "uniform":
            wanted = min(total, live * cap)
        else:
            wanted = min(total, live - 1 + cap)
        return max(0, wanted - self._live_atoms)

    def _explore(self, situation: Situation, free: int, out: list[Decision], make_room: bool = True) -> int:
        """Promote the best promotable trials, else start new ones, one atom each; return atoms left."""
        trials_left = situation.trials_left
        while True:
            candidate = self.bracket.best_promotable()
            can_start = trials_left is None or trials_left > 0
            if candidate is None and not can_start:
                return free
            if free < 1:
                if make_room:
                    self._make_room(situation, out)
                return free
            if candidate is not None:
                self.bracket.unpause(candidate)
                out.append(ResumeTrial(candidate, 1))
            else:
                out.append(StartTrial(1))
                trials_left = None if trials_left is None else trials_left - 1
            free -= 1

    def _make_room(self, situation: Situation, out: list[Decision]) -> None:
        """Shrink the largest grown trial by one allocation step (one shrink at a time)."""
        if self._shrinking or not self._grown:
            return
        victim = max(self._grown, key=lambda t: (self._live[t], self._ranking.rank(t)))
        current = self._live[victim]
        smaller = allowed_size(current - 1, self.spec.allocation_grid)
        out.append(ResizeTrial(victim, max(1, smaller), "make room for exploration"))
        self._shrinking.add(victim)

    def _cap(self, total: int) -> int:
        """Most atoms one trial may hold: the spec's limit, and no more than the belief finds useful."""
        if total not in self._caps:
            limit = min(self.spec.max_atoms_per_trial or total, total)
            self._caps[total] = self.scaling.best_atoms(limit)
        return self._caps[total]

    def _grow(self, situation: Situation, free: int, out: list[Decision]) -> None:
        live = len(self._live)
        if not live or not self._reported:
            return
        cap = self._cap(situation.total_atoms)
        overhead = self.startup_estimate
        for trial_id, reports in self._reported.items():
            if free <= 0:
                return
            if trial_id not in self._live or reports < self.spec.resize_cooldown:
                continue
            current = self._live[trial_id]
            target = target_atoms(self.spec.allocation, self._ranking.rank(trial_id), live,
                                  situation.total_atoms, cap)
            new = allowed_size(min(target, current + free), self.spec.allocation_grid)
            if new <= current:
                continue
            if worth_resizing(self.scaling, current, new, situation.time_left, overhead, self.spec.resize_margin):
                out.append(ResizeTrial(trial_id, new, f"grow {current}->{new} ({self.spec.allocation})"))
                free -= new - current
