"""The training loop the image-classification examples share: data-parallel SGD, resizable.

One trial step is an epoch (CIFAR-10) or a sub-epoch of a fixed number of batches (ImageNet),
followed by validation; the score is validation accuracy. Every rank calls ``ctx.report``
(rank 0 writes the checkpoint and the score), so the stop consensus runs in lockstep.

The checkpoint holds the unwrapped model, the optimizer, the learning-rate schedule, the step
(epoch) and the torch RNG state. Data order and augmentation are drawn from generators seeded
by (seed, step, rank), so a trial resumed on any number of processes continues where it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from hpcsched.training.data import BatchFeed, normalize, step_generator
from hpcsched.training.distributed import DataParallel, rng_state, set_rng_state, state_checksum, unwrap
from hpcsched.training.schedule import schedule_from_config

VAL_SUBSET_SEED = 12345  # the validation subset is the same for every trial, so scores compare


@dataclass
class Recipe:
    """What an example provides to ``train_classifier``."""

    build_model: Callable[[], nn.Module]
    train_set: Any  # a dataset of (uint8 image, label); with ``batch(indices)`` when held in memory
    val_set: Any
    mean: Sequence[float]
    std: Sequence[float]
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None  # on uint8 batches
    batch_size: int = 128  # per process
    train_batches: int | None = None  # per step; None: one epoch (this rank's shard)
    val_batches: int | None = None  # per step, in batches of batch_size over all ranks; None: all
    milestones: tuple[int, ...] = ()  # lr x gamma after these steps
    gamma: float = 0.2
    base_batch: int = 128  # the batch the config's lr was chosen for
    workers: int = 0  # DataLoader processes for on-disk sets


def train_classifier(config: dict[str, Any], ctx, recipe: Recipe) -> None:
    """Train ``recipe``'s model with ``config`` (lr, momentum, weight_decay, seed, ...) for the
    steps ``ctx`` gives, reporting validation accuracy and saving a checkpoint every step."""
    seed = int(config.get("seed", 0))
    with DataParallel.setup(ctx, backend=config.get("dist_backend"),
                            timeout_s=float(config.get("dist_timeout", 300))) as dp:
        torch.manual_seed(seed)
        module = recipe.build_model().to(dp.device)
        optimizer = torch.optim.SGD(module.parameters(), lr=float(config["lr"]),
                                    momentum=float(config.get("momentum", 0.9)),
                                    weight_decay=float(config.get("weight_decay", 5e-4)),
                                    nesterov=bool(config.get("nesterov", False)))
        schedule = schedule_from_config(config, recipe.milestones, recipe.gamma, recipe.base_batch)
        restored = None
        state = ctx.restore()
        if state is not None:
            module.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            schedule.load_state_dict(state["schedule"])
            set_rng_state(state.get("rng"), dp.device)
            restored = state_checksum(module.state_dict())
        model = dp.wrap(module)
        batch = int(recipe.batch_size)
        global_batch = batch * dp.world_size
        train_feed = BatchFeed(recipe.train_set, batch, recipe.workers, pin_memory=dp.device.type == "cuda")
        val_feed = BatchFeed(recipe.val_set, batch, recipe.workers, pin_memory=dp.device.type == "cuda")
        val_indices = dp.split(validation_subset(len(recipe.val_set), recipe.val_batches, batch))
        for step in ctx.steps():
            lr = schedule.lr_for(step, dp.world_size, global_batch)
            for group in optimizer.param_groups:
                group["lr"] = lr
            indices = dp.shard(len(recipe.train_set), epoch=step, seed=seed)
            if recipe.train_batches is not None:
                indices = indices[:recipe.train_batches * batch]
            started = time.perf_counter()
            loss_sum, seen = _train(model, optimizer, train_feed(indices), recipe, dp.device,
                                    step_generator(seed, step, dp.rank))
            train_seconds = time.perf_counter() - started
            correct, total, val_loss = _evaluate(unwrap(model), val_feed(val_indices), recipe, dp.device)
            loss_sum, seen, correct, total, val_loss = dp.sum([loss_sum, seen, correct, total, val_loss])
            accuracy = correct / max(total, 1.0)
            metrics: dict[str, Any] = {
                "lr": lr, "lr_scale": schedule.scale, "ramp_start": schedule.ramp_start,
                "world_size": dp.world_size, "global_batch": global_batch,
                "train_loss": loss_sum / max(seen, 1.0), "val_loss": val_loss / max(total, 1.0),
                "train_seconds": round(train_seconds, 4),
                "samples_per_second": round(seen / max(train_seconds, 1e-9), 2),
                "checksum": state_checksum(module.state_dict()),
            }
            if restored is not None:
                metrics["restored_checksum"], restored = restored, None
            state = {"model": module.state_dict(), "optimizer": optimizer.state_dict(),
                     "schedule": schedule.state_dict(), "epoch": step, "world_size": dp.world_size,
                     "rng": rng_state(dp.device), "config": dict(config)}
            ctx.report(step, accuracy, state=state, **metrics)


def validation_subset(size: int, batches: int | None, batch_size: int) -> list[int]:
    """The validation examples every trial is scored on: all, or ``batches * batch_size`` of them
    drawn once with a fixed seed (classes mixed, the same for every trial and world size)."""
    if batches is None or batches * batch_size >= size:
        return list(range(size))
    order = torch.randperm(size, generator=torch.Generator().manual_seed(VAL_SUBSET_SEED))
    return sorted(order[:batches * batch_size].tolist())


def _train(model: nn.Module, optimizer, batches, recipe: Recipe, device: torch.device,
           generator: torch.Generator) -> tuple[float, float]:
    model.train()
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    seen = 0
    for images, labels in batches:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        if recipe.augment is not None:
            images = recipe.augment(images, generator)
        loss = F.cross_entropy(model(normalize(images, recipe.mean, recipe.std)), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach().double() * len(labels)
        seen += len(labels)
    return float(loss_sum), float(seen)


@torch.no_grad()
def _evaluate(module: nn.Module, batches, recipe: Recipe, device: torch.device) -> tuple[float, float, float]:
    module.eval()
    correct = torch.zeros((), dtype=torch.float64, device=device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    total = 0
    for images, labels in batches:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        logits = module(normalize(images, recipe.mean, recipe.std))
        loss_sum += F.cross_entropy(logits, labels, reduction="sum").double()
        correct += (logits.argmax(1) == labels).sum().double()
        total += len(labels)
    return float(correct), float(total), float(loss_sum)


def load_model(checkpoint_path: str, build_model: Callable[[dict[str, Any]], nn.Module]) -> nn.Module:
    """Rebuild a model trained by ``train_classifier`` from one of its checkpoints (e.g. the one
    result.json names): ``build_model(config)`` makes the network, the checkpoint its weights."""
    from hpcsched.trial.context import load_checkpoint

    state = load_checkpoint(checkpoint_path)
    model = build_model(state["config"])
    model.load_state_dict(state["model"])
    return model.eval()
