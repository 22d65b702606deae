"""Workloads the simulator replays: each trial follows one learning curve from a finite pool.

``synthetic``: the authors' curve; ``trace``: recorded curves (``trial,step,score[,time]``); ``configs``:
recorded curves with their configurations table.

May import: ``core`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import numpy as np

from hpcsched.core.mode import Mode
from hpcsched.core.scaling import Scaling


@dataclass(frozen=True)
class Curve:
    """A trial's reports: at ``steps[i]`` it reports ``scores[i]``, after ``work[i]`` one-atom seconds;
    ``config``: the recorded configuration it was trained with, where a table says (workloads.configs)."""

    key: str
    steps: np.ndarray
    scores: np.ndarray
    work: np.ndarray
    config: Mapping[str, Any] | None = None

    def best_within(self, work_budget: float, mode: str) -> float | None:
        """Best score among reports reachable with ``work_budget`` one-atom seconds."""
        n = int(np.searchsorted(self.work, work_budget, side="right"))
        if n == 0:
            return None
        return Mode(mode).best(self.scores[:n])


class Workload(Protocol):
    """A pool of distinct curves; trial ``i`` of a run replays ``curve(i, its config)``."""

    size: int
    median_step: float  # seconds of a median step of the pool's curves on one atom

    def curve(self, index: int, config: Mapping[str, Any] | None = None) -> Curve: ...


def oracle_score(workload: Workload, *, atoms: int, deadline: float, startup: float,
                 scaling: Scaling, mode: str) -> float | None:
    """Best score any pool curve reaches trained alone on all atoms from time 0, with one startup."""
    budget = max(0.0, deadline - startup) * scaling.rate(atoms)
    if mode == "max" and hasattr(workload, "best_within"):
        return workload.best_within(budget, mode)
    best: float | None = None
    for i in range(workload.size):
        value = workload.curve(i).best_within(budget, mode)
        if value is not None and Mode(mode).better(value, best):
            best = value
    return best
