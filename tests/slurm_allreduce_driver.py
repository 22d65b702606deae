"""Run inside a Slurm job (tests/test_slurm.py): launch two-node trials through the real SlurmExecutor
with the atoms given on the command line (rank 0's atom first) and wait for each to exit.

    python tests/slurm_allreduce_driver.py RUN_DIR node2:0,node2:1,node1:0,node1:1 node1:0,node1:1,node1:2,node2:0
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hpcsched.core.clock import WallClock  # noqa: E402
from hpcsched.executors.base import LaunchRequest, TrialExit  # noqa: E402
from hpcsched.executors.launching import ProcessSettings  # noqa: E402
from hpcsched.executors.slurm import SlurmExecutor, read_allocation, slurm_resources  # noqa: E402

TRAINABLE = Path(__file__).resolve().parent / "trainables" / "allreduce.py"


def main(run: Path, layouts: list[str]) -> None:
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    (run / "trials").mkdir(mode=0o700, exist_ok=True)
    allocation = read_allocation()
    resources = slurm_resources(allocation, "auto", 1, 1, "", True)
    settings = ProcessSettings(run_dir=run, trainable=f"{TRAINABLE}:allreduce", max_steps=2, metric="score",
                               mode="max", poll_interval=0.1, stop_grace=30)
    executor = SlurmExecutor(settings, WallClock(), resources, allocation.job_id)
    exits = {}
    try:
        for number, layout in enumerate(layouts, start=1):
            trial = f"t{number:04d}"
            executor.launch(LaunchRequest(trial, number, {}, tuple(layout.split(",")), 0, "start", 1))
            end = time.monotonic() + 180
            while trial not in exits and time.monotonic() < end:
                for event in executor.poll(time.time()):
                    if isinstance(event, TrialExit):
                        exits[trial] = {"outcome": str(event.outcome), "step": event.step, "error": event.error}
                time.sleep(0.1)
    finally:
        executor.shutdown()
    (run / "exits.json").write_text(json.dumps(exits))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
