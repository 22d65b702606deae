"""The executor interface and the events executors report to the controller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from hpcsched.core.records import LaunchReason
from hpcsched.core.decision_steps import DecisionSteps


@dataclass(frozen=True)
class LaunchRequest:
    """Start (or restart from its checkpoint) one trial on the given atoms."""

    trial_id: str
    index: int
    config: dict[str, Any]
    atoms: tuple[str, ...]
    from_step: int
    reason: LaunchReason
    number: int = 1  # this trial's launch count, 1-based (names the launch: t0003-l2)
    decision_steps: DecisionSteps = DecisionSteps()  # where the trial waits for the verdict on its report


@dataclass(frozen=True)
class TrialStarted:
    """The trial finished setup and checkpoint restore; it is training now."""

    trial_id: str
    t: float


@dataclass(frozen=True)
class TrialReport:
    trial_id: str
    t: float
    step: int
    score: float
    checkpoint: str = ""  # file name of the checkpoint saved with this report
    metrics: dict[str, Any] = field(default_factory=dict)  # the other values reported with the score


@dataclass(frozen=True)
class TrialExit:
    """The trial's process ended: ``checkpointed`` (asked to stop, checkpoint saved),
    ``finished`` (ran to its end) or ``errored`` (crashed or killed; ``error`` says how)."""

    trial_id: str
    t: float
    outcome: str
    step: int = 0
    error: str = ""
    retryable: bool = False  # errored for the environment: relaunched from its last checkpoint


Event = Union[TrialStarted, TrialReport, TrialExit]


class Executor(Protocol):
    def launch(self, request: LaunchRequest) -> None:
        """Start the trial; its TrialStarted/TrialReport/TrialExit events follow through poll."""

    def request_stop(self, trial_id: str) -> None:
        """Ask the trial to finish its step, checkpoint and exit (a TrialExit follows)."""

    def poll(self, now: float) -> list[Event]:
        """Events that happened up to ``now``, in order."""

    def next_wakeup(self, now: float) -> float:
        """When the controller should poll next."""

    def decided(self) -> None:
        """The controller has acted on every event polled so far: trials waiting for a verdict
        on a report that led to no stop may go on."""

    def shutdown(self) -> None:
        """Kill whatever is still running (the controller is exiting)."""

    def recover(self, trial_id: str, launches: int, last_step: int, from_step: int) -> list[Event]:
        """After a controller restart: take over launch number ``launches`` of a trial that the
        journal says was live (ask it to stop); its reports newer than ``last_step``, then its exit."""

    @property
    def spans_nodes(self) -> bool:
        """Whether one trial may run on atoms of several nodes (False: each trial on one node)."""
