"""Command line: ``hpcsched simulate | run | status | report | profile``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpcsched.errors import UserError


def _seeds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds: expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--seeds: expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hpcsched", description="Deadline-aware hyperparameter search.")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="replay a spec's workload on a virtual clock, per variant and seed")
    sim.add_argument("spec", type=Path)
    sim.add_argument("--out", type=Path, required=True, help="output directory (summary.csv, events/)")
    sim.add_argument("--seeds", type=_seeds, default=1, help="number of seeds, starting at the spec's seed")
    sim.add_argument("--jobs", type=int, default=None, help="parallel processes (default: CPU count, max 8)")
    sim.add_argument("--no-events", action="store_true", help="skip the per-event logs")
    sim.set_defaults(func=cmd_simulate)
    return parser


def cmd_simulate(args: argparse.Namespace) -> int:
    from hpcsched.simulate import default_jobs, means_table, simulate_experiment
    from hpcsched.spec import load_experiment

    experiment = load_experiment(args.spec)
    seeds = [experiment.spec.seed + i for i in range(args.seeds)]
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise UserError(f"--jobs: expected a positive integer, got {jobs}")
    frame = simulate_experiment(experiment, seeds, args.out, event_log=not args.no_events, jobs=jobs)
    table = means_table(frame, experiment.matrix_keys)
    with_pd_options(lambda: print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}")))
    print(f"\nwrote {args.out / 'summary.csv'} ({len(frame)} runs)")
    return 0


def with_pd_options(action) -> None:
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 50):
        action()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"hpcsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
