"""How a launch ends: the words its exit line and the journal's ``exited`` record use, and what
a non-finite score may do (``metric.non_finite``)."""

from __future__ import annotations

from enum import Enum


class ExitOutcome(str, Enum):
    """How a launch ended, as its exit line and the journal's ``exited`` record say."""

    FINISHED = "finished"  # trained to R
    CHECKPOINTED = "checkpointed"  # stopped on request after its last checkpoint (pause, resize, deadline)
    ERRORED = "errored"  # raised, crashed, hung, or wrote what the controller refuses
    DIVERGED = "diverged"  # reported a NaN or infinite score (metric.non_finite: stop)

    def __str__(self) -> str:
        return self.value


EXIT_OUTCOMES = tuple(outcome.value for outcome in ExitOutcome)
NON_FINITE_POLICIES = ("stop", "error")  # metric.non_finite: a NaN / inf report ends the launch diverged | errored
