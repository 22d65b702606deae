"""Planning back from the deadline: which trials are finalists, on how many atoms, and when to stop exploring.

A *finish plan* trains the ``K = total // a`` best candidates to R on ``a`` atoms each. It fits
when the slowest of them reaches R by the deadline: its remaining steps at the believed rate
of ``a`` atoms, plus a startup when it must be (re)launched on ``a`` atoms, and for a trial already
started, the stop that frees its seat first (its own, or the trial's it displaces). The plan chosen is
the one with the most finalists that fits; when none fits, the run is fidelity-limited (no
trial can be fully trained) and further exploration only lowers the fidelity the leaders reach.
Exploration closes when the chosen plan's slack (time left minus the time it needs) runs out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpcsched.scaling import Scaling
from hpcsched.schedulers.allocation import allowed_size


@dataclass(frozen=True)
class Candidate:
    """A trial that could be trained to the end (``trial_id`` None: a trial not started yet)."""

    trial_id: str | None
    step: int
    atoms: int  # atoms it holds now (0 when paused or not started)
    step_time: float | None = None  # its own measured seconds per step on one atom (None: the run's)


@dataclass(frozen=True)
class FinishPlan:
    atoms_each: int
    finalists: tuple[Candidate, ...]
    need: float  # seconds until the slowest finalist reaches R
    fits: bool  # whether ``need`` fits in the time left

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.trial_id for c in self.finalists if c.trial_id is not None)


def finish_time(candidate: Candidate, atoms: int, R: int, step_time: float, scaling: Scaling,
                startup: float, stop: float = 0.0) -> float:
    """Seconds for ``candidate`` to reach R on ``atoms`` atoms, at its own step time where measured,
    else at ``step_time``; unless it already runs on them, first a startup and, for a trial already
    started, a ``stop``: its own when it resizes, or the one of the trial it displaces when paused."""
    if candidate.atoms == atoms:
        restart = 0.0
    else:
        restart = startup + (stop if candidate.trial_id is not None else 0.0)
    own = candidate.step_time if candidate.step_time is not None else step_time
    return restart + max(0, R - candidate.step) * own / scaling.rate(atoms)


def allocation_sizes(cap: int, grid: int) -> list[int]:
    """Allocations a finalist may hold, smallest first."""
    return sorted({allowed_size(a, grid) for a in range(1, cap + 1)} - {0})


def plan_finish(ranked: list[Candidate], total: int, cap: int, grid: int, R: int, step_time: float,
                scaling: Scaling, startup: float, time_left: float, share: float = 1.0,
                stop: float = 0.0) -> FinishPlan:
    """The fitting plan with the most finalists (``ranked``: best candidates first, at least
    ``total`` of them or all there are); when none fits, the plan on the smallest allocation.
    ``share`` in (0, 1]: the fraction of the atoms' worth of finalists wanted (fewer when the
    ranking that picks them is trusted; the other atoms go on exploring)."""
    plans = []
    for a in allocation_sizes(cap, grid):
        k = max(1, math.ceil(max(1, total // a) * share - 1e-9))
        finalists = list(ranked[:k])
        finalists += [Candidate(None, 0, 0)] * (k - len(finalists))
        need = max(finish_time(c, a, R, step_time, scaling, startup, stop) for c in finalists)
        plan = FinishPlan(a, tuple(finalists), need, need <= time_left)
        if plan.fits:
            return plan
        plans.append(plan)
    return plans[0]  # allocation_sizes(cap >= 1, ...) always holds 1
