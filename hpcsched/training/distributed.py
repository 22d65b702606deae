"""Data-parallel training for a trial's processes, whatever launched them.

A trial with ``resources.distributed: true`` runs one process per GPU (or per atom on CPU):
the tasks of one SLURM step, possibly on several nodes, or local processes. Each process has a
TrialContext with ``rank``, ``local_rank``, ``world_size``, ``master_addr`` and ``master_port``.
``DataParallel.setup(ctx)`` joins them in a torch.distributed process group (NCCL on GPUs,
gloo on CPU; none for a single process), picks the device, sets the threads and installs the
stop consensus; ``close()`` tears it down::

    with DataParallel.setup(ctx) as dp:
        model = dp.wrap(build_model().to(dp.device))
        ...

The stop consensus: signals reach the ranks at slightly different times, so every rank asks
all others (an all-reduce of the stop flag, max) before each step and after each report, and
all of them stop at the same step; otherwise the ranks still training would hang in a
collective waiting for the ones that left.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import torch
import torch.distributed as dist
from torch import nn

DEFAULT_TIMEOUT_S = 300.0  # a collective waiting longer than this fails (a peer died or hangs)


@dataclass
class DataParallel:
    """The process group, device and world of one trial process."""

    rank: int
    local_rank: int
    world_size: int
    device: torch.device
    backend: str | None  # None: a single process, no process group
    threads: int
    owns_group: bool = False
    ctx: Any = field(default=None, repr=False)

    # ------------------------------------------------------------ setting up

    @classmethod
    def setup(cls, ctx, backend: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              threads: int | None = None) -> "DataParallel":
        """Join the trial's process group (when ``ctx.world_size`` > 1), pick the device and threads,
        and set ``ctx.stop_consensus``."""
        device = pick_device(ctx)
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True  # fixed input shapes: let cuDNN pick its fastest kernels
        threads = threads or process_threads(ctx)
        torch.set_num_threads(threads)
        world = int(ctx.world_size)
        chosen = None
        owns = False
        if world > 1:
            chosen = backend or ("nccl" if device.type == "cuda" else "gloo")
            if not dist.is_initialized():
                dist.init_process_group(chosen, init_method=f"tcp://{ctx.master_addr}:{ctx.master_port}",
                                        rank=int(ctx.rank), world_size=world,
                                        timeout=dt.timedelta(seconds=timeout_s))
                owns = True
            if dist.get_world_size() != world or dist.get_rank() != int(ctx.rank):
                raise RuntimeError(f"process group (rank {dist.get_rank()} of {dist.get_world_size()}) does not "
                                   f"match the trial (rank {ctx.rank} of {world})")
            chosen = str(dist.get_backend())
        dp = cls(int(ctx.rank), int(ctx.local_rank), world, device, chosen, threads, owns, ctx)
        ctx.stop_consensus = dp.any_true
        return dp

    def close(self) -> None:
        """Leave the process group (if this object joined it); the stop flag is local again."""
        if self.ctx is not None and self.ctx.stop_consensus == self.any_true:
            self.ctx.stop_consensus = None
        if self.owns_group and dist.is_initialized():
            try:
                dist.destroy_process_group()
            except (RuntimeError, ValueError):
                pass
        self.owns_group = False

    def __enter__(self) -> "DataParallel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ collectives

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def _comm_device(self) -> torch.device:
        return self.device if self.backend == "nccl" else torch.device("cpu")

    def any_true(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on any rank (all-reduce, max): the stop consensus."""
        if not self.distributed:
            return bool(flag)
        t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=self._comm_device())
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum of ``values`` over the ranks (float64)."""
        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self._comm_device())
        if self.distributed:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return [float(v) for v in t.cpu()]

    # ------------------------------------------------------------ model and data

    def wrap(self, model: nn.Module) -> nn.Module:
        """``model`` (already on ``self.device``) in DistributedDataParallel when there are several ranks."""
        if not self.distributed:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def shard(self, size: int, epoch: int, seed: int, shuffle: bool = True) -> list[int]:
        """This rank's indices of a dataset of ``size`` for ``epoch``: torch's DistributedSampler
        (seeded by ``seed + epoch``, padded so every rank gets as many)."""
        from torch.utils.data.distributed import DistributedSampler

        sampler = DistributedSampler(_Sized(size), num_replicas=self.world_size, rank=self.rank,
                                     shuffle=shuffle, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    def split(self, indices: Sequence[int]) -> list[int]:
        """A disjoint share of ``indices`` (every world_size-th, no padding): for evaluation."""
        return list(indices[self.rank::self.world_size])


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside DistributedDataParallel (or the model itself)."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def pick_device(ctx) -> torch.device:
    """The GPU of this rank (``local_rank`` among the visible ones) or the CPU.

    Launchers hide the GPUs a trial does not hold (CUDA_VISIBLE_DEVICES; empty for CPU atoms),
    so any visible GPU is this trial's.
    """
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        index = int(ctx.local_rank) % torch.cuda.device_count()
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return torch.device("cpu")


def process_threads(ctx) -> int:
    """Threads for this process: OMP_NUM_THREADS when the launcher set it, else the trial's share."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, int(ctx.threads) // max(1, int(ctx.world_size)))


def state_checksum(state: Mapping[str, Any]) -> float:
    """A position-weighted sum of a state dict's floating-point tensors (equal states, equal sums)."""
    total = 0.0
    for i, value in enumerate(state.values()):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            total += (i % 7 + 1) * float(value.detach().double().sum())
    return total


def rng_state(device: torch.device) -> dict[str, Any]:
    """The torch generators' states (CPU, and this process's GPU)."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: Mapping[str, Any] | None, device: torch.device) -> None:
    if not state:
        return
    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if "cuda" in state and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


class _Sized:
    """A stand-in dataset of a given length (DistributedSampler only needs ``len``)."""

    def __init__(self, size: int):
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[int]:  # pragma: no cover - never iterated
        return iter(range(self.size))
