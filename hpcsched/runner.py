"""``hpcsched run``: a real experiment on a backend (local processes or SLURM steps).

Builds the run directory, executor, journal, state and scheduler around the one controller
loop, resumes from the journal with ``--resume``, prints progress, and writes result.json.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import signal
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, TextIO

from hpcsched.clock import WallClock
from hpcsched.assembly import build_controller
from hpcsched.controller import Controller
from hpcsched.durations import format_duration
from hpcsched.errors import RunDirError, SpecError, UserError
from hpcsched.executors.launching import ProcessSettings
from hpcsched.journal import JsonlJournal, read_journal
from hpcsched.records import (ControllerResumed, ControllerStopped, EntranceClosed, Exited, FinishReason, Launched,
                              Record, Reported, RunExtended, RunFinished, RunStarted, StopIntent, StopRequested)
from hpcsched.result import ResultKeeper, build_result, write_result, iso_time
from hpcsched.rundir import RunDir
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
    extend: float | None = None  # seconds more for a resumed run (from its deadline, or now if that passed)


def default_run_dir(spec: Spec) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{spec.name}-{stamp}"


def run_experiment(spec: Spec, options: RunOptions, out: TextIO = sys.stdout) -> dict[str, Any]:
    """Run (or resume) the experiment to its deadline; return the result written to result.json."""
    variant = spec.variant(options.variant)
    trainable = checked_trainable(spec)
    backend = backend_for(spec, options.backend)  # checks the resources before anything is made
    if backend.max_atoms_per_trial is not None:
        cap = min(backend.max_atoms_per_trial, variant.scheduler.max_atoms_per_trial or backend.max_atoms_per_trial)
        variant = replace(variant, scheduler=replace(variant.scheduler, max_atoms_per_trial=cap))
    if not options.resume and options.deadline is None and spec.deadline is None and backend.ends_at is None:
        raise SpecError(["deadline: required (in the spec, or --deadline 30m)"], str(spec.source or spec.name))
    run_dir, records = _open_run_dir(spec, options)
    journal = JsonlJournal(run_dir.journal, durable=True)  # held until the end: one controller per run
    try:
        if records:
            records = read_journal(run_dir.journal)  # as it is now that no other controller can write
        return _run(spec, options, variant, trainable, backend, run_dir, records, journal, out)
    finally:
        journal.close()


def checked_trainable(spec: Spec) -> str:
    """The spec's trainable as the trials will load it, checked now rather than in every trial."""
    if spec.trainable is None:
        raise SpecError(["trainable: required for a real run ('path/to/file.py:function' or 'module:function')"],
                        str(spec.source or spec.name))
    base_dir = spec.source.parent if spec.source else Path.cwd()
    trainable = resolve_reference(spec.trainable, base_dir)
    check_trainable(trainable)
    return trainable


def _run(spec: Spec, options: RunOptions, variant, trainable: str, backend: "Backend", run_dir: RunDir,
         records: list[Record], journal: JsonlJournal, out: TextIO) -> dict[str, Any]:
    clock = WallClock()
    started = next((r for r in records if isinstance(r, RunStarted)), None)
    hard_end = backend.ends_at - ALLOCATION_SAFETY if backend.ends_at is not None else None
    extension: tuple[float, float] | None = None
    if started is not None:
        current = RunState.replayed(records).deadline or started.deadline
        if options.extend is not None:
            wanted = max(current, clock.now()) + options.extend
            deadline = wanted if hard_end is None else min(wanted, hard_end)
            if deadline > current:
                extension = (deadline, options.extend)
        else:
            deadline = current if hard_end is None else min(current, hard_end)
        late = clock.now() >= deadline - spec.controller.stop_margin
    else:
        seconds = options.deadline if options.deadline is not None else spec.deadline
        if seconds is None and hard_end is None:
            raise SpecError(["deadline: required (in the spec, or --deadline 30m)"], str(spec.source or spec.name))
        deadline = min(t for t in (clock.now() + seconds if seconds is not None else None, hard_end) if t is not None)
        late = False

    executor = backend.make_executor(ProcessSettings(
        run_dir=run_dir.path, trainable=trainable, max_steps=variant.scheduler.R, metric=spec.metric.name,
        mode=spec.metric.mode, poll_interval=spec.controller.poll_interval, stop_grace=spec.controller.stop_grace,
        hang_timeout=spec.controller.hang_timeout, verdict_timeout=spec.controller.verdict_timeout,
        non_finite=spec.metric.non_finite),
        clock)
    atom_ids = executor.atom_ids()
    progress = Progress(out, clock, quiet=options.quiet)
    keeper = ResultKeeper(spec, variant.name, run_dir)

    def on_record(record: Record, state: RunState) -> None:
        progress.on_record(record, state)
        keeper.on_record(record, state)

    controller = build_controller(spec, variant, executor, clock, journal, deadline=deadline, atom_ids=atom_ids,
                                  records=records, stop_margin=spec.controller.stop_margin,
                                  wind_down_grace=spec.controller.stop_grace, on_record=on_record)
    state = controller.state
    run_dir.claim(options.backend)
    run_dir.reserve_space()
    previous = _install_interrupts(controller, backend.ends_at)
    try:
        if extension is not None:
            controller.extend(*extension)
            cut = f" (cut to the allocation's end, {iso_time(hard_end)})" if deadline == hard_end else ""
            progress.say(f"extended {run_dir.path} by {format_duration(options.extend or 0.0)}: deadline "
                         f"{iso_time(deadline)}{cut}")
        elif options.extend is not None:
            progress.say(f"--extend: the allocation ends at {iso_time(backend.ends_at or 0.0)}, before the run's "
                         f"deadline: not extended")
        if late:  # launch nothing: collect what the trials left, then write the final answer
            progress.say(f"the run's deadline has passed ({iso_time(deadline)}); nothing to resume; "
                         f"writing result.json from the journal and the trials' files. To go on with more time: "
                         f"hpcsched run {spec.source or 'SPEC'} --run-dir {run_dir.path} --resume --extend 30m")
            if state.finished is None:  # collect what the trials left (a finished run has nothing to add)
                controller.resume(atom_ids, socket.gethostname(), os.getpid(), relaunch=False)
                controller.finish(FinishReason.DEADLINE)
        elif records:
            down = clock.now() - records[-1].t  # e.g. a requeued job's wait in the queue
            progress.say(f"resuming {run_dir.path} after {format_duration(max(0.0, down))} without a controller "
                         f"(deadline {iso_time(deadline)}, {format_duration(deadline - clock.now())} from now)")
            controller.resume(atom_ids, socket.gethostname(), os.getpid())
        else:
            progress.say(f"run {spec.name} [{variant.name}] in {run_dir.path}: {len(atom_ids)} atoms, "
                         f"deadline {iso_time(deadline)} ({format_duration(deadline - clock.now())} from now)")
        try:
            if not late:
                controller.run()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            run_dir.release_reserve()
            reason = f"disk full ({exc.filename or run_dir.path}): stopped every trial"
            print(f"hpcsched: {reason}; the result keeps the best checkpoint saved so far", file=sys.stderr)
            controller.abort(reason)
    finally:
        _restore_interrupts(previous)
        executor.shutdown()
        _sync_quietly(journal)
    result = build_result(spec, variant.name, run_dir, state)
    write_result(run_dir, result)
    run_dir.release_reserve()
    progress.summary(result, run_dir)
    return result


def _sync_quietly(journal: JsonlJournal) -> None:
    try:
        journal.sync()
    except OSError as exc:
        print(f"hpcsched: could not sync the journal: {exc}", file=sys.stderr)


def _open_run_dir(spec: Spec, options: RunOptions) -> tuple[RunDir, list[Record]]:
    if options.extend is not None and not options.resume:
        raise UserError("--extend: only with --resume (a new run takes --deadline)")
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
            raise UserError("--deadline: a resumed run keeps the deadline it was started with; "
                            "give it more time with --extend (e.g. --extend 30m)")
        finished = RunState.replayed(records).finished
        if finished is not None and finished.reason == FinishReason.NOTHING_LEFT and options.extend is None:
            raise RunDirError(f"{run_dir.path}: the run already finished ({finished.reason}); "
                              f"--extend DURATION gives it more time")
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


# ---------------------------------------------------------------- interrupts


TIME_LIMIT_WARNING = 900.0  # a SIGUSR1 this close to the allocation's end is Slurm's --signal warning


def _install_interrupts(controller: Controller, allocation_ends_at: float | None) -> dict[int, Any]:
    """SIGINT, SIGTERM and an early SIGUSR1 (preemption, ``scancel --signal=USR1``) stop the
    controller, to be resumed; SIGUSR1 near the allocation's time limit ends the run as its deadline."""
    previous = {}

    def handler(signum, frame):  # noqa: ARG001
        near_end = allocation_ends_at is not None and allocation_ends_at - controller.clock.now() <= TIME_LIMIT_WARNING
        if signum == signal.SIGUSR1 and near_end:
            controller.interrupt("the allocation's time limit is near (SIGUSR1)", at_deadline=True)
        else:
            controller.interrupt(f"interrupted by {signal.Signals(signum).name}")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):  # USR1: SLURM's warning before the time limit
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_interrupts(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


# ---------------------------------------------------------------- progress


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
        left = state.deadline - record.t if state.deadline is not None else 0.0
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
            extra = f" to {record.atoms}" if record.intent == StopIntent.RESIZE else ""
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
        if isinstance(record, ControllerStopped):
            return f"controller stopped ({record.reason}); --resume goes on"
        if isinstance(record, RunExtended):
            return f"deadline extended by {format_duration(record.by)}"
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
        done = result.get("best_completed")
        if done is None:
            self.say(f"no trial was trained to R = {result['max_steps']} steps")
        elif done["trial"] != best["trial"] or done["step"] != best["step"]:
            self.say(f"best fully trained (step {done['step']}): trial {done['trial']} "
                     f"{result['metric']}={done['score']:.4g}, {done['checkpoint']}")
        self.say(f"result: {run_dir.result}")
