"""HyperSched (Liaw et al., SoCC 2019) as a pure policy.

Mechanisms, each a switch of SchedulerSpec so the paper's ablations are configurations:
- speculative evaluation (``speculative: true``, the paper's): a first arrival at a rung
  continues; a trial whose recorded score at any passed rung falls below that rung's
  (1 - 1/eta) cutoff is paused (retrospective). The default uses ASHA's rungs instead.
- rung trust (``rung_trust: learned``, our addition; ``fixed`` is the paper): a rung's cutoff
  quantile is (1 - 1/eta) times the trust learned online in how well that rung's ranking predicts
  the end (schedulers/trust.py); ``retrospective: current`` compares a trial on the highest rung
  it passed, ``all`` (the paper) on every rung.
- entrance policy: ``deadline`` (our addition, schedulers/finish.py) stops exploring when the
  best candidates would no longer reach R by the deadline (or at once when none can);
  ``adaptive`` (the paper) once time_left < min(R * T_a, eta * T'); a fixed fraction; or never.
- after the entrance closed, ``after_close: finish`` (our addition) pauses nothing at rungs,
  swaps paused finalists in for live trials that rank below them (one live trial per finalist,
  and only for a finalist that still reaches R), pauses a partial run below a finalist that reaches
  R only if it grows (``_yield_to_growth``), and gives free atoms to growth, then to the best
  paused candidates, then (backfill) to new trials while a new trial could still beat the best
  score so far (``_exploring_futile``); ``paper`` keeps the rung cutoffs and only backfills.
- could it still win (our addition, ASHA's rungs): a trial inside a rung's kept fraction is still
  paused, and never promoted, when its rung score plus the largest gain any trial was seen to make
  from that rung to its best score by R cannot reach the best score so far; promotions go to the
  paused trial standing highest within its own rung.
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

from hpcsched.mode import Mode
from hpcsched.records import EntranceClosed, Exited, Launched, Record, Reported, Running, StopIntent, StopRequested
from hpcsched.schedulers.allocation import allowed_size, target_atoms, worth_resizing
from hpcsched.schedulers.decisions import (CloseEntrance, Decision, DecisionSteps, PauseTrial, ResizeTrial,
                                           ResumeTrial, Situation, StartTrial, StopTrial, new_trials, rung_steps)
from hpcsched.schedulers.candidates import NO_LEVEL, Candidates
from hpcsched.schedulers.finish import Candidate, FinishPlan, finish_time, plan_finish
from hpcsched.schedulers.gains import GainBounds
from hpcsched.schedulers.live import LiveTrials
from hpcsched.schedulers.pace import Pace
from hpcsched.schedulers.rungs import Rung, SpeculativeBracket, TopFractionBracket, milestones
from hpcsched.schedulers.trust import RungTrust
from hpcsched.spec import SchedulerSpec
from hpcsched.state import TrialStatus, TrialView

CLOCK_EPSILON = 1e-6  # a timed wake lands this far past the moment a rule turns (float rounding)
TRUST_FULL = 0.5  # rung trust from which a rung pauses as many as successive halving does
NAMED_FINALISTS = 4  # a close reason names this many finalists at most


def _named(trial_ids: tuple[str, ...]) -> str:
    """`` (t0003, t0007)``: the finalists a close reason names (new trials have no name yet)."""
    if not trial_ids:
        return ""
    more = ", ..." if len(trial_ids) > NAMED_FINALISTS else ""
    return f" ({', '.join(trial_ids[:NAMED_FINALISTS])}{more})"


class HyperSched:
    def __init__(self, spec: SchedulerSpec, mode: str = "max"):
        self.spec = spec
        self.sign = Mode(mode).sign
        levels = len(milestones(spec.r, spec.R, spec.eta))
        self.trust = RungTrust(levels)
        quantile = self._cutoff_quantile if spec.rung_trust == "learned" else None
        self.bracket: SpeculativeBracket | TopFractionBracket
        if spec.speculative:
            self.bracket = SpeculativeBracket(spec.r, spec.R, spec.eta, quantile,
                                              current_only=spec.retrospective == "current")
        else:
            self.bracket = TopFractionBracket(spec.r, spec.R, spec.eta, quantile, futile=self._cannot_win,
                                              by_standing=True)
        self._levels = levels
        self.candidates = Candidates(levels, lambda level: self._rung(level).recorded)
        self.scaling = spec.scaling
        self.closed = False
        self.live = LiveTrials()  # the trials that hold atoms, and those asked to stop
        self._verdicts: dict[str, PauseTrial | StopTrial] = {}  # on a trial's own report
        self._pause_rung: dict[str, Rung] = {}
        self._reported: dict[str, None] = {}  # live trials that reported since the last decide, in order
        self._finalists: set[str] = set()  # after the entrance closed: trials the plan trains to R
        self._share = 1.0  # finalists per atom's worth, fixed when the entrance closes
        self._idle_resumed: set[str] = set()  # resumed only because nothing else could use the atoms
        self.pace = Pace(spec.startup_quantile, spec.scaling)  # measured startups, stops and step times
        self._caps: dict[int, int] = {}
        self._best = -math.inf  # best (normalised) score any trial reported
        self.gains = GainBounds(levels)  # "could it still win?": the largest gains seen from each rung
        self._seat_for: dict[str, str] = {}  # paused finalist -> the live trial paused to make room for it
        self._yielded: set[str] = set()  # live trials paused so that a finalist could grow (still stopping)

    # ------------------------------------------------------------ observing

    def observe(self, record: Record, trial: TrialView | None) -> None:
        if isinstance(record, Reported):
            self._on_report(record, trial)
        elif isinstance(record, Running):
            self.pace.add_startup(record.startup)
        elif isinstance(record, Launched):
            last = trial.last_score if trial is not None else None
            self.live.launched(record.trial, len(record.atoms), self.sign * last if last is not None else None)
            self.bracket.unpause(record.trial)
        elif isinstance(record, StopRequested):
            resize = record.intent == StopIntent.RESIZE
            self.live.stop_requested(record.trial, record.t, resize,
                                     shrink=resize and record.atoms < (trial.atoms if trial else 0))
            self._forget_verdicts(record.trial)
            if not resize:  # a resized trial keeps its idle-time exemption
                self._idle_resumed.discard(record.trial)
        elif isinstance(record, Exited):
            asked = self.live.exited(record.trial)
            self._forget_verdicts(record.trial)
            if asked is not None:
                self.pace.add_stop(record.t - asked)
            rung = self._pause_rung.pop(record.trial, None)
            if rung is not None and trial is not None and trial.status == TrialStatus.PAUSED \
                    and (self.spec.backfill or not self.closed or self._finishing):
                self.bracket.pause_at(record.trial, rung)
            if trial is not None and trial.status != TrialStatus.PAUSED:
                self._drop_candidate(record.trial)
        elif isinstance(record, EntranceClosed):
            self.closed = True

    def _on_report(self, record: Reported, trial: TrialView | None) -> None:
        self.live.reported_at(record.trial, record.t)
        if trial is not None:
            self.pace.add_report(record.trial, trial.run_time, trial.atoms, trial.step_time)
        score = self.sign * record.score
        self._best = max(self._best, score)
        self.candidates.note_score(record.trial, score)
        if record.trial not in self.live.atoms:
            if record.trial in self.live.stopping and record.step < self.spec.R:
                # reported while stopping (for a resize, say): its rung scores count now, so the
                # relaunched trial is not judged late, past the step, at a rung it has passed
                self.bracket.evaluate(record.trial, record.step, score)
                self._track_level(record.trial, record.step, score)
            return
        self.live.scored(record.trial, score, trial.reports_since_launch if trial else 0)
        self._pause_rung.pop(record.trial, None)  # an earlier rung verdict that was withdrawn (see _finish)
        if record.step >= self.spec.R:
            self._learn_final(record.trial, score)
            self._drop_candidate(record.trial)
            self._verdicts[record.trial] = StopTrial(record.trial, "max_steps")
            return
        rung = self.bracket.evaluate(record.trial, record.step, score)
        self._track_level(record.trial, record.step, score)
        if self.closed and self._finishing and record.trial in self._finalists:
            rung = None  # rung cutoffs no longer throw away a finalist's training
        if rung is not None and record.trial not in self._idle_resumed:
            self._pause_rung[record.trial] = rung
            self._verdicts[record.trial] = PauseTrial(record.trial, f"rung {rung.milestone}")
        else:
            self._reported[record.trial] = None

    # ------------------------------------------------------------ candidates and rung trust

    @property
    def _finishing(self) -> bool:
        return self.spec.after_close == "finish"

    def _cutoff_quantile(self, level: int) -> float:
        """A rung's cutoff quantile: successive halving's (1 - 1/eta), scaled by the trust in the rung."""
        return (1.0 - 1.0 / self.spec.eta) * min(1.0, self.trust.trust(level) / TRUST_FULL)

    def _rung(self, level: int) -> Rung:
        return self.bracket.rungs[self._levels - 1 - level]

    def _track_level(self, trial_id: str, step: int, score: float) -> None:
        """File the trial among the candidates by the highest rung it recorded; learn rung pairs."""
        for higher in self.candidates.track(trial_id, step, score):
            if higher >= 1:
                recorded = self._rung(higher).recorded[trial_id]
                self._learn_link(trial_id, higher - 1, recorded)
                lower = self._rung(higher - 1).recorded.get(trial_id)
                if lower is not None:
                    self.gains.note(higher - 1, lower, recorded - lower)

    def _learn_final(self, trial_id: str, score: float) -> None:
        """A trial reached R: pair its score with the one it recorded at the top rung."""
        if self._levels:
            self._learn_link(trial_id, self._levels - 1, score)
            top = self._rung(self._levels - 1).recorded.get(trial_id)
            if top is not None:
                self.gains.note(self._levels - 1, top, self.candidates.best_score(trial_id) - top)

    def _cannot_win(self, rung: Rung, score: float) -> bool:
        """Whether a trial that recorded ``score`` at ``rung`` could not beat the best score so far even
        with the largest gain seen from there (the run's goal is its best score: such a trial has no
        value, its atoms go to others; as ``_exploring_futile`` for new trials). Never for a trial
        further behind at the rung than any trial whose gain from there was seen: the gains come from
        the rung's leaders, and a late bloomer (a slower start, as with a lower learning rate) gains more."""
        return self.gains.covers(rung.level, score) and self.gains.beyond_reach(rung.level, score, self._best)

    def _learn_link(self, trial_id: str, level: int, upper: float) -> None:
        rung = self._rung(level)
        lower = rung.recorded.get(trial_id)
        if lower is not None and len(rung) > 1:
            self.trust.add_pair(level, 1.0 - rung.rank(lower) / (len(rung) - 1), upper)

    def _drop_candidate(self, trial_id: str) -> None:
        self.candidates.drop(trial_id)
        self.pace.forget(trial_id)

    def _forget_verdicts(self, trial_id: str) -> None:
        """``trial_id`` is no longer live: no verdict on it, and no growth for its reports."""
        self._verdicts.pop(trial_id, None)
        self._reported.pop(trial_id, None)

    # ------------------------------------------------------------ estimates

    @property
    def startup_estimate(self) -> float:
        """T_o: the configured quantile of measured startup/resize times (0 when ignoring overhead)."""
        if not self.spec.overhead_aware:
            return 0.0
        measured = self.pace.startup()
        if measured is None:
            return self.spec.startup_estimate or 0.0
        return measured

    def _first_report_in(self) -> float:
        """Seconds from a launch to its first report: a startup and one step on one atom."""
        return self.startup_estimate + (self.pace.run_step_time() or 0.0) / self.scaling.rate(1)

    @property
    def _stop_estimate(self) -> float:
        """A stop, measured from the request (or the last report after it) to the exit, at the
        configured quantile (0 before any, or when ignoring overhead)."""
        if not self.spec.overhead_aware:
            return 0.0
        return self.pace.stop() or 0.0

    @property
    def resize_overhead(self) -> float:
        """What a resize costs a trial: a stop and a startup (0 when ignoring overhead)."""
        return self._stop_estimate + self.startup_estimate

    def exploration_budget(self) -> float:
        """min(R * T_a, eta * T'): time a new trial would need; explore only while time_left exceeds it."""
        step_time = self.pace.run_step_time()
        full_run = self.spec.R * step_time if step_time is not None else math.inf
        return min(full_run, self.spec.eta * self.pace.longest_run)

    def _entrance_should_close(self, situation: Situation) -> str | None:
        entrance = self.spec.entrance
        if entrance == "none":
            return None
        if entrance == "deadline":
            plan = self.finish_plan(situation)
            if plan is None:
                return None
            if not plan.fits:
                return (f"fidelity-limited: no {plan.atoms_each}-atom finalist reaches R={self.spec.R} "
                        f"in the {situation.time_left:.4g} s left")
            if situation.time_left - plan.need <= self._plan_slack():
                return (f"time left {situation.time_left:.4g} s ~ {plan.need:.4g} s to train the best "
                        f"{len(plan.finalists)}{_named(plan.ids)} to R={self.spec.R} on {plan.atoms_each} "
                        f"atom(s) each")
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

    def next_decision_time(self, situation: Situation) -> float:
        """When the entrance rule would close it, if no record comes first (a real controller decides
        at every poll, so it closes then; the simulated one wakes then to do the same)."""
        if self.closed:
            return math.inf
        wait = self._time_until_close(situation)
        return situation.now + wait + CLOCK_EPSILON if wait is not None and wait > 0 else math.inf

    def _time_until_close(self, situation: Situation) -> float | None:
        """Seconds from now until ``_entrance_should_close`` holds as things stand (None: not by time)."""
        entrance = self.spec.entrance
        if entrance == "none":
            return None
        if entrance == "adaptive":
            return situation.time_left - self.exploration_budget()
        if entrance != "deadline":
            return situation.started_at + float(entrance) * (situation.deadline - situation.started_at) - situation.now
        step_time = self.pace.run_step_time()
        if step_time is None:
            return None
        fresh = self._every_plan_fits_above(step_time)
        if situation.time_left > fresh:
            return situation.time_left - fresh  # until then every plan fits (finish_plan)
        plan = self.finish_plan(situation)
        if plan is None or not plan.fits:
            return None
        return situation.time_left - plan.need - self._plan_slack()

    def _every_plan_fits_above(self, step_time: float) -> float:
        """Time left above which every finish plan fits with room to spare: a fresh trial on one atom
        (the smallest allocation) reaches R with a step of slack."""
        return self.startup_estimate + self.spec.R * step_time / self.scaling.rate(1) + self._plan_slack()

    def _plan_slack(self) -> float:
        """Close this long before a plan stops fitting: one step on one atom (decisions come per report)."""
        return self.pace.run_step_time() or 0.0

    def finish_plan(self, situation: Situation) -> FinishPlan | None:
        """The plan that trains the best candidates to R by the deadline (None before a step was
        measured, or while even a fresh trial on the smallest allocation would fit with room to spare)."""
        step_time = self.pace.run_step_time()
        if step_time is None:
            return None
        startup = self.startup_estimate
        # O(1) for most of the exploration
        if not self.closed and situation.time_left > self._every_plan_fits_above(step_time):
            return None
        cap = 1 if self.spec.allocation == "none" else self._cap(situation.total_atoms)  # finalists never grow
        ranked: list[Candidate] = []
        for trial_id in self.candidates.best_first():
            if len(ranked) >= situation.total_atoms:
                break
            ranked.append(self._candidate(trial_id))
        args = (ranked, situation.total_atoms, cap, self.spec.allocation_grid, self.spec.R, step_time,
                self.scaling, startup, situation.time_left)
        share = self._share if self.closed else self._finalist_share(ranked)
        plan = plan_finish(*args, share=share, stop=self._stop_estimate)
        if not plan.fits and share < 1.0:
            plan = plan_finish(*args, stop=self._stop_estimate)  # fidelity-limited: every atom trains a finalist
        if not self.closed:
            self._share = share if plan.fits else 1.0  # kept once the entrance closes
        return plan

    def _finalist_share(self, ranked: list[Candidate]) -> float:
        """How many finalists, as a share of the atoms: 1 - the trust in the rung that ranks the best
        candidate (all atoms when it has reached no rung); the other atoms go on exploring."""
        if not ranked or ranked[0].trial_id is None or self.spec.rung_trust != "learned":
            return 1.0
        level = self.candidates.level(ranked[0].trial_id)
        trust = 0.0 if level == NO_LEVEL else self.trust.trust(level)
        return max(1e-9, 1.0 - trust)

    # ------------------------------------------------------------ deciding

    def decision_steps(self) -> DecisionSteps:
        """Speculative evaluation may pause a trial at any report (retrospectively); ASHA's rungs only at rungs."""
        if self.spec.speculative:
            return DecisionSteps(every_step=True)
        return rung_steps(milestones(self.spec.r, self.spec.R, self.spec.eta), self.spec.R)

    def decide(self, situation: Situation) -> list[Decision]:
        for verdict in self._verdicts.values():  # leaving now: not candidates for growth or shrinking
            self._reported.pop(verdict.trial_id, None)
            self.live.grown.discard(verdict.trial_id)
        out: list[Decision] = list(self._verdicts.values())
        self._verdicts.clear()
        free = situation.free_atoms
        if not self.closed:
            reason = self._entrance_should_close(situation)
            if reason is not None:
                self.closed = True
                out.append(CloseEntrance(reason))
        if situation.time_left <= self._first_report_in():
            pass  # a trial started now would not report a step before the deadline
        elif not self.closed:
            free = self._explore(situation, free, out)
        elif self._finishing:
            free = self._finish(situation, free, out)
        elif self.spec.backfill and free > 0:
            spare = free - self._growth_demand(situation)
            if spare > 0:
                free -= spare - self._explore(situation, spare, out, make_room=False)
        if self.spec.allocation != "none" and free > 0:
            self._grow(situation, free, out)
        if free > 0 and not self.live.atoms and not out and (self.spec.backfill or not self.closed) \
                and situation.time_left > self._first_report_in():
            self._resume_idle(free, out)
        self._reported.clear()
        return out

    def _finish(self, situation: Situation, free: int, out: list[Decision]) -> int:
        """After the entrance closed: finalists first (paused ones swapped in for live trials that
        rank below them), then growth, then the best other candidates, then (backfill) new trials."""
        plan = self.finish_plan(situation)
        finalists = self._finalists = set(plan.ids) if plan is not None else set()
        for pause in [d for d in out if isinstance(d, PauseTrial) and d.trial_id in finalists
                      and d.trial_id in self._pause_rung]:
            # its report at the rung made it a finalist: pausing it would only relaunch it at once
            out.remove(pause)
            del self._pause_rung[pause.trial_id]
        leaving = {d.trial_id for d in out if isinstance(d, (PauseTrial, StopTrial))}
        paused_finalists = [t for t in (plan.ids if plan else ()) if t not in self.live.atoms and t not in leaving
                            and t not in self.live.stopping]
        atoms_each = plan.atoms_each if plan is not None else 1
        # a victim still stopping is its finalist's seat: one victim per finalist
        self._seat_for = {f: v for f, v in self._seat_for.items() if v in self.live.stopping and f in paused_finalists}
        # atoms that trials leaving anyway (at R, at a rung) are about to free: seats without a victim
        coming = sum(self.live.atoms.get(t, 0) for t in leaving) + sum(
            atoms for t, atoms in self.live.freeing.items()
            if t not in self._yielded and t not in self._seat_for.values())
        for trial_id in paused_finalists:
            if free >= 1:  # on the plan's allocation where the atoms are free: no resize later
                atoms = max(1, allowed_size(min(atoms_each, free), self.spec.allocation_grid))
                self.bracket.unpause(trial_id)
                out.append(ResumeTrial(trial_id, atoms))
                free -= atoms
                continue
            if trial_id in self._seat_for or not self._reaches_R(trial_id, atoms_each, situation):
                continue  # its seat is being freed; or a swap would trade one partial run for another
            if coming >= 1:
                coming -= 1  # it takes the next atom that comes free
                continue
            victim = self._swap_victim(trial_id, finalists, leaving, situation)
            if victim is None:
                break
            out.append(PauseTrial(victim, f"make room for finalist {trial_id}"))
            leaving.add(victim)
            self._reported.pop(victim, None)  # leaving now: no candidate for growth
            self._seat_for[trial_id] = victim
        futile = self._exploring_futile(situation)
        finalists_take_all = plan is not None and len(plan.finalists) * plan.atoms_each >= situation.total_atoms
        if (futile or finalists_take_all) and self.spec.allocation != "none":
            self._yield_to_growth(situation, finalists, leaving, out, futile)
        spare = free - self._growth_demand(situation)
        if spare <= 0:
            return free
        if plan is not None and len(plan.finalists) < situation.total_atoms // plan.atoms_each and not futile:
            return free - spare + self._explore(situation, spare, out, make_room=False)  # the rest explore
        used = 0
        for trial_id in self.candidates.best_first():
            if used >= spare:
                break
            if trial_id in self.live.atoms or trial_id in leaving or trial_id in paused_finalists \
                    or trial_id in self.live.stopping or self._hopeless(trial_id, 1, situation):
                continue
            self.bracket.unpause(trial_id)
            out.append(ResumeTrial(trial_id, 1))
            used += 1
        if self.spec.backfill and not futile:
            starts = new_trials(spare - used, 1, situation.trials_left)
            out.extend(starts)
            used += len(starts)
        return free - used

    def _yield_to_growth(self, situation: Situation, finalists: set[str], leaving: set[str],
                         out: list[Decision], futile: bool) -> None:
        """A live non-finalist gives its atoms to the best live finalist that does not reach R on its
        atoms and whose growth passes the overhead-aware test; the finalist grows at its next report.
        Only for a finalist past its resize cooldown (before, the atoms would idle until it may
        grow). The one that gives: when exploring is futile, one that can neither reach R by the deadline
        nor beat the best score (with the largest gains seen); else, when growing makes the
        finalist reach R, one that ranks below it and does not reach R on its atoms (the plan wants
        the finalist trained to R, a partial run below it is worth less). One such pause at a time."""
        self._yielded = {t for t in self._yielded if t in self.live.stopping}
        if self._yielded:
            return
        cap = self._cap(situation.total_atoms)
        growing = [t for t in finalists if t in self.live.atoms and t not in leaving and self.live.atoms[t] < cap
                   and self._cooldown_left(t) == 0  # else the atoms would idle
                   and not self._reaches_R(t, self.live.atoms[t], situation)]
        ranking = self.live.ranking
        for finalist in sorted(growing, key=lambda t: ranking.rank(t) if t in ranking else math.inf):
            current = self.live.atoms[finalist]
            new = allowed_size(current + 1, self.spec.allocation_grid)
            if new <= current or not worth_resizing(self.scaling, current, new, situation.time_left,
                                                     self.resize_overhead, self.spec.resize_margin):
                continue
            victim = self._hopeless_live(situation, finalists, leaving) if futile else None
            if victim is None and self._reaches_R(finalist, new, situation):
                victim = self._partial_below(finalist, situation, finalists, leaving)
            if victim is not None:
                out.append(PauseTrial(victim, f"atoms to finalist {finalist}"))
                leaving.add(victim)
                self._yielded.add(victim)
                self._reported.pop(victim, None)  # leaving now: no candidate for growth
            return

    def _hopeless_live(self, situation: Situation, finalists: set[str], leaving: set[str]) -> str | None:
        """The lowest-standing live non-finalist that cannot reach R by the deadline on its atoms and
        cannot beat the best score even with the largest gains seen from its rung (None if none)."""
        worst = None
        for trial_id, atoms in self.live.atoms.items():
            if trial_id in finalists or trial_id in leaving or trial_id in self.live.grown:
                continue
            if not self._hopeless(trial_id, atoms, situation):
                continue
            if worst is None or self.candidates.standing(trial_id) < self.candidates.standing(worst):
                worst = trial_id
        return worst

    def _partial_below(self, finalist: str, situation: Situation, finalists: set[str],
                       leaving: set[str]) -> str | None:
        """The lowest-ranked live non-finalist that ranks below ``finalist`` (a lower rung, or the same
        rung and a lower score there), has not reported a score as good as the finalist's best (with
        less training: it may be the better run), and does not reach R by the deadline on its atoms
        (None if none)."""
        above = self.candidates.standing(finalist)
        finalist_best = self.candidates.best_score(finalist)
        below = [t for t, atoms in self.live.atoms.items()
                 if t not in finalists and t not in leaving and t not in self.live.grown
                 and self.candidates.standing(t) < above and self.candidates.best_score(t) < finalist_best
                 and not self._reaches_R(t, atoms, situation)]
        return min(below, key=self.candidates.standing, default=None)

    def _hopeless(self, trial_id: str, atoms: int, situation: Situation) -> bool:
        """Whether ``trial_id``, training on ``atoms`` atoms from now (a startup first unless it holds
        them), can neither reach R by the deadline nor beat the best score: with the largest gains
        seen from its rung, or, below the first rung, as a new trial could not (``_none_won_below``)."""
        if self._reaches_R(trial_id, atoms, situation):
            return False
        level = self.candidates.level(trial_id)
        if level != NO_LEVEL:
            return self.gains.beyond_reach(level, self.candidates.best_score(trial_id), self._best)
        return self._unlikely_to_win(trial_id, atoms, situation)

    def _cooldown_left(self, trial_id: str) -> int:
        """Reports ``trial_id``'s resize cooldown still wants before it may grow (0 once past it)."""
        return max(0, self.spec.resize_cooldown - self.live.since_launch.get(trial_id, 0))

    def _candidate(self, trial_id: str) -> Candidate:
        return Candidate(trial_id, self.candidates.steps(trial_id), self.live.atoms.get(trial_id, 0),
                         self.pace.own_step_time(trial_id))

    def _reaches_R(self, trial_id: str, atoms: int, situation: Situation) -> bool:
        """Whether ``trial_id``, training on ``atoms`` atoms from now, reaches R by the deadline (a
        startup first unless it already holds that many)."""
        step_time = self.pace.run_step_time() or 0.0
        need = finish_time(self._candidate(trial_id), atoms, self.spec.R, step_time, self.scaling,
                           self.startup_estimate, self._stop_estimate)
        return need <= situation.time_left

    def _exploring_futile(self, situation: Situation) -> bool:
        """Whether a trial started now (on one atom) is unlikely to beat the best score so far."""
        return self._unlikely_to_win(None, 1, situation)

    def _unlikely_to_win(self, trial_id: str | None, atoms: int, situation: Situation) -> bool:
        """Whether ``trial_id`` (None: a trial started now), training on ``atoms`` atoms from now (a
        startup first unless it holds them), gets no further than a step where winning is unlikely
        (``_none_won_below``), at its own step time where measured."""
        step_time = self.pace.step_time(trial_id)
        if step_time is None or step_time <= 0 or not math.isfinite(self._best):
            return False
        holds = self.live.atoms.get(trial_id, 0) if trial_id is not None else 0
        restart = 0.0 if holds == atoms else self.startup_estimate
        reach = (self.candidates.steps(trial_id) if trial_id is not None else 0) + \
            max(0.0, situation.time_left - restart) * self.scaling.rate(atoms) / step_time
        return self._none_won_below(reach)

    def _none_won_below(self, reach: float) -> bool:
        """Whether a trial that gets no further than step ``reach`` is unlikely to beat the best score:
        ``reach`` < R and nobody recorded at the highest rung up to ``reach`` matched it (with n
        recorded there, the chance that one more does is below 1/(n+1)); True below the first rung."""
        if reach >= self.spec.R:
            return False
        for rung in self.bracket.rungs:  # highest first
            if rung.milestone <= reach:
                return len(rung) > 0 and rung.best() < self._best
        return True

    def _swap_victim(self, finalist: str, finalists: set[str], leaving: set[str],
                     situation: Situation) -> str | None:
        """The live trial to pause for a paused ``finalist``: the lowest-ranked live non-finalist,
        if the finalist reached a higher rung than it, or the same rung and that rung is trusted;
        not one that has already reported above the finalist's score at that rung and reaches R
        on its atoms (a better run that will be trained to R: pausing it would only throw it away)."""
        level = self.candidates.level(finalist)
        standing = self._rung(level).recorded.get(finalist) if level != NO_LEVEL else None
        worst = None
        for trial_id in self.live.atoms:
            if trial_id in finalists or trial_id in leaving or trial_id in self.live.grown:
                continue
            other = self.candidates.level(trial_id)
            if other > level or (other == level and (level == NO_LEVEL or self.trust.trust(level) < TRUST_FULL)):
                continue
            if standing is not None and self.candidates.best_score(trial_id) >= standing \
                    and self._reaches_R(trial_id, self.live.atoms[trial_id], situation):
                continue
            if worst is None or self.candidates.standing(trial_id) < self.candidates.standing(worst):
                worst = trial_id
        return worst

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

    def _growth_demand(self, situation: Situation) -> int:
        """Atoms the live trials would still take under the allocation policy (0 without one, or
        while no live trial's growth, from when its resize cooldown ends, passes the overhead-aware
        test before it reaches R or the deadline: held back, they would idle)."""
        live = len(self.live.atoms)
        if self.spec.allocation == "none" or not live:
            return 0
        total = situation.total_atoms
        cap = self._cap(total)
        overhead = self.resize_overhead
        if not any(atoms < cap and worth_resizing(self.scaling, atoms, cap,
                                                  self._growth_horizon(t, atoms, situation)
                                                  - self._until_may_grow(t, atoms), overhead,
                                                  self.spec.resize_margin)
                   for t, atoms in self.live.atoms.items()):
            return 0
        if self.spec.allocation == "uniform":
            wanted = min(total, live * cap)
        else:
            wanted = min(total, live - 1 + cap)
        return max(0, wanted - self.live.total_atoms)

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
        if self.live.shrinking or not self.live.grown:
            return
        victim = max(self.live.grown, key=lambda t: (self.live.atoms[t], self.live.ranking.rank(t)))
        current = self.live.atoms[victim]
        smaller = allowed_size(current - 1, self.spec.allocation_grid)
        out.append(ResizeTrial(victim, max(1, smaller), "make room for exploration"))
        self.live.shrinking.add(victim)

    def _cap(self, total: int) -> int:
        """Most atoms one trial may hold: the spec's limit, and no more than the belief finds useful."""
        if total not in self._caps:
            limit = min(self.spec.max_atoms_per_trial or total, total)
            self._caps[total] = self.scaling.best_atoms(limit)
        return self._caps[total]

    def _growth_horizon(self, trial_id: str, atoms: int, situation: Situation) -> float:
        """How long growing ``trial_id`` can pay: until the deadline, or until it would reach R on its
        ``atoms`` atoms if that comes first (after R its atoms are free again: a resize then only
        costs); the deadline while no step has been timed."""
        step_time = self.pace.step_time(trial_id)
        if step_time is None or step_time <= 0:
            return situation.time_left
        to_R = finish_time(self._candidate(trial_id), atoms, self.spec.R, step_time, self.scaling, startup=0.0)
        return min(situation.time_left, to_R)

    def _until_may_grow(self, trial_id: str, atoms: int) -> float:
        """Seconds until ``trial_id`` may grow: the reports its resize cooldown still wants, at its step
        time on its ``atoms`` atoms (0 once past it, or while no step has been timed)."""
        wait = self._cooldown_left(trial_id)
        step_time = self.pace.step_time(trial_id)
        if wait == 0 or not step_time:
            return 0.0
        return wait * step_time / self.scaling.rate(atoms)

    def _grow(self, situation: Situation, free: int, out: list[Decision]) -> None:
        live = len(self.live.atoms)
        if not live or not self._reported:
            return
        cap = self._cap(situation.total_atoms)
        overhead = self.resize_overhead
        for trial_id in self._reported:
            if free <= 0:
                return
            if trial_id not in self.live.atoms or self._cooldown_left(trial_id) > 0:
                continue
            current = self.live.atoms[trial_id]
            target = target_atoms(self.spec.allocation, self.live.ranking.rank(trial_id), live,
                                  situation.total_atoms, cap)
            new = allowed_size(min(target, current + free), self.spec.allocation_grid)
            if new <= current:
                continue
            if worth_resizing(self.scaling, current, new, self._growth_horizon(trial_id, current, situation),
                              overhead, self.spec.resize_margin):
                out.append(ResizeTrial(trial_id, new, f"grow {current}->{new} ({self.spec.allocation})"))
                free -= new - current
