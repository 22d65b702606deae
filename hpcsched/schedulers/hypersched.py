"""HyperSched (Liaw et al., SoCC 2019) as a pure policy that follows each run's own evidence.

ASHA's rungs and promotions, ranked by what each trial's curve foretells (schedulers/forecast.py), with kept fractions
that follow the run (kept.py, runner_ups.py); a rung pauses a trial only for something better; no atom idles; the
entrance (entrance.py) closes when exploring can no longer win and a leader's growth takes it further; after the close
paused trials standing above live ones swap in and the leaders grow, the lowest-standing yielding their atoms.
docs/ARCHITECTURE.md, "Deadline-aware search", states each rule and what it earns. A trial *stands* higher than another
when it reached a higher rung, or the same rung with a better value there. Scores are normalised: higher is better.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterator

from hpcsched.core.mode import Mode
from hpcsched.core.records import (EntranceClosed, Exited, Launched, Record, Reported, Running, StopIntent,
                                   StopRequested, TrialCreated)
from hpcsched.schedulers.allocation import allowed_size, worth_resizing
from hpcsched.schedulers.decisions import (CloseEntrance, Decision, PauseTrial, ResizeTrial, ResumeTrial, Situation,
                                           StartTrial, StopTrial, rung_steps)
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.schedulers.entrance import BestByStep, Entrance, Moment
from hpcsched.schedulers.forecast import Forecast
from hpcsched.schedulers.kept import KeptFractions
from hpcsched.schedulers.live import LiveTrials
from hpcsched.schedulers.pace import Pace
from hpcsched.schedulers.rungs import Rung, SpeculativeBracket, TopFractionBracket, milestones
from hpcsched.spec import SchedulerSpec
from hpcsched.core.state import TrialStatus, TrialView

NO_STANDING = (-1.0, -math.inf)  # a trial below the first rung, before its first report


class HyperSched:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self.sign = Mode(mode).sign
        self.scaling = spec.scaling
        self._rate_one = spec.scaling.rate(1)
        self.marks = milestones(spec.r, spec.R, spec.eta)
        self.levels = len(self.marks)
        self.kept = KeptFractions(self.levels, spec.eta, self._rung)
        quantile = self.kept.quantile if spec.rung_trust == "learned" else None
        kind = SpeculativeBracket if spec.speculative else TopFractionBracket
        self.bracket = kind(spec.r, spec.R, spec.eta, quantile, tally=self.kept.tally)
        self.pace = Pace(spec.startup_quantile, spec.scaling)
        if quantile is not None and spec.runner_ups and isinstance(self.bracket, TopFractionBracket):
            self.bracket.runner_ups = self.kept.check_cuts(self.pace, spec.R)
        self.forecast = Forecast(self.marks, spec.R, self._rescore)
        self._forecasting = spec.rung_value == "forecast"
        self.bracket.value = self.forecast.rung_value if self._forecasting else None
        self.by_step = BestByStep()
        self.entrance = Entrance(spec.entrance, spec.R, spec.eta, self.by_step)
        self.live = LiveTrials()  # ranked by standing
        self.closed = False
        self._verdicts: dict[str, PauseTrial | StopTrial] = {}  # on a live trial's own report
        self._pause_rung: dict[str, Rung] = {}
        self._standing: dict[str, tuple[float, float]] = {}  # (highest rung level recorded, its value there)
        self._resizing: set[str] = set()  # trials stopping to relaunch on another number of atoms
        self._swapping: dict[str, str] = {}  # live trial paused to make room -> the paused trial it makes room for
        self._caps: dict[int, int] = {}
        self._running_since: dict[str, float] = {}  # when each trial's current launch started training
        self._below_rungs: dict[str, None] = {}  # paused trials that recorded no rung score, in pause order

    # ------------------------------------------------------------ observing

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Reported):
            self._on_report(record, trial)
        elif isinstance(record, Running):
            self.pace.add_startup(record.startup)
            self._running_since[record.trial] = record.t
        elif isinstance(record, Launched):
            self.live.launched(record.trial, len(record.atoms), self._standing.get(record.trial, NO_STANDING))
            self._below_rungs.pop(record.trial, None)
            self._resizing.discard(record.trial)
            self.bracket.unpause(record.trial)
        elif isinstance(record, StopRequested):
            resize = record.intent == StopIntent.RESIZE
            if resize:
                self._resizing.add(record.trial)
            self.live.stop_requested(record.trial, record.t, resize,
                                     shrink=resize and record.atoms < (trial.atoms if trial else 0))
            self._verdicts.pop(record.trial, None)
        elif isinstance(record, Exited):
            self._on_exit(record, trial)
        elif isinstance(record, EntranceClosed):
            self.closed = True
        elif isinstance(record, TrialCreated) and record.from_model:
            self.bracket.from_model.add(record.trial)

    def _on_report(self, record: Reported, trial: TrialView | None) -> None:
        self.live.reported_at(record.trial, record.t)
        if trial is not None:
            self.pace.add_report(record.trial, record.step, record.t, trial.run_time, trial.atoms, trial.step_time)
        score = self.sign * record.score
        self.by_step.add(record.step, score)
        if self._forecasting:
            self.forecast.observe(record.trial, record.step, score)
        live = record.trial in self.live.atoms
        if record.step >= self.spec.R:
            self.kept.finished(record.trial, score)
            if live:
                self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
            return
        if not live and record.trial not in self.live.stopping:
            return
        rung = self._record(record.trial, record.step, score)
        if record.trial not in self._standing or self._standing[record.trial][0] < 0:
            self._standing[record.trial] = (-1.0, score)  # below the first rung: by its last score
        if live:
            self.live.scored(record.trial, self._standing.get(record.trial, NO_STANDING),
                             trial.reports_since_launch if trial else 0)
            trained = record.t - self._running_since.get(record.trial, record.t)
            if rung is not None and trained >= self.startup_estimate:
                # (a trial that trained less than a startup since its launch is not paused: replacing it
                # would cost more than its rung score did)
                self._pause_rung[record.trial] = rung
                self._verdicts[record.trial] = PauseTrial(record.trial, f"rung {rung.milestone}")

    def _record(self, trial_id: str, step: int, score: float) -> Rung | None:
        """Let the rungs record the report; file the trial's standing; return the rung that pauses it."""
        rung = self.bracket.evaluate(trial_id, step, score)
        stood = int(self._standing.get(trial_id, NO_STANDING)[0])
        if stood + 1 >= self.levels or step < self.marks[stood + 1]:
            return rung  # (no rung above the one it stood at could have recorded it: most reports)
        for level in range(self.levels - 1, stood, -1):  # the highest rung that recorded it, above that one
            recorded = self._rung(level).recorded.get(trial_id)
            if recorded is not None:
                self._standing[trial_id] = (float(level), recorded)
                break
        return rung

    def _on_exit(self, record: Exited, trial: TrialView | None) -> None:
        asked = self.live.exited(record.trial)
        self.live.yielded(record.trial)
        if asked is not None:
            self.pace.add_stop(record.t - asked)
        self._verdicts.pop(record.trial, None)
        rung = self._pause_rung.pop(record.trial, None)
        if trial is not None and trial.status == TrialStatus.COMPLETED and trial.last_score is not None:
            self.kept.finished(record.trial, self.sign * trial.last_score)  # (its curve ended before R)
        if trial is None or trial.status != TrialStatus.PAUSED:  # done: completed, stopped, errored
            self._resizing.discard(record.trial)  # (a resize that ended the trial instead)
            self.pace.forget(record.trial)
            return
        level = int(self._standing.get(record.trial, NO_STANDING)[0])
        if rung is None and level >= 0 and record.trial not in self.bracket.paused_at:
            rung = self._rung(level)  # paused off a rung (to yield, at a deadline): filed where it stands
        if rung is not None:
            self.bracket.pause_at(record.trial, rung)
        elif level < 0:
            self._below_rungs[record.trial] = None  # paused before its first rung: resumed when nothing else is

    def _rescore(self, level: int) -> None:
        """The forecast of ``level`` changed: its rung, and the standing of the trials that stand there."""
        rung = self._rung(level)
        rung.rescore(self.forecast.values(level, list(rung.recorded)))
        for trial_id, value in rung.recorded.items():
            if self._standing.get(trial_id, NO_STANDING)[0] == level:
                self._standing[trial_id] = standing = (float(level), value)
                if trial_id in self.live.atoms:
                    self.live.scored(trial_id, standing, self.live.since_launch[trial_id])

    def _rung(self, level: int) -> Rung:
        return self.bracket.rungs[self.levels - 1 - level]

    # ------------------------------------------------------------ estimates

    @property
    def startup_estimate(self) -> float:
        """T_o's startup: the configured quantile of measured startups (0 when ignoring overhead)."""
        if not self.spec.overhead_aware:
            return 0.0
        measured = self.pace.startup()
        return measured if measured is not None else (self.spec.startup_estimate or 0.0)

    @property
    def resize_overhead(self) -> float:
        """What a resize costs a trial: a stop and a startup (0 when ignoring overhead)."""
        return (self.pace.stop() or 0.0) + self.startup_estimate if self.spec.overhead_aware else 0.0

    def _moment(self, situation: Situation) -> Moment:
        return Moment(situation.now, situation.started_at, situation.deadline, self.by_step.best,
                      self.pace.run_step_time(), self.startup_estimate, self._rate_one, self.pace.longest_run,
                      situation.trials_left)

    def _first_report_in(self) -> float:
        """Seconds from a launch to its first report: a startup and one step on one atom."""
        return self.startup_estimate + (self.pace.run_step_time() or 0.0) / self._rate_one

    def _cap(self, total: int) -> int:
        """Most atoms one trial may hold: the spec's limit, and no more than the belief finds useful."""
        if total not in self._caps:
            limit = min(self.spec.max_atoms_per_trial or total, total)
            self._caps[total] = self.scaling.best_atoms(limit)
        return self._caps[total]

    def worth_growing(self, trial_id: str, new: int, time_left: float) -> bool:
        """The overhead-aware test for ``trial_id`` on ``new`` atoms, over the time until the deadline or
        until it would reach R on its atoms (after R its atoms are free again: a resize then only costs)."""
        horizon = min(time_left, self.pace.time_to(trial_id, self.spec.R, self.live.atoms[trial_id]))
        return worth_resizing(self.scaling, self.live.atoms[trial_id], new, horizon, self.resize_overhead,
                              self.spec.resize_margin)

    def grower(self, situation: Situation, exclude: Container[str] = frozenset(),
               planned: dict[str, int] | None = None) -> str | None:
        """The live trial that takes the next free atom (``uniform``: the best-standing of those holding
        the fewest atoms, ``planned`` counting atoms already promised; ``top_job``: the best-standing
        that can take one), if past its cooldown, stepping, and its growth by one atom passes the test."""
        pick = self._next_in_line(situation, exclude, planned)
        if pick is None or self.live.since_launch.get(pick[0], 0) < self.spec.resize_cooldown \
                or not self.pace.stepping(pick[0], situation.now, self.live.atoms.get(pick[0], 1)):
            return None
        grown = allowed_size(int(pick[1]) + 1, self.spec.allocation_grid)
        return pick[0] if self.worth_growing(pick[0], grown, situation.time_left) else None

    def _next_in_line(self, situation: Situation, exclude: Container[str] = frozenset(),
                      planned: dict[str, int] | None = None) -> tuple[str, int] | None:
        """``grower``'s candidate and the atoms it holds, before the rest is tested."""
        if self.spec.allocation == "none":
            return None
        return self.live.best_below(self._cap(situation.total_atoms), exclude, planned or {},
                                    fewest_first=self.spec.allocation != "top_job")

    def _leaders_grow(self, situation: Situation) -> bool:
        """The entrance's "the leaders grow instead": the live trial that would take the next atom would
        not reach R by the deadline on its atoms, stands above every paused trial, and grows (cheap tests first)."""
        pick = self._next_in_line(situation)
        if pick is None or self.pace.time_to(pick[0], self.spec.R, pick[1]) <= situation.time_left:
            return False
        paused = self.bracket.best_paused()
        return (paused is None or not self._stands_above(paused, pick[0])) and self.grower(situation) is not None

    def _stands_above(self, trial_id: str, other: str) -> bool:
        """Whether ``trial_id`` reached a higher rung than ``other``, or the same with a better score there."""
        return self._standing.get(trial_id, NO_STANDING) > self._standing.get(other, NO_STANDING)

    # ------------------------------------------------------------ deciding

    def decision_steps(self) -> DecisionSteps:
        """Speculative evaluation may pause a trial at any report; the rungs' own only at rungs."""
        if self.spec.speculative:
            return DecisionSteps(every_step=True)
        return rung_steps(self.marks, self.spec.R)

    def next_decision_time(self, situation: Situation) -> float:
        """When the entrance would close with no new record (a real controller decides at every poll)."""
        when = math.inf if self.closed else self.entrance.next_time(self._moment(situation))
        return when + 1e-6 if when > situation.now else math.inf

    def decide(self, situation: Situation) -> list[Decision]:
        out: list[Decision] = []
        self.pace.run_atoms = (situation.total_atoms, situation.deadline - situation.started_at)  # (runner_ups.py)
        if not self.closed:
            reason = self.entrance.close_reason(self._moment(situation), lambda: self._leaders_grow(situation))
            if reason is not None:
                self.closed = True
                out.append(CloseEntrance(reason))
        if not self.closed and situation.free_atoms <= 0 and not self._verdicts and not self.live.freed:
            return out  # (nothing to explore with, and no one to pause)
        in_time = situation.time_left > self._first_report_in()  # a launch now would still report a step
        can_start = in_time and not self.closed and (situation.trials_left is None or situation.trials_left > 0)
        # a rung pauses a trial only for a new trial or a promotion; after the close, trials leave only to
        # yield their atoms to a leader's growth (below)
        better = can_start or (in_time and not self.closed and self.bracket.best_promotable() is not None)
        for trial_id, verdict in self._verdicts.items():
            if isinstance(verdict, PauseTrial) and not better:
                self._pause_rung.pop(trial_id, None)  # nothing better would take its atom: it trains on
                continue
            out.append(verdict)
        self._verdicts.clear()
        leaving = {d.trial_id for d in out if isinstance(d, (PauseTrial, StopTrial))}
        free = situation.free_atoms
        left = situation.trials_left
        while free > 0 and in_time and not self.closed:  # explore
            candidate = self.bracket.best_promotable()
            if candidate is not None:
                self.bracket.unpause(candidate)
                out.append(ResumeTrial(candidate, 1))
            elif can_start and (left is None or left > 0):
                out.append(StartTrial(1))
                left = None if left is None else left - 1
            else:
                break
            free -= 1
        planned = self._keep_promises(situation, free, leaving)
        free -= sum(planned[t] - self.live.atoms[t] for t in planned)
        if self.closed and in_time:
            free = self._swap_in(out, free, leaving, protected=set(planned))
        for trial_id, new in self._grow(situation, free, leaving | set(planned)).items():
            planned[trial_id] = new
            free -= new - self.live.atoms[trial_id]
        for trial_id, new in planned.items():
            current = self.live.atoms[trial_id]
            out.append(ResizeTrial(trial_id, new, f"grow {current}->{new} ({self.spec.allocation})"))
        if self.closed and free == 0 and not self._swapping:
            self._yield(situation, out, leaving, set(planned))
        while free > 0 and in_time:  # no atom idles: the best paused trial
            paused = self.bracket.best_paused() or next(iter(self._below_rungs), None)
            if paused is None:
                break
            self.bracket.unpause(paused)
            self._below_rungs.pop(paused, None)
            out.append(ResumeTrial(paused, 1))
            free -= 1
        return out

    def _keep_promises(self, situation: Situation, free: int, leaving: set[str]) -> dict[str, int]:
        """The atoms that trials yielding to a leader freed go to that leader (while it is live, not leaving
        and not resized already), so that no other use takes them first."""
        planned: dict[str, int] = {}
        for leader, count in self.live.freed.items():
            if free <= 0 or leader not in self.live.atoms or leader in leaving or leader in self._resizing:
                continue
            current = self.live.atoms[leader]
            new = allowed_size(current + min(count, free), self.spec.allocation_grid)
            if new > current:
                planned[leader] = new
                free -= new - current
        self.live.freed.clear()
        return planned

    def _swap_in(self, out: list[Decision], free: int, leaving: set[str], protected: set[str]) -> int:
        """After the close, the best paused trial takes the place of a live one standing below it: a free
        atom at once, else the lowest-standing live trial on one atom gives it up (one swap at a time)."""
        self._swapping = {t: p for t, p in self._swapping.items() if t in self.live.stopping}
        while (paused := self.bracket.best_paused()) is not None and paused not in self._swapping.values():
            lowest = next((t for t, _ in self.live.settled_single.worst_first()
                           if t not in leaving and t not in protected), None)
            if lowest is not None and not self._stands_above(paused, lowest):
                break
            if free > 0:
                self.bracket.unpause(paused)
                out.append(ResumeTrial(paused, 1))
                free -= 1
                continue
            if lowest is not None and not self._swapping:
                out.append(PauseTrial(lowest, f"make room for {paused}"))
                self._swapping[lowest] = paused
                leaving.add(lowest)
            break
        return free

    def _grow(self, situation: Situation, free: int, leaving: set[str]) -> dict[str, int]:
        """New sizes for the live trials that take ``free`` atoms: ``top_job`` the best-standing as many as
        its growth pays for, ``uniform`` one at a time in turn (fewest atoms first, then standing)."""
        planned: dict[str, int] = {}
        exclude = leaving | self._resizing
        while free > 0 and (chosen := self.grower(situation, exclude, planned)) is not None:
            current = planned.get(chosen, self.live.atoms[chosen])
            new = allowed_size(current + (free if self.spec.allocation == "top_job" else 1),
                               self.spec.allocation_grid)
            while new > current + 1 and not self.worth_growing(chosen, new, situation.time_left):
                new = allowed_size(new - 1, self.spec.allocation_grid)
            if new <= current:
                break
            planned[chosen] = new
            free -= new - current
            if self.spec.allocation == "top_job":
                exclude = exclude | {chosen}
        return planned

    def _yield(self, situation: Situation, out: list[Decision], leaving: set[str], growing: set[str]) -> None:
        """No atom is free: the lowest-standing live trials on one atom give theirs to the leaders whose
        growth passes the overhead-aware test (``top_job``: the best-standing, by as many atoms as its
        growth pays for; ``uniform``: each leader in turn by one), a victim always standing below its
        leader; a leader already being given atoms, or resized, waits for them."""
        if self.spec.allocation == "top_job" and (self.live.awaited or self._resizing or growing):
            return  # the best is being given atoms already
        waiting = self._resizing | growing  # (and the leaders awaiting atoms, in no yieldable ranking)
        exclude = leaving | waiting | self.live.awaited.keys()
        victims = (t for t, _ in self.live.yieldable.worst_first()  # (one that has not reported since its
                   if t not in leaving and t not in waiting)  # launch keeps its atom)
        given = list(self._pairs(situation, leaving, exclude, victims))
        self.live.give(given)  # (after the scan of the ranking it changes)
        out.extend(PauseTrial(victim, f"atoms to {leader}") for victim, leader in given)

    def _pairs(self, situation: Situation, leaving: set[str], exclude: set[str],
               victims: Iterator[str]) -> Iterator[tuple[str, str]]:
        """_yield's (victim, leader) pairs, each leader by ``grower`` (asked first: most calls find none)."""
        victim: str | None = None
        while (leader := self.grower(situation, exclude)) is not None:
            victim = victim or next(victims, None)
            if victim is None:
                return
            exclude.add(leader)
            current = self.live.atoms[leader]
            wanted = allowed_size(current + 1, self.spec.allocation_grid)
            if self.spec.allocation == "top_job":
                while wanted < self._cap(situation.total_atoms) and self.worth_growing(
                        leader, allowed_size(wanted + 1, self.spec.allocation_grid), situation.time_left):
                    wanted = allowed_size(wanted + 1, self.spec.allocation_grid)
            for _ in range(wanted - current):
                if victim is None or self.live.ranking.rank(victim) <= self.live.ranking.rank(leader):
                    return
                yield victim, leader
                leaving.add(victim)
                exclude.add(victim)
                victim = next(victims, None)
            if self.spec.allocation == "top_job":
                return
