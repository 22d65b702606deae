"""Does a real run do what the simulator says? One spec, simulated and run for real.

    .venv/bin/python tools/bench_fidelity.py [--seeds 5] [--deadline 1800] [--atoms 2]
        [--time-scale 0.05] [--backend local|slurm] [--startups median|measured] [--curves DIR]
        [--out FILE] [--keep DIR]

The shared cifar10-resnets trace (R = 50, r = 2, eta = 4, 30 s per step on one atom, sqrt
scaling, HyperSched's defaults) is run on the local backend (or, with ``--backend slurm``, as a
controller job on the local Slurm cluster of tools/slurm_test_cluster.sh, each launch an srun step;
run as root with the cluster started) with the replay trainable (hpcsched.trial.replay: real processes
that sleep ``time-scale`` x the recorded time per step), then
replayed in the simulator with the startup (``--startups median``: the measured median for every
launch; ``measured``: each launch draws one of the measured startups), the per-step overhead and
stop latency the real run measured, and its stop margin. Times of the real run are
divided by the time scale, so both read in trace seconds. Printed side by side and written to
``--out``: best_score, trials started, pauses, promotions, resizes, when exploration closed,
atom-seconds per trial, and the fraction of pause / promotion / resize decisions that are the
same (same trial, same step: where a paused or resized trial left, where a promoted one resumed)
in both.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from hpcsched.rundir.journal import read_journal  # noqa: E402
from hpcsched.core.records import (EntranceClosed, Exited, Launched, Reported, Running, RunStarted,  # noqa: E402
                                   StopRequested, TrialCreated)
from hpcsched.loop.simulate import simulate_run  # noqa: E402
from hpcsched.spec import parse_experiment  # noqa: E402
from results_page import publish  # noqa: E402

CURVES = REPO.parent / "shared" / "data" / "curves"
OUTS = {"local": REPO / "docs" / "results" / "fidelity.md", "slurm": REPO / "docs" / "results" / "fidelity-slurm.md"}
BACKENDS = {"local": "the local backend", "slurm": "the SLURM backend on the local two-node test cluster"}
TRACE = "cifar10-resnets.csv"
R, r, ETA, STEP_TIME, SCALING = 50, 2, 4, 30.0, "sqrt"
STOP_MARGIN = 1.0  # real seconds before the deadline when trials are asked to stop (both runs plan to it)


@dataclass(frozen=True)
class Summary:
    best_score: float | None
    trials: int
    pauses: int
    promotions: int
    resizes: int
    closed_at: float | None  # trace seconds after the start
    atom_seconds_per_trial: float
    startup: float  # median measured startup, trace seconds
    step_overhead: float  # median seconds a one-atom step took beyond the trace's, trace seconds
    stop_latency: float  # median seconds from a stopped trial's last report (or start) to its exit, trace seconds
    decided_at: Mapping[tuple, float]  # (trial index, kind, step) -> when it was decided, trace seconds after the start
    startups: tuple[float, ...] = ()  # every measured startup, trace seconds

    @property
    def decisions(self) -> frozenset:
        """Every decision as (trial index, kind, step)."""
        return frozenset(self.decided_at)


def summarize(records, scale: float) -> Summary:
    """The figures of one journal, times in trace seconds (real times divided by ``scale``)."""
    start = next(r for r in records if isinstance(r, RunStarted)).t
    index = {r.trial: r.index for r in records if isinstance(r, TrialCreated)}
    last_step: dict[str, int] = {}
    open_launch: dict[str, tuple[float, int]] = {}
    atom_seconds = 0.0
    decided_at: dict[tuple, float] = {}  # the first time each decision was made
    best = None
    mode_max = next(r for r in records if isinstance(r, RunStarted)).mode == "max"
    closed = None
    startups = []
    gaps = []  # seconds between two reports of one launch on one atom
    last_report: dict[str, float] = {}
    settled: dict[str, float] = {}  # a live trial's last report or start
    stopped: dict[str, tuple[str, float]] = {}  # trial -> its stop request's intent (pause, resize) and time
    latencies = []
    for rec in records:
        if isinstance(rec, Launched):
            open_launch[rec.trial] = (rec.t, len(rec.atoms))
            last_step[rec.trial] = rec.from_step
            if rec.reason == "resume":
                decided_at.setdefault((index[rec.trial], "promote", rec.from_step), (rec.t - start) / scale)
        elif isinstance(rec, Reported):
            if rec.trial in last_report and open_launch.get(rec.trial, (0, 0))[1] == 1:
                gaps.append((rec.t - last_report[rec.trial]) / scale)
            last_report[rec.trial] = settled[rec.trial] = rec.t
            last_step[rec.trial] = rec.step
            if best is None or (rec.score > best if mode_max else rec.score < best):
                best = rec.score
        elif isinstance(rec, StopRequested) and rec.intent in ("pause", "resize"):
            stopped[rec.trial] = (rec.intent, (rec.t - start) / scale)
        elif isinstance(rec, Exited) and rec.trial in open_launch:
            if rec.trial in stopped:
                intent, asked = stopped[rec.trial]
                decided_at.setdefault((index[rec.trial], intent, rec.step), asked)
            if rec.trial in stopped and rec.trial in settled:
                latencies.append((rec.t - settled[rec.trial]) / scale)
            stopped.pop(rec.trial, None)
            settled.pop(rec.trial, None)
            last_report.pop(rec.trial, None)
            t0, atoms = open_launch.pop(rec.trial)
            atom_seconds += atoms * (rec.t - t0) / scale
        elif isinstance(rec, EntranceClosed) and closed is None:
            closed = (rec.t - start) / scale
        elif isinstance(rec, Running):
            startups.append(rec.startup / scale)
            settled[rec.trial] = rec.t
    kinds = [d[1] for d in decided_at]
    return Summary(best, len(index), kinds.count("pause"), kinds.count("promote"), kinds.count("resize"), closed,
                   atom_seconds / max(1, len(index)), statistics.median(startups) if startups else 0.0,
                   max(0.0, statistics.median(gaps) - STEP_TIME) if gaps else 0.0,
                   statistics.median(latencies) if latencies else 0.0, decided_at, tuple(startups))


def real_run(trace: Path, seed: int, deadline: float, atoms: int, scale: float, work: Path,
             backend: str = "local") -> list:
    spec = {
        "name": f"fidelity-{seed}", "trainable": "hpcsched.trial.replay:train",
        "metric": {"name": "accuracy", "mode": "max"},
        "space": {"trace": str(trace), "step_time": STEP_TIME, "time_scale": scale, "scaling": SCALING,
                  "seed": seed, "draw": {"uniform": [0, 1]}},
        "scheduler": {"kind": "hypersched", "r": r, "R": R, "eta": ETA, "scaling": SCALING},
        "resources": {"atoms": atoms, "gpus_per_atom": 0, "cpus_per_atom": 1},
        "deadline": deadline * scale, "seed": seed,
        "controller": {"poll_interval": 0.05, "stop_margin": STOP_MARGIN, "stop_grace": 10},
    }
    if backend == "slurm":
        from tools.bench_slurm import submit_and_wait
        return read_journal(submit_and_wait(spec, f"fidelity-{seed}", atoms, deadline * scale, work) / "events.jsonl")
    path = work / f"real-{seed}.yaml"
    path.write_text(yaml.safe_dump(spec))
    run = work / f"real-{seed}"
    proc = subprocess.run([sys.executable, "-m", "hpcsched", "run", str(path), "--run-dir", str(run), "--quiet"],
                          cwd=REPO, capture_output=True, text=True, timeout=deadline * scale + 300)
    if proc.returncode != 0:
        raise SystemExit(f"the real run failed:\n{proc.stdout}\n{proc.stderr}")
    return read_journal(run / "events.jsonl")


def simulated_run(trace: Path, seed: int, deadline: float, atoms: int, measured: Summary, scale: float,
                  work: Path, startups: str = "median") -> list:
    raw = {
        "name": f"fidelity-{seed}", "metric": {"name": "accuracy", "mode": "max"},
        "scheduler": {"kind": "hypersched", "r": r, "R": R, "eta": ETA, "scaling": SCALING},
        "resources": {"atoms": atoms}, "deadline": deadline, "seed": seed,
        "workload": {"kind": "trace", "path": str(trace), "step_time": STEP_TIME,
                     "startup": (list(measured.startups) if startups == "measured" else [])
                     or measured.startup,
                     "step_overhead": measured.step_overhead, "stop_latency": measured.stop_latency,
                     "scaling": SCALING},
    }
    experiment = parse_experiment(raw)
    log = work / f"sim-{seed}.jsonl"
    simulate_run(experiment.spec, experiment.spec.variants[0], seed, event_log=log, stop_margin=STOP_MARGIN / scale)
    return read_journal(log)


def agreement(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def first_apart(real: Summary, sim: Summary) -> float | None:
    """When the two runs first decided differently: the earliest decision that only one of them made
    (trace seconds after the start, in that run's own time; None when every decision is shared)."""
    times = [run.decided_at[d] for run, other in ((real, sim), (sim, real)) for d in run.decisions - other.decisions]
    return min(times) if times else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=1800.0, help="trace seconds")
    parser.add_argument("--atoms", type=int, default=2,
                        help="local: at most the machine's cores (the local backend's rule)")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="local")
    parser.add_argument("--startups", choices=("median", "measured"), default="median",
                        help="every simulated launch takes the measured median, or draws one of the measured")
    parser.add_argument("--time-scale", type=float, default=0.05, help="real seconds per trace second")
    parser.add_argument("--curves", type=Path, default=CURVES)
    parser.add_argument("--out", type=Path, help="default: docs/results/fidelity.md (local), "
                                                  "fidelity-slurm.md (slurm)")
    parser.add_argument("--keep", type=Path, help="keep the runs (journals, trials) in this new folder")
    args = parser.parse_args(argv)
    args.out = args.out or OUTS[args.backend]
    trace = args.curves / TRACE
    if not trace.is_file():
        print(f"skipped: {trace} is absent")
        return 0
    rows = []
    began = time.time()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep: {args.keep} exists (give a new folder)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for seed in range(args.seeds):
            real = summarize(real_run(trace, seed, args.deadline, args.atoms, args.time_scale, work,
                                      args.backend), args.time_scale)
            sim = summarize(simulated_run(trace, seed, args.deadline, args.atoms, real, args.time_scale, work,
                                          args.startups), 1.0)
            rows.append((seed, real, sim, agreement(real.decisions, sim.decisions)))
            print(f"seed {seed}: real best {real.best_score}, sim best {sim.best_score}, "
                  f"decisions the same {rows[-1][3]:.0%}", flush=True)
    publish(render(rows, args, time.time() - began), args.out)
    return 0


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) and value < 10 else (f"{value:.0f}" if isinstance(value, float)
                                                                          else str(value))


def render(rows, args, seconds: float) -> str:
    lines = [
        "# Simulator against real runs",
        "",
        f"Generated by `python tools/bench_fidelity.py --seeds {args.seeds} --deadline {args.deadline:g} "
        f"--atoms {args.atoms} --time-scale {args.time_scale:g} --backend {args.backend} --startups "
        f"{args.startups}` ({seconds:.0f} s). "
        f"The shared {TRACE} trace, "
        f"R = {R}, r = {r}, eta = {ETA}, {STEP_TIME:g} s per step on one atom, {SCALING} scaling, HyperSched's "
        f"defaults, {args.atoms} atoms, deadline {args.deadline:g} s. Real: {BACKENDS[args.backend]} with the replay "
        f"trainable, {args.time_scale:g} real seconds per trace second (times below divided by it). Simulated: "
        "the same spec with the startups " + ("(each launch draws one of those the real run measured), the "
                                              if args.startups == "measured" else "(the median the real run "
                                              "measured, for every launch), the ") +
        "per-step overhead (a step's time beyond the trace's: the report, its checkpoint) and the stop "
        "latency (a stopped trial's last report to its exit: the verdict round "
        "trip, the process's exit) that the real run measured (medians), the same stop margin "
        f"({STOP_MARGIN / args.time_scale:g} s), a stop between reports taking effect after the step in "
        "progress, as in a real trainable. Decisions: pauses and resizes as (trial, the step it left at), "
        "promotions as (trial, the step it resumed from); 'the same' is |both| / |either|; 'first apart': when "
        "the earliest decision that only one of the two runs made was made (trace seconds).",
        "",
        "| seed | run | best_score | trials | pauses | promotions | resizes | exploration closed (s) | "
        "atom-s per trial | startup (s) | step overhead (s) | stop latency (s) | decisions the same | "
        "first apart (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed, real, sim, same in rows:
        for name, s in (("real", real), ("simulated", sim)):
            lines.append(f"| {seed} | {name} | {_fmt(s.best_score)} | {s.trials} | {s.pauses} | {s.promotions} | "
                         f"{s.resizes} | {_fmt(s.closed_at)} | {s.atom_seconds_per_trial:.0f} | {s.startup:.1f} | "
                         f"{s.step_overhead:.2f} | {s.stop_latency:.1f} | "
                         + (f"{same:.0%} | {_fmt(first_apart(real, sim))} |" if name == "real" else " | |"))
    reals = [x[1] for x in rows]
    sims = [x[2] for x in rows]
    gap = statistics.mean(abs((a.best_score or 0) - (b.best_score or 0)) for a, b in zip(reals, sims))
    trials = statistics.mean(abs(a.trials - b.trials) / max(1, b.trials) for a, b in zip(reals, sims))
    lines += ["", f"Mean |best_score real - simulated|: {gap:.4f}; trials started differ by {trials:.0%}; "
                  f"decisions the same: {statistics.mean(x[3] for x in rows):.0%}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
