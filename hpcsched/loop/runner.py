"""``hpcsched run``: a real experiment on a backend (local processes or SLURM steps).

The orchestration of one run: the run directory (new, or resumed from its journal), the deadline
(``plan_deadline``), the backend's executor (``backends``), the controller (``assembly``), signals
(``interrupts``), progress lines (``progress``) and result.json at the end.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from hpcsched.loop.assembly import build_controller
from hpcsched.loop.backends import ALLOCATION_SAFETY, Backend, backend_for
from hpcsched.core.clock import WallClock
from hpcsched.core.durations import format_duration
from hpcsched.core.errors import RunDirError, SpecError, UserError
from hpcsched.executors.launching import ProcessSettings, hang_floor_for
from hpcsched.loop.interrupts import install_interrupts, restore_interrupts
from hpcsched.rundir.journal import JsonlJournal, read_journal
from hpcsched.loop.progress import Progress
from hpcsched.core.records import FinishReason, Record, RunStarted
from hpcsched.rundir.result import ResultKeeper, build_result, write_result, iso_time
from hpcsched.rundir.paths import RunDir, default_output_dir
from hpcsched.samplers import make_sampler
from hpcsched.spec import Spec
from hpcsched.core.state import RunState
from hpcsched.trial.trainables import check_trainable, resolve_reference


@dataclass(frozen=True)
class RunOptions:
    run_dir: Path | None = None
    backend: str = "local"
    deadline: float | None = None  # seconds from now (overrides the spec's)
    resume: bool = False
    variant: str | None = None
    quiet: bool = False
    extend: float | None = None  # seconds more for a resumed run (from its deadline, or now if that passed)
    sampler: Any = None  # an optuna.samplers.BaseSampler object (Python API): it proposes, not the spec's sampler


def default_run_dir(spec: Spec) -> Path:
    return default_output_dir(spec.name)


def run_experiment(spec: Spec, options: RunOptions, out: TextIO = sys.stdout) -> dict[str, Any]:
    """Run (or resume) the experiment to its deadline; return the result written to result.json."""
    variant = spec.variant(options.variant)
    trainable = checked_trainable(spec)
    backend = backend_for(spec, options.backend)  # checks the resources before anything is made
    if backend.max_atoms_per_trial is not None:
        cap = min(backend.max_atoms_per_trial, variant.scheduler.max_atoms_per_trial or backend.max_atoms_per_trial)
        variant = replace(variant, scheduler=replace(variant.scheduler, max_atoms_per_trial=cap))
    missing = None if options.resume else deadline_problem(spec, options.deadline, backend.ends_at)
    if missing is not None:
        raise SpecError([missing], str(spec.source or spec.name))
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


def deadline_problem(spec: Spec, deadline: float | None, ends_at: float | None) -> str | None:
    """Why a new run has no deadline (None: it has one): neither ``--deadline``, the spec's ``deadline``
    nor the end of an allocation (``ends_at``) sets it. ``hpcsched check`` applies the same rule."""
    if deadline is None and spec.deadline is None and ends_at is None:
        return "deadline: required (in the spec, or --deadline 30m)"
    return None


@dataclass(frozen=True)
class DeadlinePlan:
    """When a (resumed) run ends, and what --extend changes."""

    deadline: float  # absolute, on the wall clock
    stop_margin: float  # trials are asked to checkpoint this long before it
    extension: tuple[float, float] | None = None  # (new deadline, seconds asked) to journal, or None
    late: bool = False  # the deadline has passed: collect what the trials left and finish, launch nothing


def plan_deadline(spec: Spec, options: RunOptions, records: list[Record], now: float,
                  hard_end: float | None) -> DeadlinePlan:
    """A new run's deadline (``--deadline`` or the spec's, within the allocation's end ``hard_end``),
    or a resumed run's (its journal's, moved by ``--extend``, within ``hard_end``)."""
    started = next((r for r in records if isinstance(r, RunStarted)), None)
    if started is None:
        seconds = options.deadline if options.deadline is not None else spec.deadline
        missing = deadline_problem(spec, options.deadline, hard_end)
        if missing is not None:
            raise SpecError([missing], str(spec.source or spec.name))
        deadline = min(t for t in (now + seconds if seconds is not None else None, hard_end) if t is not None)
        return DeadlinePlan(deadline, spec.controller.stop_margin_for(deadline - now))
    current = RunState.replayed(records).deadline or started.deadline
    extension: tuple[float, float] | None = None
    if options.extend is not None:
        wanted = max(current, now) + options.extend
        deadline = wanted if hard_end is None else min(wanted, hard_end)
        if deadline > current:
            extension = (deadline, options.extend)
    else:
        deadline = current if hard_end is None else min(current, hard_end)
    margin = spec.controller.stop_margin_for(deadline - started.t)
    return DeadlinePlan(deadline, margin, extension, now >= deadline - margin)


def _run(spec: Spec, options: RunOptions, variant, trainable: str, backend: Backend, run_dir: RunDir,
         records: list[Record], journal: JsonlJournal, out: TextIO) -> dict[str, Any]:
    clock = WallClock()
    hard_end = backend.ends_at - ALLOCATION_SAFETY if backend.ends_at is not None else None
    plan = plan_deadline(spec, options, records, clock.now(), hard_end)
    deadline, extension, late = plan.deadline, plan.extension, plan.late

    executor = backend.make_executor(ProcessSettings(
        run_dir=run_dir.path, trainable=trainable, max_steps=variant.scheduler.R, metric=spec.metric.name,
        mode=spec.metric.mode, poll_interval=spec.controller.poll_interval, stop_grace=spec.controller.stop_grace,
        hang_timeout=spec.controller.hang_timeout, hang_floor=hang_floor_for(deadline - _started_at(records, clock)),
        verdict_timeout=spec.controller.verdict_timeout,
        non_finite=spec.metric.non_finite),
        clock)
    atom_ids = executor.atom_ids()
    progress = Progress(out, clock, quiet=options.quiet)
    keeper = ResultKeeper(spec, variant.name, run_dir)

    def on_record(record: Record, state: RunState) -> None:
        progress.on_record(record, state)
        keeper.on_record(record, state)

    sampler = None
    if options.sampler is not None:
        sampler = make_sampler(spec.sampler, spec.space, spec.seed, spec.metric.mode, model=options.sampler,
                               R=variant.scheduler.R)
    controller = build_controller(spec, variant, executor, clock, journal, deadline=deadline, atom_ids=atom_ids,
                                  records=records, stop_margin=plan.stop_margin,
                                  wind_down_grace=spec.controller.stop_grace, on_record=on_record, sampler=sampler)
    state = controller.state
    run_dir.claim(options.backend)
    run_dir.reserve_space()
    previous = install_interrupts(controller, backend.ends_at)
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
        restore_interrupts(previous)
        executor.shutdown()
        _sync_quietly(journal)
    result = build_result(spec, variant.name, run_dir, state)
    write_result(run_dir, result)
    run_dir.release_reserve()
    progress.summary(result, run_dir)
    if result.get("gave_up"):
        print(gave_up_message(result["gave_up"], spec), file=sys.stderr)
    return result


def gave_up_message(gave_up: dict[str, Any], spec: Spec) -> str:
    """Why a run stopped on its failure budget: the trainable, and the end of the first failed launch's error."""
    error = "".join(f"\n    {line}" for line in gave_up["first_error"].splitlines())
    return (f"hpcsched: stopped the run: {gave_up['launches']} launches in a row errored before their first report "
            f"(controller.max_failures: {gave_up['max_failures']}); the trainable {gave_up['trainable']} cannot run "
            f"as it is. The first of them ({gave_up['first_trial']}) ended:{error}\n"
            f"Fix it ('hpcsched check {spec.source or 'SPEC'}' imports it as a trial would), then run again.")


def _started_at(records: list[Record], clock: WallClock) -> float:
    """When the run started (now, for a new one)."""
    started = next((r for r in records if isinstance(r, RunStarted)), None)
    return started.t if started is not None else clock.now()


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
