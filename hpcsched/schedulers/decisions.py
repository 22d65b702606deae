"""What schedulers see (Situation, TrialView) and what they return (typed decisions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

from hpcsched.core.records import Record
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.core.state import TrialView


@dataclass(frozen=True)
class Situation:
    """The run at one moment, as the scheduler may see it."""

    now: float
    started_at: float
    deadline: float
    total_atoms: int
    free_atoms: int
    trials_left: int | None  # how many new trials may still be started (None: unlimited)

    @property
    def time_left(self) -> float:
        return self.deadline - self.now


@dataclass(frozen=True)
class StartTrial:
    """Start a new trial (the controller draws its config) on ``atoms`` atoms."""

    atoms: int


@dataclass(frozen=True)
class ResumeTrial:
    """Resume (promote) a paused trial from its checkpoint on ``atoms`` atoms."""

    trial_id: str
    atoms: int


@dataclass(frozen=True)
class PauseTrial:
    """Checkpoint and stop a trial; it may be resumed later."""

    trial_id: str
    reason: str = ""


@dataclass(frozen=True)
class StopTrial:
    """Checkpoint and stop a trial for good."""

    trial_id: str
    reason: str = ""


@dataclass(frozen=True)
class ResizeTrial:
    """Checkpoint a running trial and relaunch it on ``atoms`` atoms."""

    trial_id: str
    atoms: int
    reason: str = ""


@dataclass(frozen=True)
class CloseEntrance:
    """Stop exploring: no new trials or promotions from now on."""

    reason: str


Decision = Union[StartTrial, ResumeTrial, PauseTrial, StopTrial, ResizeTrial, CloseEntrance]


def new_trials(slots: int, atoms: int, trials_left: int | None) -> list[StartTrial]:
    """``slots`` new trials on ``atoms`` atoms each, no more than ``trials_left`` (None: unlimited)."""
    count = max(0, slots if trials_left is None else min(slots, trials_left))
    return [StartTrial(atoms)] * count


def rung_steps(milestones: list[int] | tuple[int, ...], max_steps: int) -> DecisionSteps:
    """Pauses at the rungs below R (at R a trial ends anyway)."""
    return DecisionSteps(tuple(sorted(m for m in milestones if m < max_steps)))


class Scheduler(Protocol):
    """A pure policy: it observes records and returns decisions; it touches no process, file or clock."""

    def decision_steps(self) -> DecisionSteps:
        """Where trials should wait for a verdict after reporting (see DecisionSteps)."""

    def observe(self, record: Record, trial: TrialView | None) -> None:
        """Update internal bookkeeping from one journal record (``trial``: its view after the record)."""

    def decide(self, situation: Situation) -> list[Decision]:
        """Decisions for now; called after every event and whenever atoms may be free."""

    def next_decision_time(self, situation: Situation) -> float:
        """When a decision may fall due with no new record (a time-based rule: the entrance closing);
        math.inf when only records change what it decides. The loop wakes then, on every backend,
        so a simulated run acts at the moment a real one, which decides at every poll, does."""
