"""Command line: ``hpcsched simulate | run | check | status | logs | report | profile``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hpcsched.core.version import __version__
from hpcsched.cli.argtypes import positive_duration, positive_int
from hpcsched.core.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hpcsched", description="Deadline-aware hyperparameter search.")
    parser.add_argument("--version", action="version", version=f"hpcsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="replay a spec's workload on a virtual clock, per variant and seed")
    sim.add_argument("spec", type=Path)
    sim.add_argument("--out", type=Path, default=None,
                     help="output directory (summary.csv, events/; default: runs/<name>-sim-<time>)")
    sim.add_argument("--seeds", type=positive_int, default=1, help="number of seeds, starting at the spec's seed")
    sim.add_argument("--jobs", type=positive_int, default=None, help="parallel processes (default: CPU count, max 8)")
    sim.add_argument("--no-events", action="store_true", help="skip the per-event logs")
    sim.set_defaults(func=cmd_simulate)

    run = sub.add_parser("run", help="run an experiment for real (local processes or SLURM steps)")
    run.add_argument("spec", type=Path)
    run.add_argument("--run-dir", type=Path, default=None, help="run directory (default: runs/<name>-<time>)")
    run.add_argument("--backend", choices=("local", "slurm"), default="local")
    run.add_argument("--deadline", type=positive_duration, default=None, help="e.g. 10m, 2h (overrides the spec)")
    run.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its journal")
    run.add_argument("--extend", type=positive_duration, default=None, metavar="DURATION",
                     help="with --resume: this much more time (from the run's deadline, or from now if it passed); "
                          "continues a finished or expired run")
    run.add_argument("--variant", default=None, help="which of the spec's variants to run")
    run.add_argument("--quiet", action="store_true", help="no progress lines (the answer at the end is still printed)")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="pre-flight: the spec, its trainable and the allocation a batch script "
                                         "asks for, before sbatch (extra arguments are sbatch options)",
                           usage="hpcsched check SPEC [--sbatch-script FILE] [--variant V] [sbatch options...]")
    check.add_argument("spec", type=Path)
    check.add_argument("--sbatch-script", type=Path, default=None,
                       help="batch script whose #SBATCH lines hold the allocation "
                            "(e.g. slurm_templates/launch_controller.sh)")
    check.add_argument("--variant", default=None, help="which of the spec's variants to check")
    check.set_defaults(func=cmd_check, takes_sbatch_options=True)

    status = sub.add_parser("status", help="show a run's trials, atoms, best so far and time left")
    status.add_argument("run_dir", type=Path)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument("--watch", type=float, nargs="?", const=2.0, default=None, metavar="SECONDS",
                        help="refresh every SECONDS (default 2) until the run finishes")
    status.add_argument("-t", "--state", default=None, metavar="STATES",
                        help="only trials in these statuses, e.g. running,paused (as squeue -t)")
    status.add_argument("-o", "--format", default=None, metavar="COLUMNS",
                        help="trial table columns, e.g. trial,status,best,elapsed,nodes (as squeue -o); "
                             "columns: trial, status, atoms, step, last, best, launches, elapsed, nodes, "
                             "atom_ids, config, error")
    status.set_defaults(func=cmd_status)

    logs = sub.add_parser("logs", help="print what a trial's launch wrote to stdout and stderr")
    logs.add_argument("run_dir", type=Path)
    logs.add_argument("trial", help="trial id, e.g. t0003")
    logs.add_argument("--launch", type=positive_int, default=None, help="which launch (1 = the first; default: latest)")
    logs.add_argument("--rank", type=int, default=0, help="which rank of a multi-process trial (default 0)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the latest launch ends")
    logs.set_defaults(func=cmd_logs)

    profile = sub.add_parser("profile", help="measure a trainable's throughput and startup per allocation")
    profile.add_argument("spec", type=Path)
    profile.add_argument("--atoms", default=None, metavar="LIST",
                         help="allocations to measure, e.g. 1,2,4,8 (default: 1 and powers of two up to "
                              "resources.atoms, and resources.atoms)")
    profile.add_argument("--steps", default="5", metavar="N", help="reports to collect per allocation (>= 2)")
    profile.add_argument("--out", type=Path, default=None,
                         help="profile file to write (default: profile.yaml next to the spec)")
    profile.add_argument("--backend", choices=("local", "slurm"), default="local")
    profile.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                         help="override a config value of the profiled trial (YAML value); repeatable")
    profile.add_argument("--variant", default=None, help="the spec variant whose R bounds the trial")
    profile.add_argument("--timeout", default="15m", metavar="DURATION",
                         help="longest time per allocation (e.g. 90s, 15m)")
    profile.add_argument("--keep", action="store_true", help="keep the throwaway run directory")
    profile.set_defaults(func=cmd_profile)

    report = sub.add_parser("report", help="figures and summary.md for a run directory or simulator output")
    report.add_argument("path", type=Path, help="a run directory, a journal (.jsonl) or a simulator output directory")
    report.add_argument("--out", type=Path, default=None, help="where to write the report (default: DIR/report)")
    report.add_argument("--mode", choices=("max", "min"), default=None,
                        help="how scores compare (default: from the run's spec/result, else inferred)")
    report.add_argument("--max-gantt-trials", type=positive_int, default=300,
                        help="Gantt rows at most: the trials with the most atom-time (default 300)")
    report.add_argument("--cell", default=None, metavar="CELL",
                        help="simulator output: the matrix cell whose runs the Gantts show, e.g. "
                             "atoms=8,deadline=60 (default: the longest deadline, then the most atoms)")
    report.set_defaults(func=cmd_report)
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    from hpcsched.core.records import FinishReason
    from hpcsched.loop.runner import RunOptions, run_experiment
    from hpcsched.spec import load_spec

    spec = load_spec(args.spec)
    result = run_experiment(spec, RunOptions(run_dir=args.run_dir, backend=args.backend, deadline=args.deadline,
                                             resume=args.resume, variant=args.variant, quiet=args.quiet,
                                             extend=args.extend))
    if result.get("reason") == FinishReason.FAILURES:
        return 1  # the trainable cannot work: whatever was saved before, the run did not do its job
    return 0 if FinishReason.planned(result.get("reason")) or result.get("best") else 1


def cmd_check(args: argparse.Namespace) -> int:
    from hpcsched.cli.preflight import CheckOptions, check_experiment
    from hpcsched.spec import load_spec

    spec = load_spec(args.spec)
    check_experiment(spec, CheckOptions(variant=args.variant, sbatch_script=args.sbatch_script,
                                        sbatch_args=tuple(args.sbatch_options),
                                        in_allocation=bool(os.environ.get("SLURM_JOB_ID"))), sys.stdout)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from hpcsched.analysis.report import build_report

    for written in build_report(args.path, args.out, args.mode, args.max_gantt_trials, args.cell):
        print(written)
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from hpcsched.cli.profiler import run_profile

    return run_profile(args)


def cmd_status(args: argparse.Namespace) -> int:
    from hpcsched.cli.status import DEFAULT_FORMAT, parse_format, parse_states, status_command

    if args.watch is not None and args.watch <= 0:
        raise UserError(f"--watch: expected a positive number of seconds, got {args.watch}")
    states = parse_states(args.state) if args.state is not None else ()
    columns = parse_format(args.format) if args.format is not None else DEFAULT_FORMAT
    return status_command(args.run_dir, as_json=args.json, watch=args.watch, states=states, columns=columns)


def cmd_logs(args: argparse.Namespace) -> int:
    from hpcsched.cli.logs import logs_command

    return logs_command(args.run_dir, args.trial, launch=args.launch, rank=args.rank, follow=args.follow)


def cmd_simulate(args: argparse.Namespace) -> int:
    from collections import Counter

    from hpcsched.analysis.simulation import means_table
    from hpcsched.cli.meter import Meter
    from hpcsched.rundir.paths import default_output_dir
    from hpcsched.rundir.sim_layout import summary_path
    from hpcsched.loop.simulate import default_jobs, plan, simulate_experiment
    from hpcsched.spec import load_experiment

    experiment = load_experiment(args.spec)
    seeds = [experiment.spec.seed + i for i in range(args.seeds)]
    jobs = args.jobs if args.jobs is not None else default_jobs()
    out = args.out if args.out is not None else default_output_dir(experiment.spec.name, "sim")
    labels = [cell.label for cell in experiment.cells]
    tasks = plan(experiment, seeds, None, False)
    variants = len({t.variant.name for t in tasks})
    meter = Meter(Counter(labels[t.cell] for t in tasks), sys.stderr, what="runs",
                  shape=f"{len(labels)} cell(s) x {variants} variant(s) x {len(seeds)} seed(s)")
    meter.start()
    try:
        frame = simulate_experiment(experiment, seeds, out, event_log=not args.no_events, jobs=jobs,
                                    on_done=lambda task: meter.step(labels[task.cell]))
    finally:
        meter.close()
    table = means_table(frame, experiment.matrix_keys)
    with_pd_options(lambda: print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}")))
    print(f"\nwrote {summary_path(out)} ({len(frame)} run{'' if len(frame) == 1 else 's'})")
    return 0


def with_pd_options(action) -> None:
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 50):
        action()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_sbatch_options", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.sbatch_options = extra
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"hpcsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`hpcsched status RUN | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that flushing at exit does not fail again
        return 0
