"""``hpcsched profile SPEC``: measure a trainable's throughput and startup on each allocation.

One configuration of the spec (the sampler's first, with ``--config KEY=VALUE`` overrides) runs
briefly on each allocation through the real executor of the chosen backend, as one trial whose
launches follow each other like resizes: the first starts fresh, each next one restores the
checkpoint the previous one saved. For each launch it measures

- startup: from the launch to the trial's 'started' line (imports, data, model, process group,
  checkpoint restore: what a resize costs), and
- throughput: steps per second over the reports after the first (the first holds warm-up),

then writes a profile file (hpcsched.spec.profile_file) that a spec names as ``scheduler.profile``:
the scheduler then believes its speedup table as s(a) and its largest startup as T_o.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import yaml

from hpcsched.core.clock import Clock
from hpcsched.core.errors import UserError
from hpcsched.rundir.paths import RunDir
from hpcsched.executors.base import Executor
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.spec.yaml_text import load_yaml

TRIAL = "p0000"


@dataclass(frozen=True)
class Measurement:
    atoms: int
    steps_per_second: float
    startup_seconds: float
    reports: int
    checkpoint_step: int

    def row(self) -> dict[str, float]:
        return {"atoms": self.atoms, "steps_per_second": round(self.steps_per_second, 6),
                "startup_seconds": round(self.startup_seconds, 3)}


class ProfileFailed(RuntimeError):
    """The profiled trial crashed, finished too early or took too long."""


def run_profile(args: argparse.Namespace) -> int:
    """Profile the spec as ``args`` say; return the exit code (UserError for bad input)."""
    from hpcsched.core.clock import WallClock
    from hpcsched.executors.launching import ProcessSettings
    from hpcsched.spec.profile_file import build_profile, write_profile
    from hpcsched.loop.backends import backend_for
    from hpcsched.spec import load_spec
    from hpcsched.trial.trainables import check_trainable, resolve_reference

    spec = load_spec(args.spec)
    if spec.trainable is None:
        raise UserError(f"trainable: {args.spec} has none (a simulation spec?); profiling runs a trainable")
    variant = spec.variant(args.variant if args.variant is not None else
                           (spec.variants[0].name if spec.variants else None))
    atoms = parse_atoms(args.atoms, spec.resources.atoms)
    steps = parse_steps(args.steps)
    timeout = parse_timeout(args.timeout)
    config = profiled_config(spec, args.config)
    base_dir = spec.source.parent if spec.source else Path.cwd()
    trainable = resolve_reference(spec.trainable, base_dir)
    check_trainable(trainable)
    try:
        backend = backend_for(replace(spec, resources=replace(spec.resources, atoms=max(atoms))), args.backend)
    except UserError as exc:
        if not str(exc).startswith("resources.atoms: "):
            raise
        why = str(exc).removeprefix("resources.atoms: ")
        raise UserError(f"--atoms {','.join(map(str, atoms))}: {max(atoms)} atoms do not fit here: {why}") from None
    if backend.max_atoms_per_trial is not None and max(atoms) > backend.max_atoms_per_trial:
        raise UserError(f"--atoms {max(atoms)}: a trial without resources.distributed cannot span nodes; "
                        f"at most {backend.max_atoms_per_trial} atoms here")
    out = args.out or base_dir / "profile.yaml"
    work = _work_dir(out, spec.name)
    max_steps = max(variant.scheduler.R, len(atoms) * (steps + 2) + 1)
    settings = ProcessSettings(run_dir=work, trainable=trainable, max_steps=max_steps, metric=spec.metric.name,
                               mode=spec.metric.mode, poll_interval=min(0.1, spec.controller.poll_interval),
                               stop_grace=spec.controller.stop_grace)
    clock = WallClock()
    executor = backend.make_executor(settings, clock)
    print(f"profiling {spec.name} ({trainable}) on {args.backend}: atoms {', '.join(map(str, atoms))}, "
          f"{steps} reports each; config {config}", flush=True)
    measurements: list[Measurement] = []
    try:
        from_step = 0
        for number, a in enumerate(atoms, start=1):
            m = measure(executor, clock, executor.atom_ids()[:a], config, from_step, number, steps, timeout)
            measurements.append(m)
            from_step = m.checkpoint_step
            print(f"  {a} atom(s): {m.steps_per_second:.4g} steps/s, startup {m.startup_seconds:.3g} s", flush=True)
    except ProfileFailed as exc:
        print(f"hpcsched profile: {exc}\n(trial files kept in {work})", file=sys.stderr)
        return 1
    finally:
        executor.shutdown()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    profile = build_profile([m.row() for m in measurements], spec=spec.name, trainable=spec.trainable,
                            config=config, steps=steps, backend=args.backend, host=socket.gethostname(),
                            resources={"gpus_per_atom": spec.resources.gpus_per_atom,
                                       "cpus_per_atom": spec.resources.cpus_per_atom,
                                       "distributed": spec.resources.distributed})
    write_profile(out, profile)
    print()
    print(format_table(profile))
    print(f"\nwrote {out}; a spec uses it as  scheduler: {{profile: {out}}}")
    return 0


def parse_atoms(text: str | None, spec_atoms: int | str) -> list[int]:
    """Allocations to measure, ascending, always with 1 (the speedup baseline)."""
    if text is None:
        if not isinstance(spec_atoms, int):
            return [1]
        values = {1, spec_atoms} | {2 ** k for k in range(1, spec_atoms.bit_length()) if 2 ** k <= spec_atoms}
        return sorted(values)
    values = set()
    for part in str(text).split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise UserError(f"--atoms: expected comma-separated positive integers, got {text!r} "
                            f"({part!r} is not an integer)") from None
        if value < 1:
            raise UserError(f"--atoms: allocations must be >= 1, got {value} in {text!r}")
        values.add(value)
    return sorted(values | {1})


def parse_steps(text: str | int) -> int:
    try:
        steps = int(text)
    except (TypeError, ValueError):
        raise UserError(f"--steps: expected an integer >= 2, got {text!r}") from None
    if steps < 2:
        raise UserError(f"--steps: expected an integer >= 2 (throughput needs two reports), got {steps}")
    return steps


def parse_timeout(text: str) -> float:
    from hpcsched.core.durations import parse_duration

    try:
        seconds = parse_duration(str(text))
    except ValueError:
        raise UserError(f"--timeout: expected a duration like 90s or 15m, got {text!r}") from None
    if seconds <= 0:
        raise UserError(f"--timeout: must be > 0, got {text!r}")
    return seconds


def profiled_config(spec, overrides: Sequence[str]) -> dict[str, Any]:
    """The sampler's first configuration with ``KEY=VALUE`` overrides (values read as YAML)."""
    from hpcsched.samplers import make_sampler

    config = make_sampler(spec.sampler, spec.space, spec.seed, spec.metric.mode).config(0)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--config: expected KEY=VALUE, got {item!r}")
        try:
            config[key.strip()] = load_yaml(value) if value.strip() else ""
        except yaml.YAMLError:
            raise UserError(f"--config {key.strip()}: not a YAML value: {value!r}") from None
    return config


def _work_dir(out: Path, name: str) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    work = out.absolute().parent / f".profile-{name}-{stamp}"
    suffix = 0
    while work.exists():
        suffix += 1
        work = work.with_name(f".profile-{name}-{stamp}-{suffix}")
    return RunDir.create(work).path


# ---------------------------------------------------------------- measuring


def measure(executor: Executor, clock: Clock, atom_ids: Sequence[str], config: dict[str, Any], from_step: int,
            number: int, steps: int, timeout: float) -> Measurement:
    """Launch the trial on ``atom_ids`` (from ``from_step``), collect ``steps`` reports, stop it and
    wait for its exit; return its throughput and startup. Time is the injected ``clock``'s (the
    wall clock for real processes, a virtual one over simulated trials)."""
    from hpcsched.executors.base import LaunchRequest, TrialExit, TrialReport, TrialStarted
    from hpcsched.core.records import LaunchReason

    launched = clock.now()
    executor.launch(LaunchRequest(TRIAL, 0, dict(config), tuple(atom_ids), from_step,
                                  LaunchReason.START if from_step == 0 else LaunchReason.RESIZE, number))
    started: float | None = None
    reports: list[tuple[float, int]] = []
    stop_asked = False
    exit_event = None
    while exit_event is None:
        now = clock.now()
        if now - launched >= timeout:
            executor.shutdown()
            raise ProfileFailed(f"{len(atom_ids)} atom(s): no exit within {timeout:g} s "
                                f"({len(reports)} of {steps} reports)")
        for event in executor.poll(now):
            if isinstance(event, TrialStarted) and started is None:
                started = event.t
            elif isinstance(event, TrialReport):
                reports.append((event.t, event.step))
            elif isinstance(event, TrialExit):
                exit_event = event
        if not stop_asked and len(reports) >= steps:
            executor.request_stop(TRIAL)
            stop_asked = True
        if exit_event is None:
            clock.sleep_until(min(executor.next_wakeup(now), launched + timeout))
    if exit_event.outcome == ExitOutcome.ERRORED:
        raise ProfileFailed(f"{len(atom_ids)} atom(s): the trial failed: {exit_event.error}")
    if len(reports) < steps:
        raise ProfileFailed(f"{len(atom_ids)} atom(s): the trial {exit_event.outcome} after {len(reports)} of "
                            f"{steps} reports (is R large enough?)")
    window = reports[:steps]
    elapsed = window[-1][0] - window[0][0]
    if elapsed <= 0:
        raise ProfileFailed(f"{len(atom_ids)} atom(s): reports carry no usable times ({window})")
    startup = (started if started is not None else window[0][0]) - launched
    return Measurement(len(atom_ids), (len(window) - 1) / elapsed, max(0.0, startup), len(reports),
                       exit_event.step)


def format_table(profile: dict[str, Any]) -> str:
    """The measured rows and the speedup the scheduler will believe for every allocation."""
    from hpcsched.core.scaling import table_scaling

    lines = [f"{'atoms':>5}  {'steps/s':>9}  {'startup s':>9}  {'speedup':>7}"]
    for row in profile["allocations"]:
        speedup = profile["scaling"][row["atoms"]]
        lines.append(f"{row['atoms']:>5}  {row['steps_per_second']:>9.4g}  {row['startup_seconds']:>9.3g}  "
                     f"{speedup:>7.3g}")
    scaling = table_scaling(profile["scaling"])
    top = max(profile["scaling"])
    fitted = "  ".join(f"{a}:{scaling.rate(a):.3g}" for a in range(1, top + 1))
    lines.append(f"believed speedup s(a): {fitted}  (interpolated; flat beyond {top})")
    lines.append(f"startup estimate T_o: {profile['startup_estimate']:.3g} s")
    return "\n".join(lines)
