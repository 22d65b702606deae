"""Where a trial waits for the controller's verdict: the policy says, the executor tells the trial."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecisionSteps:
    """The steps after which a policy may pause or stop a trial on that trial's own report.

    A real trial waits there, after its checkpoint, for the controller's verdict, so a pause
    decided at step k leaves the trial at step k (the simulator's assumption). ``every_step``:
    any report may be one (speculative retrospective pauses)."""

    steps: tuple[int, ...] = ()
    every_step: bool = False

    def __contains__(self, step: int) -> bool:
        return self.every_step or step in self.steps
