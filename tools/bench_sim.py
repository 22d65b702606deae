"""Scale benchmark: the real controller loop with the simulated executor, 1,000 and 10,000 trials.

    .venv/bin/python tools/bench_sim.py [--trials 1000 10000] [--atoms 1024] [--deadline 30] [--repeat 3]
        [--out docs/results/sim/scale.md]
    .venv/bin/python tools/bench_sim.py --trials 10000 --profile asha   # cProfile one run instead

Each run is a synthetic spec sized so that it really starts ``N`` trials (max_trials = N, a pool
of N curves, r = 1, R = 50, steps of 0.1 s and a 0.1 s startup, a 30 s deadline: 10,000 trials have
all started after about 3.5 s of virtual time) on 1,024 atoms. For ASHA and HyperSched it prints
trials started, journal records (events), wall seconds (the fastest of --repeat runs), events per
second and microseconds per event, then the per-event cost at each N over the smallest N (flat is
~1; a cost linear in the number of trials would make it N / N_min). Timing is the wall clock: this
is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import numpy as np
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hpcsched.loop.assembly import build_controller
from hpcsched.core.clock import VirtualClock
from hpcsched.executors.sim import SimExecutor
from hpcsched.rundir.journal import NullJournal
from hpcsched.core.records import Record
from hpcsched.samplers import IndexSampler
from hpcsched.spec import Spec, Variant, parse_experiment
from hpcsched.core.state import RunState
from hpcsched.workloads.synthetic import SyntheticWorkload

KINDS = ("asha", "hypersched")


class CountingJournal(NullJournal):
    """A journal that only counts the records it is given (the rest of the protocol: NullJournal's)."""

    def __init__(self) -> None:
        self.count = 0

    def append(self, record: Record) -> None:
        self.count += 1


@dataclass(frozen=True)
class BenchResult:
    kind: str
    trials: int
    atoms: int
    started: int
    events: int
    wall_s: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s

    @property
    def us_per_event(self) -> float:
        return 1e6 * self.wall_s / self.events


def bench_spec(kind: str, trials: int, atoms: int, deadline: float = 30.0) -> Spec:
    """A synthetic spec that starts ``trials`` trials of at most 50 short steps each."""
    raw = {"name": f"bench-{kind}-{trials}", "scheduler": {"kind": kind, "r": 1, "R": 50, "eta": 4},
           "resources": {"atoms": atoms}, "deadline": deadline, "max_trials": trials, "seed": 0,
           "workload": {"kind": "synthetic", "step_time": 0.1, "startup": 0.1, "scaling": "linear",
                        "trials": trials}}
    return parse_experiment(raw).spec


def run_once(spec: Spec) -> tuple[RunState, int, float]:
    """Run the controller loop once; return the final state, the record count and wall seconds."""
    w = spec.workload
    scheduler_spec = spec.scheduler
    workload = SyntheticWorkload(seed=spec.seed, max_steps=scheduler_spec.R, step_time=w.step_time,
                                 size=w.trials, noise=w.noise)
    clock = VirtualClock(0.0)
    executor = SimExecutor(workload, clock, w.scaling, w.startup, w.step_overhead, w.stop_latency,
                           rng=np.random.default_rng(spec.seed))
    journal = CountingJournal()
    controller = build_controller(spec, Variant(scheduler_spec.kind, scheduler_spec), executor, clock, journal,
                                  deadline=spec.deadline, atom_ids=[str(i) for i in range(spec.resources.atoms)],
                                  sampler=IndexSampler(lambda index: {"curve": executor.curve(index).key}),
                                  trial_limit=workload.size)
    begin = time.perf_counter()
    state = controller.run()
    return state, journal.count, time.perf_counter() - begin


def bench(kind: str, trials: int, atoms: int, repeat: int = 3, deadline: float = 30.0) -> BenchResult:
    """The fastest of ``repeat`` identical runs (the runs are deterministic; only the timing varies)."""
    spec = bench_spec(kind, trials, atoms, deadline)
    runs = [run_once(spec) for _ in range(repeat)]
    state, events, _ = runs[0]
    return BenchResult(kind, trials, atoms, len(state.trials), events, min(wall for _, _, wall in runs))


def markdown(results: list[BenchResult], command: str) -> str:
    """The results as a markdown section body (table, per-event cost ratios, command)."""
    lines = [(f"Command: `{command}` (wall clock, the fastest of the repeated runs; numbers vary from machine "
              "to machine and run to run)."), "",
             "| scheduler | trials (max) | atoms | trials started | journal records | wall s | records/s | µs/record |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.kind} | {r.trials:,} | {r.atoms:,} | {r.started:,} | {r.events:,} | {r.wall_s:.2f} | "
                     f"{r.events_per_s:,.0f} | {r.us_per_event:.1f} |")
    lines.append("")
    for kind, ratio, small, large in cost_ratios(results):
        lines.append(f"- {kind}: per-record cost at {large:,} trials / at {small:,} trials = **{ratio:.2f}**")
    for trials, ratio in wall_ratios(results):
        lines.append(f"- hypersched / asha wall time at {trials:,} trials = **{ratio:.2f}**")
    return "\n".join(lines) + "\n"


def cost_ratios(results: list[BenchResult]) -> list[tuple[str, float, int, int]]:
    """(kind, µs/event at N / at the smallest N, smallest N, N) per scheduler and larger N."""
    out = []
    for kind in KINDS:
        runs = sorted((r for r in results if r.kind == kind), key=lambda r: r.trials)
        for run in runs[1:]:
            out.append((kind, run.us_per_event / runs[0].us_per_event, runs[0].trials, run.trials))
    return out


def wall_ratios(results: list[BenchResult]) -> list[tuple[int, float]]:
    """(N, HyperSched's wall seconds / ASHA's) at each N that both ran."""
    walls = {(r.kind, r.trials): r.wall_s for r in results}
    return [(trials, walls[("hypersched", trials)] / walls[("asha", trials)])
            for trials in sorted({r.trials for r in results})
            if ("hypersched", trials) in walls and ("asha", trials) in walls]


def profile(kind: str, trials: int, atoms: int, deadline: float, top: int) -> None:
    spec = bench_spec(kind, trials, atoms, deadline)
    profiler = cProfile.Profile()
    profiler.enable()
    run_once(spec)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--atoms", type=int, default=1024)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per point; the fastest counts (default 3)")
    parser.add_argument("--deadline", type=float, default=30.0, help="virtual seconds (default 30)")
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the results as markdown here (embedded in the results README)")
    parser.add_argument("--profile", choices=KINDS, default=None,
                        help="cProfile one run of this scheduler at the largest --trials instead")
    parser.add_argument("--top", type=int, default=25, help="rows of the profile to print")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile, max(args.trials), args.atoms, args.deadline, args.top)
        return 0
    results = []
    print(f"{'scheduler':<11} {'trials':>7} {'started':>8} {'records':>9} {'wall s':>8} {'records/s':>10} "
          f"{'us/record':>10}", flush=True)
    for kind in args.kinds:
        for trials in sorted(args.trials):
            r = bench(kind, trials, args.atoms, args.repeat, args.deadline)
            results.append(r)
            print(f"{r.kind:<11} {r.trials:>7} {r.started:>8} {r.events:>9} {r.wall_s:>8.2f} "
                  f"{r.events_per_s:>10.0f} {r.us_per_event:>10.1f}", flush=True)
    for kind, ratio, small, large in cost_ratios(results):
        print(f"{kind}: per-record cost {large} vs {small} trials: x{ratio:.2f}")
    for trials, ratio in wall_ratios(results):
        print(f"hypersched / asha wall time at {trials} trials: x{ratio:.2f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shown = " ".join(["tools/bench_sim.py", "--trials", *map(str, sorted(args.trials)), "--atoms",
                          str(args.atoms), "--deadline", f"{args.deadline:g}", "--repeat", str(args.repeat),
                          "--out", str(args.out)])
        args.out.write_text(markdown(results, f"python {shown}"))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
