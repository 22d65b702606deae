"""The backends a real run can use: how each checks the spec's resources and builds its executor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hpcsched.core.errors import UserError
from hpcsched.executors.launching import ProcessSettings
from hpcsched.spec import Spec

ALLOCATION_SAFETY = 30.0  # seconds kept between the run's deadline and the end of its SLURM allocation


@dataclass(frozen=True)
class Backend:
    make_executor: Callable[[ProcessSettings, Any], Any]
    ends_at: float | None = None  # when the allocation ends (SLURM)
    max_atoms_per_trial: int | None = None  # trials that are single processes cannot span nodes


def backend_for(spec: Spec, backend: str) -> Backend:
    """Check the spec's resources for ``backend``; return how to build its executor."""
    if backend == "local":
        return _local(spec)
    if backend == "slurm":
        return _slurm(spec)
    raise UserError(f"--backend: unknown backend {backend!r}; valid: local, slurm")


def _local(spec: Spec) -> Backend:
    """This machine's GPUs or CPU slots."""
    from hpcsched.executors.local import LocalExecutor, local_resources

    r = spec.resources
    resources = local_resources(r.atoms, r.gpus_per_atom, r.cpus_per_atom, r.distributed)
    return Backend(lambda settings, clock: LocalExecutor(settings, clock, resources))


def _slurm(spec: Spec) -> Backend:
    """Steps in the SLURM allocation this process runs in."""
    from hpcsched.executors.slurm import SlurmExecutor, allocation_deadline, read_allocation, slurm_resources

    r = spec.resources
    allocation = read_allocation()
    resources = slurm_resources(allocation, r.atoms, r.gpus_per_atom, r.cpus_per_atom, r.mem_per_atom, r.distributed)
    return Backend(lambda settings, clock: SlurmExecutor(settings, clock, resources, allocation.job_id),
                   ends_at=allocation_deadline(allocation), max_atoms_per_trial=resources.max_atoms_per_trial)
