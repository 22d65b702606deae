"""Simulated experiments: the real controller loop, a virtual clock and the simulated executor.

``simulate_experiment`` runs every matrix cell x variant x seed, and returns one summary row
per run (best_score, oracle_score, regret, trials_started, resizes, ...).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from hpcsched.core.clock import VirtualClock
from hpcsched.loop.assembly import build_controller
from hpcsched.core.errors import SpecError
from hpcsched.executors.sim import SimExecutor
from hpcsched.rundir.journal import JsonlJournal, NullJournal
from hpcsched.rundir.sim_layout import journal_path, summary_path
from hpcsched.core.records import Record
from hpcsched.samplers import ConfigSampler, make_sampler, proposed_by_model
from hpcsched.core.space import Space
from hpcsched.spec import Experiment, Spec, Variant
from hpcsched.core.state import RunState, TrialStatus
from hpcsched.workloads import Workload, oracle_score
from hpcsched.workloads.synthetic import CURVE_PARAMETERS, SyntheticWorkload
from hpcsched.workloads.configs import ConfigTraceWorkload, derive_space, load_configs
from hpcsched.workloads.trace import TraceWorkload, load_trace

STARTUP_STREAM = 7  # the seeded stream a simulated run draws its startups from (a list in the workload)
CHUNKS_PER_JOB = 4  # parallel runs go out in this many chunks per process: progress, and balance
SUMMARY_COLUMNS = ("variant", "seed", "best_score", "oracle_score", "regret", "trials_started", "resizes",
                   "pauses", "promotions", "completed", "entrance_closed_at", "best_trial", "best_step", "idle_steps")


@dataclass(frozen=True)
class SimTask:
    cell: int
    params: tuple[tuple[str, Any], ...]
    spec: Spec
    variant: Variant
    seed: int
    event_log: Path | None


def check_simulable(spec: Spec) -> None:
    """Raise SpecError unless the spec can be simulated."""
    problems = []
    if spec.workload is None:
        problems.append("workload: required for simulation (kind: synthetic or trace)")
    if spec.deadline is None:
        problems.append("deadline: required for simulation")
    if not isinstance(spec.resources.atoms, int):
        problems.append(f"resources.atoms: a simulation needs a number of atoms, got {spec.resources.atoms!r}")
    if problems:
        raise SpecError(problems, str(spec.source or spec.name))


def build_workload(spec: Spec, seed: int, max_steps: int, traces: dict) -> Workload:
    w = spec.workload
    if w.kind == "synthetic":
        return SyntheticWorkload(seed=seed, max_steps=max_steps, step_time=w.step_time, size=w.trials, noise=w.noise,
                                 config_ranges=curve_ranges(spec.space))
    key = (w.path, w.step_time)
    if key not in traces:
        traces[key] = load_trace(w.path, w.step_time)
    if w.configs is not None:
        if w.configs not in traces:
            traces[w.configs] = load_configs(w.configs)
        space = spec.space or derive_space(traces[w.configs])
        return ConfigTraceWorkload(traces[key], traces[w.configs], space, seed=seed, max_steps=max_steps)
    return TraceWorkload(traces[key], seed=seed, max_steps=max_steps)


def curve_ranges(space: Space | None) -> dict[str, tuple[float, float]]:
    """The (lowest, highest) value the space gives each synthetic curve parameter it names."""
    ranges: dict[str, tuple[float, float]] = {}
    for param in space.params if space is not None else ():
        if param.name in CURVE_PARAMETERS:
            values = [float(v) for v in param.values] if param.values else [param.low, param.high]
            ranges[param.name] = (min(values), max(values))
    return ranges


def typical_startup(startup: float | tuple[float, ...]) -> float:
    """One launch's startup: the workload's, or the median of the measured ones it draws from."""
    return float(np.median(startup)) if isinstance(startup, tuple) else startup


class IdleAtoms:
    """Atom-seconds with no trial on them (running, launching or stopping) while some trial could take
    them (a new one of the pool's ``trials``, or a paused one), before ``horizon`` (``simulate_run`` sets
    both from the workload): fed every record after the state applied it (``build_controller``'s
    ``on_record``)."""

    def __init__(self, horizon: float = math.inf, trials: int | None = None):
        self.horizon = horizon
        self.trials = trials
        self.seconds = 0.0
        self._since = 0.0
        self._free = 0

    def __call__(self, record: Record, state: RunState) -> None:
        self.until(record.t)
        waiting = state.counts[TrialStatus.PAUSED] > 0 or self.trials is None or len(state.trials) < self.trials
        self._free = state.free_atoms if state.pool is not None and waiting else 0

    def until(self, t: float) -> None:
        """Count the atoms free since the last record as idle up to ``t`` (within the horizon)."""
        self.seconds += self._free * max(0.0, min(t, self.horizon) - min(self._since, self.horizon))
        self._since = max(self._since, t)


def idle_horizon(spec: Spec, workload: Workload) -> float:
    """Until when an idle atom is a loss: a trial started on it then could still report a step
    (a startup and a median step on one atom) before the deadline."""
    w = spec.workload
    return spec.deadline - typical_startup(w.startup) - workload.median_step / w.scaling.rate(1)


def simulate_run(spec: Spec, variant: Variant, seed: int, event_log: Path | None = None,
                 traces: dict | None = None, stop_margin: float = 0.0,
                 idle: IdleAtoms | None = None) -> tuple[RunState, Workload]:
    """One simulated run; returns its final state and the workload it replayed.

    ``stop_margin``: plan to the deadline less this and ask trials to stop then, as a real run does
    with ``controller.stop_margin`` (steps in progress end until the deadline); 0 by default.
    ``idle``: counts the atoms' idle time (its horizon set here, from the workload)."""
    check_simulable(spec)
    traces = {} if traces is None else traces
    w = spec.workload
    workload = build_workload(spec, seed, variant.scheduler.R, traces)
    clock = VirtualClock(0.0)
    executor = SimExecutor(workload, clock, w.scaling, w.startup, w.step_overhead, w.stop_latency,
                           rng=np.random.default_rng([seed, STARTUP_STREAM]))
    sampler = _CurveNaming(make_sampler(spec.sampler, spec.space, seed, spec.metric.mode, R=variant.scheduler.R),
                           executor)
    journal = JsonlJournal(event_log, durable=False) if event_log else NullJournal()
    try:
        controller = build_controller(replace(spec, seed=seed), variant, executor, clock, journal,
                                      deadline=spec.deadline, atom_ids=[str(i) for i in range(spec.resources.atoms)],
                                      sampler=sampler, trial_limit=workload.size, stop_margin=stop_margin,
                                      on_record=idle)
        if idle is not None:
            idle.horizon = idle_horizon(spec, workload)
            idle.trials = min(n for n in (workload.size, spec.max_trials) if n is not None)
        state = controller.run()
        if idle is not None:
            idle.until(spec.deadline)
    finally:
        journal.close()
    return state, workload


class _CurveNaming:
    """The spec's sampler, with the key of the curve the trial replays added to its configuration
    (and, where a configurations table says, the configuration that curve was recorded with; a sampler
    that can ``choose`` picks among the table's unused configurations)."""

    def __init__(self, sampler: ConfigSampler, executor: SimExecutor):
        self.sampler = sampler
        self.executor = executor
        self.capacity = sampler.capacity

    def config(self, index: int) -> dict[str, Any]:
        choose = getattr(self.sampler, "choose", None)
        pool = getattr(self.executor.workload, "unused_configs", None)
        if choose is not None and pool is not None:  # the sampler picks among the recorded configurations
            candidates = pool()
            config = dict(candidates[choose(index, candidates)])
        else:
            config = self.sampler.config(index)
        curve = self.executor.curve(index, config)
        return {**config, **(curve.config or {}), "curve": curve.key}

    def from_model(self, index: int) -> bool:
        return proposed_by_model(self.sampler, index)

    def observe(self, record: Record) -> None:
        self.sampler.observe(record)


def _run_task(task: SimTask, traces: dict | None = None) -> dict[str, Any]:
    spec = task.spec
    if task.event_log is not None:
        task.event_log.parent.mkdir(parents=True, exist_ok=True)
    idle = IdleAtoms()
    state, workload = simulate_run(spec, task.variant, task.seed, task.event_log, traces, idle=idle)
    w = spec.workload
    oracle = oracle_score(workload, atoms=spec.resources.atoms, deadline=spec.deadline,
                          startup=typical_startup(w.startup), scaling=w.scaling, mode=spec.metric.mode)
    best = state.best_score
    row: dict[str, Any] = {key: value for key, value in task.params}
    row.update(variant=task.variant.name, seed=task.seed, best_score=best, oracle_score=oracle,
               regret=(abs(oracle - best) if best is not None and oracle is not None else None),
               trials_started=len(state.trials), resizes=state.resizes, pauses=state.pauses,
               promotions=state.promotions, completed=state.counts[TrialStatus.COMPLETED],
               entrance_closed_at=state.entrance_closed_at, best_trial=state.best_trial,
               best_step=state.best_step,
               idle_steps=idle.seconds / spec.resources.atoms / workload.median_step if workload.median_step else 0.0)
    return row


def _run_chunk(tasks: list[SimTask]) -> list[dict[str, Any]]:
    traces: dict = {}
    return [_run_task(t, traces) for t in tasks]


def plan(experiment: Experiment, seeds: list[int], out: Path | None, event_log: bool) -> list[SimTask]:
    """Every (cell, variant, seed) of the experiment, in a stable order."""
    for cell in experiment.cells:
        check_simulable(cell.spec)
    tasks = []
    for i, cell in enumerate(experiment.cells):
        for variant in cell.spec.variants:
            for seed in seeds:
                log = None
                if event_log and out is not None:
                    log = journal_path(out, cell.label, variant.name, seed)
                tasks.append(SimTask(i, cell.params, cell.spec, variant, seed, log))
    return tasks


def simulate_experiment(experiment: Experiment, seeds: list[int], out: Path | None = None,
                        event_log: bool = True, jobs: int = 1,
                        on_done: Callable[[SimTask], None] | None = None) -> pd.DataFrame:
    """Run all tasks (in ``jobs`` processes) and return the summary frame (also written to out/summary.csv).
    ``on_done(task)`` is called as each task finishes (progress)."""
    tasks = plan(experiment, seeds, out, event_log)
    if out is not None and event_log:
        for task in tasks:
            if task.event_log.exists():
                task.event_log.unlink()
    jobs = max(1, min(jobs, len(tasks)))
    rows: list[Any] = [None] * len(tasks)
    if jobs == 1:
        traces: dict = {}
        for p, task in enumerate(tasks):
            rows[p] = _run_task(task, traces)
            if on_done is not None:
                on_done(task)
    else:  # chunks of neighbouring tasks (they share traces), as many as keep every process busy
        size = max(1, math.ceil(len(tasks) / (jobs * CHUNKS_PER_JOB)))
        chunks = [list(range(i, min(i + size, len(tasks)))) for i in range(0, len(tasks), size)]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_run_chunk, [tasks[p] for p in chunk]): chunk for chunk in chunks}
            for future in as_completed(futures):
                for p, row in zip(futures[future], future.result()):
                    rows[p] = row
                    if on_done is not None:
                        on_done(tasks[p])
    frame = pd.DataFrame(rows)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        frame.to_csv(summary_path(out), index=False)
    return frame


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
