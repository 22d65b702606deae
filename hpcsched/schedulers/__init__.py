"""Scheduling policies: pure objects that observe records and return typed decisions."""

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
