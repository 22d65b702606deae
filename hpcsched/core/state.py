"""RunState: the state of a run, rebuilt by replaying journal records in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from hpcsched.core.atoms import AtomPool
from hpcsched.core.failures import MAX_RETRIES, LaunchStreaks
from hpcsched.core.mode import MODES, Mode
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.core.records import (ControllerResumed, ControllerStopped, EntranceClosed, Exited, Launched, LaunchReason,
                                   Record, Reported, RunExtended, RunFinished, RunStarted, Running, StopIntent,
                                   StopRequested, TrialCreated)


class TrialStatus(str, Enum):
    """Where a trial is in its life; ``RunState`` moves it, ``status`` and the frames show it."""

    CREATED = "created"
    LAUNCHING = "launching"  # atoms given, process starting (setup, checkpoint restore)
    RUNNING = "running"
    STOPPING = "stopping"  # asked to checkpoint and exit
    PAUSED = "paused"  # checkpointed; may be resumed
    COMPLETED = "completed"  # trained to the end of its curve (R)
    TERMINATED = "terminated"  # stopped for good before R (a stop decision, a diverged score)
    ERRORED = "errored"

    def __str__(self) -> str:
        return self.value


LIVE = frozenset({TrialStatus.LAUNCHING, TrialStatus.RUNNING, TrialStatus.STOPPING})  # statuses that hold atoms
STATUSES = tuple(TrialStatus)


@dataclass(frozen=True)
class TrialView:
    """What a scheduler may know of one trial at one moment."""

    trial_id: str
    status: TrialStatus
    atoms: int
    step: int
    last_score: float | None
    run_time: float  # seconds spent running (startups excluded), over all launches
    step_time: float | None  # last measured seconds per step on the current atoms
    reports_since_launch: int


@dataclass
class TrialState:
    """Mutable per-trial bookkeeping inside RunState."""

    trial_id: str
    index: int
    config: dict[str, Any]
    created_at: float
    status: TrialStatus = TrialStatus.CREATED
    atoms: tuple[str, ...] = ()
    last_atoms: tuple[str, ...] = ()  # the atoms of its last launch (to relaunch near them)
    reserved: tuple[str, ...] = ()  # extra atoms held for a pending resize
    intent: StopIntent | None = None  # why a stop was requested
    relaunch_atoms: int = 0  # >0: paused only to be relaunched at once on this many atoms
    step: int = 0
    checkpoint_step: int = 0
    last_score: float | None = None
    last_metrics: dict[str, Any] = field(default_factory=dict)  # reported with the last score
    best_score: float | None = None
    best_step: int | None = None
    best_checkpoint: str = ""  # checkpoint file of the best report that saved one
    best_checkpoint_score: float | None = None
    best_checkpoint_step: int | None = None
    launched_at: float | None = None
    running_since: float | None = None
    run_time_done: float = 0.0
    mark_t: float = 0.0
    mark_step: int = 0
    step_time: float | None = None
    reports_since_launch: int = 0
    launches: int = 0
    resizes: int = 0
    startups: list[float] = field(default_factory=list)
    error: str = ""
    ended_at: float | None = None
    retries: int = 0  # relaunches after environment errors in a row from ...
    retry_step: int = -1  # ... this checkpoint step

    def run_time(self, now: float) -> float:
        running = (now - self.running_since) if self.running_since is not None else 0.0
        return self.run_time_done + max(0.0, running)


class RunState:
    """Trials, atoms and best result of a run; change it only through ``apply(record)``."""

    def __init__(self, mode: str = "max"):
        if mode not in MODES:
            raise ValueError(f"mode must be max or min, got {mode!r}")
        self.mode = Mode(mode)
        self.started: RunStarted | None = None
        self.finished: RunFinished | None = None
        self.stopped: ControllerStopped | None = None  # the controller stopped (a signal) and has not resumed
        self.extensions: list[RunExtended] = []
        self.pool: AtomPool | None = None
        self.trials: dict[str, TrialState] = {}
        self.counts: dict[TrialStatus, int] = {s: 0 for s in TrialStatus}
        self.best_score: float | None = None
        self.best_trial: str | None = None
        self.best_step: int | None = None
        self.entrance_closed_at: float | None = None
        self.failures = LaunchStreaks()  # launches that errored before their first report, in a row
        self.retrying: set[str] = set()  # paused after an environment error, to be relaunched on its atoms
        self.resizes = 0
        self.promotions = 0
        self.pauses = 0
        self.now = 0.0
        self._apply: dict[type, Callable[[Any], None]] = {
            RunStarted: self._run_started, TrialCreated: self._trial_created, Launched: self._launched,
            Running: self._running, Reported: self._reported, StopRequested: self._stop_requested,
            Exited: self._exited, ControllerResumed: self._controller_resumed,
            EntranceClosed: self._entrance_closed, RunFinished: self._run_finished,
            ControllerStopped: self._controller_stopped, RunExtended: self._run_extended,
        }

    # ------------------------------------------------------------ queries

    @property
    def live_count(self) -> int:
        return sum(self.counts[s] for s in LIVE)

    @property
    def deadline(self) -> float | None:
        """The run's deadline: run_started's, or the last extension's."""
        if self.extensions:
            return self.extensions[-1].deadline
        return self.started.deadline if self.started else None

    @property
    def free_atoms(self) -> int:
        return self.pool.free_count if self.pool else 0

    @property
    def total_atoms(self) -> int:
        return self.pool.total if self.pool else 0

    @property
    def atom_pool(self) -> AtomPool:
        """The run's atoms (known from its run_started record on)."""
        if self.pool is None:
            raise ValueError("the journal has no run_started record before this one")
        return self.pool

    def view(self, trial_id: str) -> TrialView:
        t = self.trials[trial_id]
        return TrialView(t.trial_id, t.status, len(t.atoms), t.step, t.last_score, t.run_time(self.now),
                         t.step_time, t.reports_since_launch)

    def better(self, a: float, b: float | None) -> bool:
        """True when score ``a`` beats ``b`` under the run's mode."""
        return self.mode.better(a, b)

    # ------------------------------------------------------------ replay

    @classmethod
    def replayed(cls, records: list[Record]) -> "RunState":
        """The state a journal's records describe (its mode from run_started; max without one)."""
        started = next((r for r in records if isinstance(r, RunStarted)), None)
        state = cls(started.mode if started is not None else "max")
        for record in records:
            state.apply(record)
        return state

    def apply(self, record: Record) -> None:
        """Advance the state by one record (the only way to change it)."""
        self.now = max(self.now, record.t)
        self._apply[type(record)](record)

    def _trial(self, trial_id: str) -> TrialState:
        trial = self.trials.get(trial_id)
        if trial is None:
            raise ValueError(f"no trial {trial_id!r} was created before this record")
        return trial

    def _set_status(self, trial: TrialState, status: TrialStatus) -> None:
        self.counts[trial.status] -= 1
        self.counts[status] += 1
        trial.status = status

    def _run_started(self, r: RunStarted) -> None:
        self.started = r
        self.pool = AtomPool(r.atom_ids or tuple(str(i) for i in range(r.atoms)))

    def _trial_created(self, r: TrialCreated) -> None:
        if r.trial in self.trials:
            raise ValueError(f"trial {r.trial} created twice")
        self.trials[r.trial] = TrialState(r.trial, r.index, dict(r.config), r.t)
        self.counts[TrialStatus.CREATED] += 1

    def _launched(self, r: Launched) -> None:
        t = self._trial(r.trial)
        if t.status in LIVE:
            raise ValueError(f"trial {r.trial} launched while {t.status}")
        self.atom_pool.take(r.atoms)
        if r.reason == LaunchReason.RESUME:
            self.promotions += 1
        t.atoms, t.intent, t.relaunch_atoms = tuple(r.atoms), None, 0
        t.launched_at, t.launches, t.reports_since_launch = r.t, t.launches + 1, 0
        t.error = ""  # a trial relaunched after an environment error runs again
        self.retrying.discard(r.trial)
        t.step = t.checkpoint_step = r.from_step
        self.failures.launched(r.trial)
        self._set_status(t, TrialStatus.LAUNCHING)

    def _running(self, r: Running) -> None:
        t = self._trial(r.trial)
        t.startups.append(r.startup)
        t.running_since, t.mark_t, t.mark_step = r.t, r.t, t.step
        if t.status == TrialStatus.LAUNCHING:
            self._set_status(t, TrialStatus.RUNNING)

    def _reported(self, r: Reported) -> None:
        t = self._trial(r.trial)
        if r.step > t.mark_step and t.running_since is not None:
            t.step_time = (r.t - t.mark_t) / (r.step - t.mark_step)
            t.mark_t, t.mark_step = r.t, r.step
        t.step = max(t.step, r.step)
        t.last_score = r.score
        t.last_metrics = r.metrics
        t.reports_since_launch += 1
        self.failures.reported(r.trial)
        if self.better(r.score, t.best_score):
            t.best_score, t.best_step = r.score, r.step
        if self.better(r.score, self.best_score):
            self.best_score, self.best_trial, self.best_step = r.score, r.trial, r.step
        if r.checkpoint:
            t.checkpoint_step = max(t.checkpoint_step, r.step)
            if self.better(r.score, t.best_checkpoint_score):
                t.best_checkpoint, t.best_checkpoint_score, t.best_checkpoint_step = r.checkpoint, r.score, r.step

    def _stop_requested(self, r: StopRequested) -> None:
        t = self._trial(r.trial)
        if t.status not in LIVE:
            raise ValueError(f"stop requested for trial {r.trial} while {t.status}")
        if r.extra:
            self.atom_pool.take(r.extra)
            t.reserved = tuple(r.extra)
        t.intent = r.intent
        t.relaunch_atoms = r.atoms if r.intent in (StopIntent.RESIZE, StopIntent.RECOVER) else 0
        if t.status != TrialStatus.STOPPING:
            self._set_status(t, TrialStatus.STOPPING)

    def _exited(self, r: Exited) -> None:
        t = self._trial(r.trial)
        if t.status not in LIVE:
            raise ValueError(f"trial {r.trial} exited while {t.status}")
        if t.running_since is not None:
            t.run_time_done += max(0.0, r.t - t.running_since)
            t.running_since = None
        self.atom_pool.release(t.atoms + t.reserved)
        t.last_atoms = t.atoms + t.reserved
        t.atoms, t.reserved = (), ()
        if r.outcome == ExitOutcome.CHECKPOINTED or r.outcome == ExitOutcome.FINISHED:
            t.checkpoint_step = max(t.checkpoint_step, r.step)
        t.step = max(t.step, r.step)
        t.ended_at = r.t
        self.failures.exited(r.trial, r.outcome == ExitOutcome.ERRORED, r.error)
        retry = r.outcome == ExitOutcome.ERRORED and r.retryable and self._may_retry(t)
        if r.outcome == ExitOutcome.ERRORED and not retry:
            t.error, t.relaunch_atoms = r.error, 0
            self._set_status(t, TrialStatus.ERRORED)
        elif retry:  # the environment's fault: as if it had checkpointed at its last checkpoint
            t.error = r.error
            if t.intent == StopIntent.STOP:
                t.relaunch_atoms = 0
                self._set_status(t, TrialStatus.TERMINATED)
            else:  # asked to pause (or the deadline): paused; else relaunched on its atoms (retrying)
                if t.intent not in (StopIntent.PAUSE, StopIntent.DEADLINE, StopIntent.RESIZE, StopIntent.RECOVER):
                    t.relaunch_atoms = len(t.last_atoms)
                elif t.intent in (StopIntent.PAUSE, StopIntent.DEADLINE):
                    t.relaunch_atoms = 0
                self._set_status(t, TrialStatus.PAUSED)
                if t.relaunch_atoms:
                    self.retrying.add(t.trial_id)
        elif r.outcome == ExitOutcome.DIVERGED:  # never resumed: its earlier checkpoints still count
            t.error, t.relaunch_atoms = r.error, 0
            self._set_status(t, TrialStatus.TERMINATED)
        elif r.outcome == ExitOutcome.FINISHED or t.intent == StopIntent.STOP:
            t.relaunch_atoms = 0
            self._set_status(t, TrialStatus.COMPLETED if r.outcome == ExitOutcome.FINISHED else TrialStatus.TERMINATED)
        else:
            if t.intent == StopIntent.RESIZE and t.relaunch_atoms:
                t.resizes += 1
                self.resizes += 1
            elif t.intent == StopIntent.PAUSE:
                self.pauses += 1
            self._set_status(t, TrialStatus.PAUSED)

    def _may_retry(self, t: TrialState) -> bool:
        """Count a retry after an environment error: at most MAX_RETRIES in a row from one checkpoint step."""
        if t.checkpoint_step > t.retry_step:
            t.retries, t.retry_step = 0, t.checkpoint_step
        t.retries += 1
        return t.retries <= MAX_RETRIES

    def _controller_resumed(self, r: ControllerResumed) -> None:
        if self.live_count:
            raise ValueError("controller resumed while trials were still live")
        self.pool = AtomPool(r.atom_ids)
        self.finished = None
        self.stopped = None
        self.failures.restart()
        for trial in self.trials.values():  # a new controller (space freed, a new allocation) tries again
            trial.retries = 0

    def _entrance_closed(self, r: EntranceClosed) -> None:
        self.entrance_closed_at = r.t

    def _run_finished(self, r: RunFinished) -> None:
        self.finished = r

    def _controller_stopped(self, r: ControllerStopped) -> None:
        self.stopped = r

    def _run_extended(self, r: RunExtended) -> None:
        self.extensions.append(r)
        self.finished = None  # it goes on
