"""Scheduling policies: pure objects that observe records and return typed decisions.

``decisions``: what a policy sees and returns; ``asha``, ``hypersched``, ``baselines`` (random search,
one-epoch): the policies; the rest are HyperSched's parts (rungs, kept fractions, the entrance, pace,
live trials, allocation) and running rankings (``sorted_scores``).

May import: ``core`` and ``spec`` (``SchedulerSpec``). Never a file format (``rundir``), the trial side,
an executor, the loop or the CLI: a policy touches no process, file or clock.
"""

from __future__ import annotations

from hpcsched.schedulers.decisions import Scheduler
from hpcsched.spec import SchedulerSpec


def make_scheduler(spec: SchedulerSpec, mode: str) -> Scheduler:
    """The policy named by ``spec.kind`` (asha | hypersched | random | one_epoch)."""
    if spec.kind == "asha":
        from hpcsched.schedulers.asha import ASHA

        return ASHA(spec, mode)
    if spec.kind == "hypersched":
        from hpcsched.schedulers.hypersched import HyperSched

        return HyperSched(spec, mode)
    if spec.kind == "random":
        from hpcsched.schedulers.baselines import RandomSearch

        return RandomSearch(spec, mode)
    if spec.kind == "one_epoch":
        from hpcsched.schedulers.baselines import OneEpoch

        return OneEpoch(spec, mode)
    raise ValueError(f"unknown scheduler kind {spec.kind!r}")
