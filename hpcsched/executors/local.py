"""The embedded default: trials as processes on this machine.

Atoms are GPUs (``gpus_per_atom`` > 0: atom k holds GPUs k*g .. k*g+g-1, given through
CUDA_VISIBLE_DEVICES) or CPU slots (atom k holds ``cpus_per_atom`` cores, pinned, with as
many threads). With ``distributed``, a trial runs one process per GPU (or per atom on CPU)
with torch.distributed's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT).
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from submitit.core import utils

from hpcsched.core.clock import Clock
from hpcsched.core.errors import UserError
from hpcsched.executors.launching import ProcessExecutor, ProcessSettings, inherited_environment
from hpcsched.rundir.scores import TOKEN_VARIABLE
from hpcsched.trial.context import TrialLaunch


@dataclass(frozen=True)
class LocalResources:
    atoms: int
    gpus_per_atom: int
    cpus_per_atom: int
    distributed: bool = False


def detect_gpus() -> int:
    """Visible NVIDIA GPUs on this machine (without importing torch)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"])
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def local_resources(atoms: int | str, gpus_per_atom: int | str, cpus_per_atom: int,
                    distributed: bool) -> LocalResources:
    """Check the spec's resources against this machine; raise UserError naming field and value.

    ``atoms: auto`` takes every GPU (or every core) of the machine.
    """
    gpus = detect_gpus()
    if gpus_per_atom == "auto":
        gpus_per_atom = 1 if gpus else 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if atoms == "auto":
        atoms = max(1, gpus // gpus_per_atom if gpus_per_atom else cores // cpus_per_atom)
    if gpus_per_atom and atoms * gpus_per_atom > gpus:
        raise UserError(f"resources.atoms: {atoms} atoms x {gpus_per_atom} GPU(s) need {atoms * gpus_per_atom} "
                        f"GPUs; this machine shows {gpus}")
    if not gpus_per_atom and atoms * cpus_per_atom > cores:
        raise UserError(f"resources.atoms: {atoms} atoms x {cpus_per_atom} CPU(s) need {atoms * cpus_per_atom} "
                        f"cores; this machine has {cores} (lower atoms or cpus_per_atom)")
    return LocalResources(atoms, int(gpus_per_atom), cpus_per_atom, distributed)


class LocalExecutor(ProcessExecutor):
    def __init__(self, settings: ProcessSettings, clock: Clock, resources: LocalResources):
        super().__init__(settings, clock)
        self.resources = resources
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else list(range(os.cpu_count() or 1))
        self._cores = cores

    def atom_ids(self) -> tuple[str, ...]:
        prefix = "gpu" if self.resources.gpus_per_atom else "cpu"
        return tuple(f"{prefix}{k}" for k in range(self.resources.atoms))

    def placement(self, atoms: tuple[str, ...]) -> dict[str, Any]:
        r = self.resources
        indices = [int(a[3:]) for a in atoms]
        per_process = max(1, r.cpus_per_atom * len(atoms) // self.world_size(atoms))
        if r.gpus_per_atom:
            gpus = tuple(k * r.gpus_per_atom + g for k in indices for g in range(r.gpus_per_atom))
            return {"gpus": gpus, "threads": per_process}
        cpus = tuple(self._cores[(k * r.cpus_per_atom + c) % len(self._cores)]
                     for k in indices for c in range(r.cpus_per_atom))
        return {"cpus": cpus, "threads": per_process}

    def world_size(self, atoms: tuple[str, ...]) -> int:
        r = self.resources
        if not r.distributed:
            return 1
        return len(atoms) * (r.gpus_per_atom or 1)

    def spawn(self, command: str, launch: TrialLaunch, folder: Path, world_size: int, token: str) -> list[Any]:
        base = trial_environment(launch, world_size, token)
        if world_size > 1:
            base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE=str(world_size))
        threads = launch.threads
        processes = []
        for rank in range(world_size):
            env = dict(base)
            env.update(HPCSCHED_RANK=str(rank), HPCSCHED_LOCAL_RANK=str(rank), OMP_NUM_THREADS=str(threads),
                       MKL_NUM_THREADS=str(threads))
            # threads that wait for each other sleep rather than spin (OpenMP's default spins): on a
            # machine shared with other work a spinning thread pool ran 10x slower than one thread
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            if world_size > 1:
                env.update(RANK=str(rank), LOCAL_RANK=str(rank))
            paths = utils.JobPaths(folder, job_id=launch.launch_id, task_id=rank)
            with open(paths.stdout, "ab") as out, open(paths.stderr, "ab") as err:
                processes.append(subprocess.Popen(shlex.split(command), env=env, stdout=out, stderr=err,
                                                  stdin=subprocess.DEVNULL, start_new_session=True))
        return processes


def trial_environment(launch: TrialLaunch, world_size: int, token: str = "") -> dict[str, str]:
    """The environment of a trial's processes: submitit's job environment, the devices, the launch's token."""
    # torch.distributed's variables only for a trial of several processes: a library that finds
    # LOCAL_RANK (accelerate, transformers' Trainer) would otherwise start a process group of one
    env = inherited_environment(os.environ)
    env.update(SUBMITIT_EXECUTOR="hpcsched", HPCSCHED_LAUNCH_ID=launch.launch_id,
               HPCSCHED_TRIAL_ID=launch.trial_id, HPCSCHED_WORLD_SIZE=str(world_size),
               HPCSCHED_NUM_NODES="1", HPCSCHED_NODE="0",
               CUDA_VISIBLE_DEVICES=",".join(str(g) for g in launch.gpus), **{TOKEN_VARIABLE: token})
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
