"""The controller loop: one loop for every backend (simulated, local processes, SLURM steps).

It polls the executor for events, turns them into journal records, lets the scheduler
observe each record and decide, and applies the decisions through the executor. Time comes
from an injected clock; the run's state is a replay of the records it committed.
"""

from __future__ import annotations

import errno
import logging
import math
from dataclasses import dataclass, replace
from typing import Callable

from hpcsched.core.atoms import node_of
from hpcsched.core.clock import Clock
from hpcsched.executors.base import Executor, LaunchRequest, TrialExit, TrialReport, TrialStarted
from hpcsched.loop.feed import feed
from hpcsched.rundir.journal import Journal
from hpcsched.samplers import ConfigSampler, proposed_by_model
from hpcsched.core.records import (ControllerResumed, ControllerStopped, EntranceClosed, Exited, FinishReason, Launched,
                                   LaunchReason, Record, Reported, RunExtended, RunFinished, RunStarted, Running,
                                   StopIntent, StopRequested, TrialCreated)
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.schedulers.decisions import (CloseEntrance, Decision, PauseTrial, ResizeTrial, ResumeTrial, Scheduler,
                                           Situation, StartTrial, StopTrial)
from hpcsched.core.state import LIVE, RunState, TrialStatus

log = logging.getLogger(__name__)
_STOPPABLE = (TrialStatus.LAUNCHING, TrialStatus.RUNNING)  # live and not yet asked to stop
_NOT_RELAUNCHED = (StopIntent.PAUSE, StopIntent.STOP, StopIntent.DEADLINE)  # exits not relaunched at once


class SchedulerError(RuntimeError):
    """A scheduler returned a decision that cannot be applied (a bug in the policy)."""


@dataclass(frozen=True)
class RunSettings:
    """What the controller needs to know about the run, whatever the backend."""

    name: str
    variant: str
    spec_digest: str
    seed: int
    deadline: float  # absolute, on the clock's time line
    atom_ids: tuple[str, ...]
    max_trials: int | None = None  # combined limit of spec, space and workload
    metric: str = "score"
    stop_margin: float = 0.0  # ask trials to checkpoint this long before the deadline
    wind_down_grace: float = 0.0  # after the deadline, how long to wait for trials to exit
    max_failures: int | None = None  # launches in a row erroring before their first report that end the run


class Controller:
    def __init__(self, settings: RunSettings, scheduler: Scheduler, executor: Executor, clock: Clock,
                 journal: Journal, sampler: ConfigSampler, state: RunState,
                 on_record: Callable[[Record, RunState], None] | None = None):
        self.settings = settings
        self.scheduler = scheduler
        self.executor = executor
        self.clock = clock
        self.journal = journal
        self.sampler = sampler
        self.state = state
        self.on_record = on_record
        self.interrupted: str | None = None  # set (e.g. from a signal handler) to wind down now
        self._interrupt_ends_run = False

    def interrupt(self, reason: str, at_deadline: bool = False) -> None:
        """Stop at the next loop turn: checkpoint every trial and record that the controller stopped
        (``reason``); the run is not finished: ``--resume`` or a requeued job goes on with it.
        ``at_deadline``: the run's end has come early (Slurm's warning before the time limit), so
        it finishes as at its deadline."""
        self.interrupted = reason
        self._interrupt_ends_run = at_deadline

    # ------------------------------------------------------------ the loop

    def run(self) -> RunState:
        """Run until the deadline (less the stop margin) or until nothing is left to do."""
        s = self.settings
        if self.state.started is None:
            self._commit(RunStarted(self.clock.now(), s.name, s.deadline, len(s.atom_ids), s.seed,
                                    s.spec_digest, s.variant, s.atom_ids, s.metric, self.state.mode))
        stop_at = s.deadline - s.stop_margin
        reason: str = FinishReason.DEADLINE
        while True:
            now = self.clock.now()
            for event in self.executor.poll(now):
                self._handle(event)
                if not self.out_of_failures:
                    self._decide()
            if self.out_of_failures:  # the trainable cannot work: launch nothing more
                reason = FinishReason.FAILURES
                break
            if now >= stop_at:
                break
            if self.interrupted:
                reason = FinishReason.DEADLINE if self._interrupt_ends_run else self.interrupted
                break
            self._retry()
            acted = self._decide()
            self.executor.decided()  # trials waiting on a report that stopped nothing go on
            if not acted and self.state.live_count == 0:
                reason = FinishReason.NOTHING_LEFT
                break
            self.journal.sync()
            due = self.scheduler.next_decision_time(self.situation())
            self.clock.sleep_until(min(self.executor.next_wakeup(now), stop_at, due if due > now else math.inf))
        why = self.interrupted or (str(reason) if reason == FinishReason.FAILURES else "")
        self._wind_down(give_up_at=s.deadline if reason == FinishReason.DEADLINE else None, why=why)
        if self.interrupted and reason == self.interrupted and not self._interrupt_ends_run:
            self._commit(ControllerStopped(self.clock.now(), reason))
            return self.state
        return self.finish(reason)

    @property
    def out_of_failures(self) -> bool:
        """Whether ``max_failures`` launches in a row errored before their first report."""
        longest, limit = self.state.failures.longest, self.settings.max_failures
        return longest is not None and limit is not None and longest.launches >= limit

    def finish(self, reason: str) -> RunState:
        """Record the end of a run that has nothing live (its own end, or resumed after its deadline)."""
        st = self.state
        self._commit(RunFinished(self.clock.now(), reason, st.best_trial, st.best_score, st.best_step))
        return st

    def abort(self, reason: str) -> RunState:
        """End the run now after an error of the environment the loop cannot go on with (a full disk):
        kill every trial (their last checkpoints count; as after a signal, ``--resume`` relaunches those
        that were running) and record the end, as far as the journal still takes it."""
        try:
            for trial in list(self.state.trials.values()):
                if trial.status in LIVE and trial.intent not in _NOT_RELAUNCHED:
                    self._commit(StopRequested(self.clock.now(), trial.trial_id, StopIntent.DEADLINE, reason=reason))
            self._kill_live(reason)
            self.finish(reason)
        except OSError as exc:
            log.error("could not record the end of the run: %s", exc)
        return self.state

    def _kill_live(self, why: str) -> None:
        """Kill every process; each live trial exits at its last checkpoint (written atomically)."""
        self.executor.shutdown()
        now = self.clock.now()
        for trial in list(self.state.trials.values()):
            if trial.status in LIVE:
                self._commit(Exited(now, trial.trial_id, ExitOutcome.CHECKPOINTED, trial.checkpoint_step, why))

    def _wind_down(self, give_up_at: float | None = None, why: str = "") -> None:
        """Ask every live trial to checkpoint and exit (``why``: what ended the loop before the deadline, a
        signal or the failure budget); wait for them until ``give_up_at`` (default: the wind-down grace
        period from now), then kill what is left."""
        for trial in list(self.state.trials.values()):
            if trial.status in LIVE and trial.intent not in _NOT_RELAUNCHED:
                self._commit(StopRequested(self.clock.now(), trial.trial_id, StopIntent.DEADLINE, reason=why))
                self.executor.request_stop(trial.trial_id)
        give_up = give_up_at if give_up_at is not None else self.clock.now() + self.settings.wind_down_grace
        while self.state.live_count:
            now = self.clock.now()
            for event in self.executor.poll(now):
                self._handle(event, relaunch=False)  # winding down: a retry waits for --resume
            if not self.state.live_count:
                break
            if now >= give_up:
                self._kill_live("did not exit in time after the stop request; killed")
                break
            wake = self.executor.next_wakeup(now)
            self.clock.sleep_until(min(wake, give_up) if math.isfinite(wake) else give_up)

    def extend(self, deadline: float, by: float) -> None:
        """Move the run's deadline to ``deadline`` (``--resume --extend``); journaled, so the state,
        the result and the scheduler all plan to the new one."""
        previous = self.state.deadline
        self._commit(RunExtended(self.clock.now(), deadline, by, previous if previous is not None else 0.0))
        self.settings = replace(self.settings, deadline=deadline)

    # ------------------------------------------------------------ resuming

    def resume(self, atom_ids: tuple[str, ...], host: str = "", pid: int = 0, relaunch: bool = True) -> None:
        """Take over a replayed run: recover every trial the previous controller left live
        (its reports since the last journaled one, then its exit), hand the run the atoms
        held now, and (``relaunch``) relaunch the trials that were running on as many atoms as they had."""
        for trial in list(self.state.trials.values()):
            if trial.status not in LIVE:
                continue
            if trial.status != TrialStatus.STOPPING:
                self._commit(StopRequested(self.clock.now(), trial.trial_id, StopIntent.RECOVER, len(trial.atoms),
                                           reason="controller restarted"))
            for event in self.executor.recover(trial.trial_id, trial.launches, trial.step, trial.checkpoint_step):
                self._handle(event, relaunch=False)
        self._commit(ControllerResumed(self.clock.now(), tuple(atom_ids), host, pid))
        for trial in list(self.state.trials.values()) if relaunch else ():
            # live when the old controller died, or stopped by its wind-down when it was interrupted
            wanted = trial.relaunch_atoms or (len(trial.last_atoms) if trial.intent == StopIntent.DEADLINE else 0)
            if trial.status == TrialStatus.PAUSED and wanted:
                atoms = min(wanted, self.state.free_atoms)
                if atoms >= 1:
                    self._launch(trial.trial_id, atoms, LaunchReason.RECOVER)

    # ------------------------------------------------------------ events

    def _handle(self, event, relaunch: bool = True) -> None:
        trial = self.state.trials.get(event.trial_id)
        if trial is None or trial.status not in LIVE:
            return  # stale event of a trial that already exited
        if isinstance(event, TrialStarted):
            if trial.status == TrialStatus.LAUNCHING:
                self._commit(Running(event.t, event.trial_id, max(0.0, event.t - _or(trial.launched_at, event.t))))
        elif isinstance(event, TrialReport):
            if trial.running_since is None:  # a report before the started mark: count it as started
                self._commit(Running(event.t, event.trial_id, max(0.0, event.t - _or(trial.launched_at, event.t))))
            self._commit(Reported(event.t, event.trial_id, event.step, event.score, event.checkpoint,
                                  event.metrics))
        elif isinstance(event, TrialExit):
            self._commit(Exited(event.t, event.trial_id, event.outcome, event.step, event.error, event.retryable))
            if relaunch and trial.status == TrialStatus.PAUSED and trial.relaunch_atoms:
                # resized, taken over by a restarted controller, or errored for the environment (a retry)
                reason = LaunchReason.RESIZE if trial.intent == StopIntent.RESIZE else LaunchReason.RECOVER
                self._launch(trial.trial_id, trial.relaunch_atoms, reason)

    def _retry(self) -> None:
        """Relaunch the trials whose last launch failed for the environment and that wait for atoms
        (a launch that could not be made; a trial's own exit is retried at once, see ``_handle``)."""
        for trial_id in sorted(self.state.retrying):
            trial = self.state.trials[trial_id]
            atoms = min(trial.relaunch_atoms, self.state.free_atoms)
            if atoms >= 1:
                self._launch(trial_id, atoms, LaunchReason.RECOVER)

    # ------------------------------------------------------------ decisions

    def situation(self) -> Situation:
        st, s = self.state, self.settings
        left = None if s.max_trials is None else s.max_trials - len(st.trials)
        started_at = st.started.t if st.started is not None else self.clock.now()
        # the scheduler plans to when trials are asked to checkpoint, not to the deadline itself
        return Situation(self.clock.now(), started_at, s.deadline - s.stop_margin, st.total_atoms, st.free_atoms,
                         left)

    def _decide(self) -> bool:
        decisions = self.scheduler.decide(self.situation())
        for decision in decisions:
            self._apply(decision)
        return bool(decisions)

    def _apply(self, d: Decision) -> None:
        now = self.clock.now()
        st = self.state
        if isinstance(d, StartTrial):
            index = len(st.trials)
            if self.settings.max_trials is not None and index >= self.settings.max_trials:
                raise SchedulerError(f"{d}: no trials left to start")
            trial_id = f"t{index:04d}"
            config = self.sampler.config(index)
            self._commit(TrialCreated(now, trial_id, index, config, from_model=proposed_by_model(self.sampler, index)))
            self._launch(trial_id, d.atoms, LaunchReason.START)
        elif isinstance(d, ResumeTrial):
            if st.trials[d.trial_id].status != TrialStatus.PAUSED:
                raise SchedulerError(f"{d}: trial is {st.trials[d.trial_id].status}")
            self._launch(d.trial_id, d.atoms, LaunchReason.RESUME)
        elif isinstance(d, (PauseTrial, StopTrial)):
            trial = st.trials[d.trial_id]
            if trial.status in _STOPPABLE:
                intent = StopIntent.PAUSE if isinstance(d, PauseTrial) else StopIntent.STOP
                self._commit(StopRequested(now, d.trial_id, intent, reason=d.reason))
                self.executor.request_stop(d.trial_id)
        elif isinstance(d, ResizeTrial):
            trial = st.trials[d.trial_id]
            if trial.status not in _STOPPABLE:
                raise SchedulerError(f"{d}: trial is {trial.status}")
            grow = d.atoms - len(trial.atoms)
            if grow > st.free_atoms:
                raise SchedulerError(f"{d}: needs {grow} more atoms, {st.free_atoms} free")
            extra: tuple[str, ...] = ()
            if grow > 0:
                if self._single_node:  # a trial that is one process grows only on its own node
                    extra = st.atom_pool.free_on(node_of(trial.atoms[0]))[:grow]
                    if not extra:
                        return
                else:
                    extra = st.atom_pool.choose(grow, near=trial.atoms)
            atoms = len(trial.atoms) + len(extra) if grow > 0 else d.atoms
            self._commit(StopRequested(now, d.trial_id, StopIntent.RESIZE, atoms, extra, d.reason))
            self.executor.request_stop(d.trial_id)
        elif isinstance(d, CloseEntrance):
            self._commit(EntranceClosed(now, d.reason))
        else:
            raise SchedulerError(f"unknown decision {d!r}")

    @property
    def _single_node(self) -> bool:
        """Whether the executor needs each trial on one node (processes that are not distributed)."""
        return not self.executor.spans_nodes

    def _launch(self, trial_id: str, n_atoms: int, reason: LaunchReason) -> None:
        st = self.state
        if n_atoms < 1 or n_atoms > st.free_atoms:
            raise SchedulerError(f"launch of {trial_id} on {n_atoms} atoms: {st.free_atoms} free")
        trial = st.trials[trial_id]
        atoms = st.atom_pool.choose(n_atoms, near=trial.atoms or trial.last_atoms, single_node=self._single_node)
        self._commit(Launched(self.clock.now(), trial_id, atoms, reason, trial.checkpoint_step))
        try:
            self.executor.launch(LaunchRequest(trial_id, trial.index, trial.config, atoms, trial.checkpoint_step,
                                               reason, trial.launches, self.scheduler.decision_steps()))
        except OSError as exc:  # the launch's files or processes could not be made: the environment's fault
            log.error("launch of %s failed: %s", trial_id, exc)
            self._commit(Exited(self.clock.now(), trial_id, ExitOutcome.ERRORED, trial.checkpoint_step,
                                f"could not launch: {exc}", retryable=True))  # retried at the next turn
            if exc.errno == errno.ENOSPC:
                raise  # a full disk: the run stops (see abort); --resume relaunches the trial

    def _commit(self, record: Record) -> None:
        self.journal.append(record)
        feed(record, self.state, self.scheduler, self.sampler)
        if self.on_record is not None:
            self.on_record(record, self.state)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
