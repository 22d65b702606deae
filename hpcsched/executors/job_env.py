"""submitit job environment for hpcsched trial processes (registered as a submitit plugin).

Inside a trial the environment is named ``hpcsched`` (SUBMITIT_EXECUTOR=hpcsched): its job id
is the launch id the controller chose, never ``SLURM_JOB_ID`` (which inside a step is the
controller's allocation), ranks come from HPCSCHED_* or the step's SLURM_* variables, and
it never requeues: checkpointed trials are relaunched by the controller, not by Slurm.
"""

from __future__ import annotations

import os

from submitit.core.job_environment import JobEnvironment


def _first(*names: str, default: str = "0") -> str:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


class HpcschedJobEnvironment(JobEnvironment):
    _env = {
        "job_id": "HPCSCHED_LAUNCH_ID",
        "num_tasks": "HPCSCHED_WORLD_SIZE",
        "num_nodes": "HPCSCHED_NUM_NODES",
        "node": "HPCSCHED_NODE",
        "global_rank": "HPCSCHED_RANK",
        "local_rank": "HPCSCHED_LOCAL_RANK",
    }

    @property
    def num_tasks(self) -> int:
        return int(_first("HPCSCHED_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", default="1"))

    @property
    def num_nodes(self) -> int:
        return int(_first("HPCSCHED_NUM_NODES", "SLURM_STEP_NUM_NODES", default="1"))

    @property
    def node(self) -> int:
        return int(_first("HPCSCHED_NODE", "SLURM_NODEID"))

    @property
    def global_rank(self) -> int:
        return int(_first("HPCSCHED_RANK", "SLURM_PROCID"))

    @property
    def local_rank(self) -> int:
        return int(_first("HPCSCHED_LOCAL_RANK", "SLURM_LOCALID"))

    def _handle_signals(self, paths, submission) -> None:
        """No submitit requeue handlers: hpcsched.trial.context.run_trial installs its own stop handlers."""

    def _requeue(self, countdown: int) -> None:
        raise RuntimeError("hpcsched trials are never requeued by submitit; the controller relaunches them")
