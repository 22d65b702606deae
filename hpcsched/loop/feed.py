"""The one order in which a journal record reaches what learns from it: the run's state first, then
the scheduler (with the trial's view after the record), then the sampler.

The live loop (``Controller``) and a ``--resume`` replay both go through ``feed``, which is why a
resumed run decides and proposes what the uninterrupted one would have.
"""

from __future__ import annotations

from typing import Iterable

from hpcsched.core.records import Record
from hpcsched.samplers import ConfigSampler
from hpcsched.schedulers.decisions import Scheduler
from hpcsched.core.state import RunState


def feed(record: Record, state: RunState, scheduler: Scheduler, sampler: ConfigSampler | None = None) -> None:
    """Hand one journal record to the state, then the scheduler, then the sampler."""
    state.apply(record)
    trial_id = getattr(record, "trial", None)
    scheduler.observe(record, state.view(trial_id) if trial_id is not None else None)
    if sampler is not None:
        sampler.observe(record)


def replay(records: Iterable[Record], state: RunState, scheduler: Scheduler,
           sampler: ConfigSampler | None = None) -> None:
    """Rebuild state, scheduler and sampler from a journal's records, in order."""
    for record in records:
        feed(record, state, scheduler, sampler)
