"""Drive a scheduler with hand-built records, as the controller would (state first, then observe)."""

from __future__ import annotations

from dataclasses import replace

from hpcsched.loop.feed import feed
from hpcsched.core.records import Exited, Launched, Reported, RunStarted, Running, StopRequested, TrialCreated
from hpcsched.schedulers import make_scheduler
from hpcsched.schedulers.decisions import Situation
from hpcsched.spec import SchedulerSpec
from hpcsched.core.state import RunState


class Harness:
    def __init__(self, atoms: int = 4, deadline: float = 100.0, mode: str = "max", **spec_fields):
        self.spec = replace(SchedulerSpec(), **spec_fields)
        self.state = RunState(mode)
        self.scheduler = make_scheduler(self.spec, mode)
        self.deadline = deadline
        self.now = 0.0
        self.trials_left: int | None = None
        self.commit(RunStarted(0.0, "test", deadline, atoms, 0, "digest", "v"))

    def commit(self, record) -> None:
        feed(record, self.state, self.scheduler)

    def situation(self) -> Situation:
        return Situation(self.now, 0.0, self.deadline, self.state.total_atoms, self.state.free_atoms,
                         self.trials_left)

    def decide(self):
        return self.scheduler.decide(self.situation())

    # building blocks
    def start(self, trial: str, atoms: int = 1, startup: float = 0.0) -> None:
        if trial not in self.state.trials:
            self.commit(TrialCreated(self.now, trial, len(self.state.trials), {}))
            reason = "start"
        else:
            reason = "resume"
        ids = self.state.pool.choose(atoms)
        self.commit(Launched(self.now, trial, ids, reason, self.state.trials[trial].checkpoint_step))
        self.commit(Running(self.now + startup, trial, startup))

    def report(self, trial: str, step: int, score: float, t: float | None = None) -> None:
        if t is not None:
            self.now = t
        self.commit(Reported(self.now, trial, step, score))

    def pause(self, trial: str) -> None:
        self.commit(StopRequested(self.now, trial, "pause"))
        self.commit(Exited(self.now, trial, "checkpointed", self.state.trials[trial].step))

    def ask_to_pause(self, trial: str) -> None:
        """The controller applied a PauseTrial: the trial is stopping (it exits with ``commit_exit``)."""
        self.commit(StopRequested(self.now, trial, "pause"))

    def commit_exit(self, trial: str) -> None:
        self.commit(Exited(self.now, trial, "checkpointed", self.state.trials[trial].step))

    def resize(self, trial: str, atoms: int) -> None:
        """The controller applied a ResizeTrial: stop, exit and relaunch on ``atoms`` atoms."""
        held = len(self.state.trials[trial].atoms)
        extra = self.state.pool.choose(atoms - held) if atoms > held else ()
        self.commit(StopRequested(self.now, trial, "resize", atoms, extra))
        self.commit(Exited(self.now, trial, "checkpointed", self.state.trials[trial].step))
        ids = self.state.pool.choose(atoms)
        self.commit(Launched(self.now, trial, ids, "resize", self.state.trials[trial].checkpoint_step))
        self.commit(Running(self.now, trial, 0.0))
