#!/usr/bin/env python
"""Measure the SLURM backend on the local test cluster (run as root after tools/slurm_test_cluster.sh start).

For 8 and 64 concurrent fake trials (tests/trainables/toy.py: sleeps, reports, checkpoints) it
submits a controller job, lets the search run, and reads from its journal:
  - launch latency: the controller's Launched record -> the trial's 'started' line
    (srun step creation + Python + submitit + unpickling; the toy has no setup of its own)
  - resize downtime: the resize's stop request -> the trial running again on its new atoms
  - decision delay: a trial writes a score line -> the controller journals the pause it decides
Prints a table and writes it to docs/results/slurm.md (with --write).

    python tools/bench_slurm.py [--trials 8 64] [--seconds 90] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hpcsched.rundir.journal import read_journal  # noqa: E402
from hpcsched.core.records import Launched, Reported, Running, StopRequested  # noqa: E402
from tests.slurm_jobs import job_state  # noqa: E402  (the local test cluster's helpers)

BATCH = """#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node={per_node} --cpus-per-task=1 --mem=0 --time=10
#SBATCH --output={out}
exec {hpcsched} run {spec} --backend slurm --run-dir {run} --quiet
"""


def spec_for(trials: int, seconds: float) -> dict:
    return {
        "name": f"bench-{trials}",
        "trainable": f"{REPO}/tests/trainables/toy.py:toy",
        "metric": {"name": "acc", "mode": "max"},
        "space": {"quality": {"uniform": [0.1, 1.0]}, "step_time": 1.0},
        "scheduler": {"kind": "hypersched", "r": 3, "R": 30, "eta": 3, "resize_cooldown": 1,
                      "allocation": "uniform", "scaling": "linear"},
        "resources": {"atoms": trials, "gpus_per_atom": 0, "cpus_per_atom": 1},
        "max_trials": 3 * trials,
        "deadline": seconds,
        "controller": {"poll_interval": 0.25, "stop_margin": 8, "stop_grace": 20},
    }


def run_job(trials: int, seconds: float, work: Path) -> Path:
    return submit_and_wait(spec_for(trials, seconds), f"{trials}", trials, seconds, work)


def submit_and_wait(spec: dict, name: str, atoms: int, seconds: float, work: Path) -> Path:
    """Run ``spec`` as a controller job on two nodes of the local cluster with ``atoms`` one-CPU
    tasks; wait for it (at most ``seconds`` + 300 s) and return the run directory."""
    spec_path = work / f"spec-{name}.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    run = work / f"run-{name}"
    batch = work / f"job-{name}.sh"
    batch.write_text(BATCH.format(per_node=(atoms + 1) // 2, out=work / f"ctl-{name}.out",
                                  hpcsched=Path(sys.executable).parent / "hpcsched", spec=spec_path, run=run))
    job = subprocess.run(["sbatch", "--parsable", str(batch)], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout.strip()
    end = time.monotonic() + seconds + 300
    while time.monotonic() < end:
        if not job_state(job):  # "" once ended; a failed squeue (a busy slurmctld) is not taken for the end
            break
        time.sleep(2)
    else:
        subprocess.run(["scancel", job])
        raise SystemExit(f"job {job} did not finish; see {work / f'ctl-{name}.out'}")
    return run


def measure(run: Path) -> dict[str, list[float]]:
    records = read_journal(run / "events.jsonl")
    launched: dict[str, float] = {}
    pending_resize: dict[str, float] = {}
    last_report: dict[str, float] = {}
    out: dict[str, list[float]] = {"launch": [], "resize": [], "decision": []}
    concurrent, peak = 0, 0
    for r in records:
        if isinstance(r, Launched):
            launched[r.trial] = r.t
            concurrent += 1
            peak = max(peak, concurrent)
        elif isinstance(r, Running):
            if r.trial in launched:
                out["launch"].append(r.t - launched.pop(r.trial))
            if r.trial in pending_resize:
                out["resize"].append(r.t - pending_resize.pop(r.trial))
        elif isinstance(r, Reported):
            last_report[r.trial] = r.t
        elif isinstance(r, StopRequested):
            if r.intent == "resize":
                pending_resize[r.trial] = r.t
            elif r.intent == "pause" and r.trial in last_report:
                out["decision"].append(r.t - last_report[r.trial])
        elif r.kind == "exited":
            concurrent -= 1
    out["peak"] = [float(peak)]
    return out


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"{statistics.median(values):.3f} / {p90:.3f} s (n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--write", action="store_true", help="write docs/results/slurm.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        work = Path(tmp)
        for trials in args.trials:
            started = time.time()
            result = measure(run_job(trials, args.seconds, work))
            rows.append((trials, int(result["peak"][0]), summary(result["launch"]), summary(result["resize"]),
                         summary(result["decision"]), time.time() - started))
    header = "| concurrent trials | peak launches live | launch latency (median / p90) | resize downtime " \
             "(median / p90) | score line -> decision (median / p90) |"
    lines = [header, "|---|---|---|---|---|"]
    lines += [f"| {t} | {p} | {a} | {b} | {c} |" for t, p, a, b, c, _ in rows]
    table = "\n".join(lines)
    print(table)
    if args.write:
        path = REPO / "docs" / "results" / "slurm.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "# SLURM backend: measured on the local test cluster\n\n"
            "Two `slurmd` on one 2-core VM (tools/slurm_test_cluster.sh), fake trials that sleep 1 s per step\n"
            "(tests/trainables/toy.py), HyperSched with uniform allocation, CPU atoms of one CPU each.\n"
            "Regenerate with `python tools/bench_slurm.py --write` (as root, cluster started).\n\n"
            + table + "\n\n"
            "- launch latency: controller's `launched` record to the trial's `started` line (srun step,\n"
            "  Python start, submitit unpickling, the trial's imports; `srun true` alone takes 40-60 ms here).\n"
            "- resize downtime: the resize's stop request to the trial running again on its new atoms\n"
            "  (finish the step, checkpoint, exit, relaunch, restore).\n"
            "- score line -> decision: a trial writes a report; the controller journals the pause it decided\n"
            "  from it (polling interval 0.25 s).\n"
            "- With 64 trials the 2 cores of this VM are the bottleneck: 64 Python processes start at once.\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
