"""Putting a run together: the one place a controller is built and a journal replayed.

``hpcsched run`` (real backends, and the Python API through it), ``hpcsched simulate`` and the scale
benchmark build their controller here, so a run on the cluster and its simulation are assembled the
same way (unit tests of the loop itself still build a ``Controller`` by hand); a resumed run's records
are replayed through ``feed.replay``, as the live loop feeds them.
"""

from __future__ import annotations

from typing import Callable, Sequence

from hpcsched.core.clock import Clock
from hpcsched.loop.controller import Controller, RunSettings
from hpcsched.executors.base import Executor
from hpcsched.loop.feed import replay
from hpcsched.rundir.journal import Journal
from hpcsched.core.records import Record
from hpcsched.samplers import ConfigSampler, make_sampler
from hpcsched.schedulers import make_scheduler
from hpcsched.spec import Spec, Variant
from hpcsched.core.state import RunState


def build_controller(spec: Spec, variant: Variant, executor: Executor, clock: Clock, journal: Journal, *,
                     deadline: float, atom_ids: Sequence[str], records: Sequence[Record] = (),
                     sampler: ConfigSampler | None = None, trial_limit: int | None = None,
                     stop_margin: float = 0.0, wind_down_grace: float = 0.0,
                     on_record: Callable[[Record, RunState], None] | None = None) -> Controller:
    """The controller of one run of ``spec`` under ``variant``, its state, scheduler and sampler
    rebuilt from ``records`` (a resumed run's journal; empty for a new one).

    ``deadline`` is absolute on ``clock``; ``sampler`` defaults to the spec's; ``trial_limit`` caps
    the trials beside the spec's ``max_trials`` and the sampler's capacity (a simulation's pool of curves);
    ``stop_margin`` and ``wind_down_grace`` are a real run's (``controller:``); a simulation's are 0
    unless it mirrors a real run (``simulate_run(stop_margin=...)``)."""
    mode = spec.metric.mode
    state = RunState(mode)
    scheduler = make_scheduler(variant.scheduler, mode)
    sampler = sampler if sampler is not None else make_sampler(spec.sampler, spec.space, spec.seed, mode,
                                                               R=variant.scheduler.R)
    replay(records, state, scheduler, sampler)
    limits = [n for n in (spec.max_trials, sampler.capacity, trial_limit) if n is not None]
    settings = RunSettings(name=spec.name, variant=variant.name, spec_digest=spec.digest, seed=spec.seed,
                           deadline=deadline, atom_ids=tuple(atom_ids), max_trials=min(limits) if limits else None,
                           metric=spec.metric.name, stop_margin=stop_margin, wind_down_grace=wind_down_grace,
                           max_failures=spec.controller.max_failures)
    return Controller(settings, scheduler, executor, clock, journal, sampler, state, on_record=on_record)
