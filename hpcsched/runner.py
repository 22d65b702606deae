"""``hpcsched run``: a real experiment on a backend (local processes or SLURM steps).

Builds the run directory, executor, journal, state and scheduler around the one controller
loop, resumes from the journal with ``--resume``, prints progress, and writes result.json.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, TextIO

from hpcsched.clock import WallClock
from hpcsched.controller import Controller, RunSettings
from hpcsched.durations import format_duration
from hpcsched.errors import RunDirError, SpecError, UserError
from hpcsched.executors.launching import ProcessSettings
from hpcsched.journal import JsonlJournal, read_journal
from hpcsched.records import (ControllerResumed, EntranceClosed, Exited, Launched, Record, Reported,
                              RunFinished, RunStarted, StopRequested)
from hpcsched.rundir import RunDir
from hpcsched.schedulers import make_scheduler
from hpcsched.space import Sampler
from hpcsched.spec import Spec
from hpcsched.state import RunState
from hpcsched.trainables import check_trainable, resolve_reference


@dataclass(frozen=True)
class RunOptions:
    run_dir: Path | None = None
    backend: str = "local"
    deadline: float | None = None  # seconds from now (overrides the spec's)
    resume: bool = False
    variant: str | None = None
    quiet: bool = False


def default_run_dir(spec: Spec) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{spec.name}-{stamp}"


def run_experiment(spec: Spec, options: RunOptions, out: TextIO = sys.stdout) -> dict[str, Any]:
    """Run (or resume) the experiment to its deadline; return the result written to result.json."""
    if spec.trainable is None:
        raise SpecError(["trainable: required for a real run ('path/to/file.py:function' or 'module:function')"],
                        str(spec.source or spec.name))
    variant = spec.variant(options.variant)
    base_dir = spec.source.parent if spec.source else Path.cwd()
    trainable = resolve_reference(spec.trainable, base_dir)
    check_trainable(trainable)  # fails now, with the reason, rather than in every trial
    backend = backend_for(spec, options.backend)  # checks the resources before anything is made
    if backend.max_atoms_per_trial is not None:
        cap = min(backend.max_atoms_per_trial, variant.scheduler.max_atoms_per_trial or backend.max_atoms_per_trial)
        variant = replace(variant, scheduler=replace(variant.scheduler, max_atoms_per_trial=cap))
    run_dir, records = _open_run_dir(spec, options)
    journal = JsonlJournal(run_dir.journal, durable=True)  # held until the end: one controller per run
    try:
        if records:
            records = read_journal(run_dir.journal)  # as it is now that no other controller can write
        return _run(spec, options, variant, trainable, backend, run_dir, records, journal, out)
    finally:
        journal.close()


def _run(spec: Spec, options: RunOptions, variant, trainable: str, backend: "Backend", run_dir: RunDir,
         records: list[Record], journal: JsonlJournal, out: TextIO) -> dict[str, Any]:
    clock = WallClock()
    started = next((r for r in records if isinstance(r, RunStarted)), None)
    hard_end = backend.ends_at - ALLOCATION_SAFETY if backend.ends_at is not None else None
    if started is not None:
        deadline = started.deadline if hard_end is None else min(started.deadline, hard_end)
        if clock.now() >= deadline - spec.controller.stop_margin:
            raise RunDirError(f"{run_dir.path}: the run's deadline has passed "
                              f"({_iso(deadline)}); nothing to resume")
    else:
        seconds = options.deadline if options.deadline is not None else spec.deadline
        if seconds is None and hard_end is None:
            raise SpecError(["deadline: required (in the spec, or --deadline 30m)"], str(spec.source or spec.name))
        deadline = min(t for t in (clock.now() + seconds if seconds is not None else None, hard_end) if t is not None)

    executor = backend.make_executor(ProcessSettings(
        run_dir=run_dir.path, trainable=trainable, max_steps=variant.scheduler.R, metric=spec.metric.name,
        mode=spec.metric.mode, poll_interval=spec.controller.poll_interval, stop_grace=spec.controller.stop_grace),
        clock)
    atom_ids = executor.atom_ids()
    state = RunState(spec.metric.mode)
    scheduler = make_scheduler(variant.scheduler, spec.metric.mode)
    for record in records:
        state.apply(record)
        trial_id = getattr(record, "trial", None)
        scheduler.observe(record, state.view(trial_id) if trial_id is not None else None)
    sampler = Sampler(spec.space, spec.seed) if spec.space is not None else None
    limits = [n for n in (spec.max_trials, sampler.capacity if sampler else None) if n is not None]
    settings = RunSettings(name=spec.name, variant=variant.name, spec_digest=spec.digest, seed=spec.seed,
                           deadline=deadline, atom_ids=atom_ids, max_trials=min(limits) if limits else None,
                           metric=spec.metric.name, stop_margin=spec.controller.stop_margin,
                           wind_down_grace=spec.controller.stop_grace)
    progress = Progress(out, clock, quiet=options.quiet)
    controller = Controller(settings, scheduler, executor, clock, journal,
                            (lambda i: sampler.config(i)) if sampler else (lambda i: {}), state,
                            on_record=progress.on_record)
    run_dir.claim(options.backend)
    previous = _install_interrupts(controller)
    try:
        if records:
            progress.say(f"resuming {run_dir.path} (deadline {_iso(deadline)})")
            controller.resume(atom_ids, socket.gethostname(), os.getpid())
        else:
            progress.say(f"run {spec.name} [{variant.name}] in {run_dir.path}: {len(atom_ids)} atoms, "
                         f"deadline {_iso(deadline)} ({format_duration(deadline - clock.now())} from now)")
        controller.run()
    finally:
        _restore_interrupts(previous)
        executor.shutdown()
        journal.sync()
    result = build_result(spec, variant.name, run_dir, state)
    run_dir.write_json(run_dir.result, result)
    progress.summary(result, run_dir)
    return result


def _open_run_dir(spec: Spec, options: RunOptions) -> tuple[RunDir, list[Record]]:
    if options.resume:
        if options.run_dir is None:
            raise UserError("--resume needs --run-dir DIR (the run to continue)")
        run_dir = RunDir.existing(options.run_dir)
        run_dir.check_private()
        records = read_journal(run_dir.journal)
        started = next((r for r in records if isinstance(r, RunStarted)), None)
        if started is None:
            raise RunDirError(f"{run_dir.path}: the journal has no run_started record; nothing to resume")
        if started.spec_digest != spec.digest:
            raise RunDirError(f"{run_dir.path}: belongs to another experiment (its spec digest is "
                              f"{started.spec_digest}, this spec's is {spec.digest}); resume it with the spec it "
                              f"was started with ({run_dir.spec_copy})")
        if options.deadline is not None:
            raise UserError("--deadline: a resumed run keeps the deadline it was started with")
        finished = [r for r in records if isinstance(r, RunFinished)]
        if finished and finished[-1].reason == "nothing left to run":
            raise RunDirError(f"{run_dir.path}: the run already finished ({finished[-1].reason})")
        return run_dir, records
    run_dir = RunDir.create(options.run_dir or default_run_dir(spec))
    if spec.source is not None and spec.source.exists():
        run_dir.spec_copy.write_text(spec.source.read_text())
    return run_dir, []


ALLOCATION_SAFETY = 30.0  # seconds kept between the run's deadline and the end of its SLURM allocation


@dataclass(frozen=True)
class Backend:
    make_executor: Callable[[ProcessSettings, Any], Any]
    ends_at: float | None = None  # when the allocation ends (SLURM)
    max_atoms_per_trial: int | None = None  # trials that are single processes cannot span nodes


def backend_for(spec: Spec, backend: str) -> Backend:
    """Check the spec's resources for ``backend``; return how to build its executor."""
    r = spec.resources
    if backend == "local":
        from hpcsched.executors.local import LocalExecutor, local_resources

        resources = local_resources(r.atoms, r.gpus_per_atom, r.cpus_per_atom, r.distributed)
        return Backend(lambda settings, clock: LocalExecutor(settings, clock, resources))
    if backend == "slurm":
        from hpcsched.executors.slurm import SlurmExecutor, allocation_deadline, read_allocation, slurm_resources

        allocation = read_allocation()
        resources = slurm_resources(allocation, r.atoms, r.gpus_per_atom, r.cpus_per_atom, r.mem_per_atom,
                                    r.distributed)
        return Backend(lambda settings, clock: SlurmExecutor(settings, clock, resources, allocation.job_id),
                       ends_at=allocation_deadline(allocation), max_atoms_per_trial=resources.max_atoms_per_trial)
    raise UserError(f"--backend: unknown backend {backend!r}; valid: local, slurm")


def build_result(spec: Spec, variant: str, run_dir: RunDir, state: RunState) -> dict[str, Any]:
    """The answer: the best report that saved a checkpoint which still exists."""
    best = None
    for trial in state.trials.values():
        if trial.best_checkpoint and state.better(trial.best_checkpoint_score, best[0] if best else None):
            path = run_dir.trial_dir(trial.trial_id) / "checkpoints" / trial.best_checkpoint
            if path.exists():
                best = (trial.best_checkpoint_score, trial, path)
    started = state.started
    finished = state.finished
    result: dict[str, Any] = {
        "name": spec.name, "variant": variant, "metric": spec.metric.name, "mode": spec.metric.mode,
        "reason": finished.reason if finished else "unfinished",
        "best": None,
        "trials_started": len(state.trials),
        "trials": {s: n for s, n in state.counts.items() if n},
        "resizes": state.resizes, "pauses": state.pauses, "promotions": state.promotions,
        "exploration_closed_at": state.entrance_closed_at,
        "started_at": started.t if started else None,
        "deadline": started.deadline if started else None,
        "deadline_iso": _iso(started.deadline) if started else None,
        "finished_at": finished.t if finished else None,
    }
    if best is not None:
        score, trial, path = best
        result["best"] = {"trial": trial.trial_id, "config": trial.config, "score": score,
                          "step": trial.best_checkpoint_step, "checkpoint": str(path)}
    return result


# ---------------------------------------------------------------- interrupts


def _install_interrupts(controller: Controller) -> dict[int, Any]:
    previous = {}

    def handler(signum, frame):  # noqa: ARG001
        controller.interrupt(f"interrupted by {signal.Signals(signum).name}")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):  # USR1: SLURM's warning before the time limit
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_interrupts(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


# ---------------------------------------------------------------- progress


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t).isoformat(timespec="seconds")


class Progress:
    """One line per state change: what happened, trials by state, atoms in use, best, time left."""

    def __init__(self, out: TextIO, clock, quiet: bool = False):
        self.out = out
        self.clock = clock
        self.quiet = quiet
        self._start: float | None = None

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.out, flush=True)

    def on_record(self, record: Record, state: RunState) -> None:
        if self._start is None:
            self._start = state.started.t if state.started else record.t
        what = self._describe(record, state)
        if what is None or self.quiet:
            return
        c = state.counts
        best = (f"best {state.best_score:.4g} ({state.best_trial}@{state.best_step})"
                if state.best_score is not None else "best -")
        left = state.started.deadline - record.t if state.started else 0.0
        print(f"[+{format_duration(record.t - self._start):>6}] {what:<38} | run {c['running'] + c['launching']} "
              f"stop {c['stopping']} paused {c['paused']} done {c['completed'] + c['terminated']} "
              f"err {c['errored']} | atoms {state.total_atoms - state.free_atoms}/{state.total_atoms} | {best} "
              f"| left {format_duration(left)}", file=self.out, flush=True)

    @staticmethod
    def _describe(record: Record, state: RunState) -> str | None:
        if isinstance(record, Launched):
            n = len(record.atoms)
            return f"{record.trial} {record.reason} on {n} atom{'s' if n > 1 else ''}" + \
                (f" from step {record.from_step}" if record.from_step else "")
        if isinstance(record, StopRequested):
            extra = f" to {record.atoms}" if record.intent == "resize" else ""
            return f"{record.trial} {record.intent}{extra}" + (f" ({record.reason})" if record.reason else "")
        if isinstance(record, Exited):
            text = f"{record.trial} {record.outcome} at step {record.step}"
            return text + (f": {record.error.splitlines()[-1][:60]}" if record.error else "")
        if isinstance(record, Reported) and state.best_trial == record.trial and state.best_step == record.step \
                and state.best_score == record.score:
            return f"{record.trial} new best at step {record.step}"
        if isinstance(record, EntranceClosed):
            return "exploration closed"
        if isinstance(record, ControllerResumed):
            return "controller resumed"
        if isinstance(record, RunFinished):
            return f"run finished ({record.reason})"
        return None

    def summary(self, result: dict[str, Any], run_dir: RunDir) -> None:
        if self.quiet:
            return
        best = result.get("best")
        if best is None:
            self.say(f"no checkpointed result; see {run_dir.path}")
            return
        self.say(f"\nbest: trial {best['trial']} {result['metric']}={best['score']:.4g} at step {best['step']}")
        self.say(f"config: {best['config']}")
        self.say(f"checkpoint: {best['checkpoint']}")
        self.say(f"result: {run_dir.result}")
