"""The learning-rate rules of the HyperSched paper for data-parallel trials that change size.

- the target learning rate is ``base_lr * sqrt(global_batch / base_batch)`` (rule ``sqrt``;
  ``linear`` and ``none`` are there for other recipes);
- the rate reaches its target through a ramp that raises it by at most ``ramp`` (10%) per step
  (an epoch, or an ImageNet sub-epoch); a lower target is taken at once;
- the ramp restarts, from the rate in use, whenever the world size differs from the one the
  state was saved with (a resize), and on a fresh start from the base rate;
- step decays (x ``gamma`` after each milestone step) are applied on top.

Pure Python: the state is a few numbers saved with the checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

RULES = ("sqrt", "linear", "none")


@dataclass
class LRSchedule:
    """Per-step learning rate; call ``lr_for(step, world_size, global_batch)`` once per step."""

    base_lr: float
    base_batch: int = 128
    rule: str = "sqrt"
    ramp: float = 0.1  # most relative rise per step
    milestones: tuple[int, ...] = ()
    gamma: float = 0.2
    # state (saved with checkpoints)
    scale: float | None = None  # multiplier of base_lr (before decays) used at the last step
    world_size: int | None = None  # world size of the last step
    ramp_start: int = 0  # step at which the current ramp began
    last_step: int = 0

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"lr rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if not (self.base_lr > 0 and math.isfinite(self.base_lr)):
            raise ValueError(f"base learning rate must be a positive number, got {self.base_lr!r}")
        if self.base_batch < 1:
            raise ValueError(f"base batch must be >= 1, got {self.base_batch!r}")
        if self.ramp < 0:
            raise ValueError(f"ramp must be >= 0, got {self.ramp!r}")
        self.milestones = tuple(sorted(int(m) for m in self.milestones))

    def target_scale(self, global_batch: int) -> float:
        ratio = global_batch / self.base_batch
        if self.rule == "sqrt":
            return math.sqrt(ratio)
        if self.rule == "linear":
            return ratio
        return 1.0

    def decay(self, step: int) -> float:
        """gamma ** (number of milestones before ``step``): decays start the step after a milestone."""
        return self.gamma ** sum(1 for m in self.milestones if step > m)

    def lr_for(self, step: int, world_size: int, global_batch: int) -> float:
        """The learning rate of ``step`` (1-based); advances the ramp by one step."""
        target = self.target_scale(global_batch)
        if self.scale is None:  # fresh start: from the base rate (or a lower target) upwards
            self.ramp_start = step
            scale = min(1.0, target)
        else:
            if world_size != self.world_size:
                self.ramp_start = step  # a resize: the ramp restarts from the rate in use
            scale = target if self.scale >= target else min(target, self.scale * (1.0 + self.ramp))
        self.scale, self.world_size, self.last_step = scale, world_size, step
        return self.base_lr * scale * self.decay(step)

    def state_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "world_size": self.world_size, "ramp_start": self.ramp_start,
                "last_step": self.last_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scale = None if state.get("scale") is None else float(state["scale"])
        self.world_size = None if state.get("world_size") is None else int(state["world_size"])
        self.ramp_start = int(state.get("ramp_start", 0))
        self.last_step = int(state.get("last_step", 0))


def schedule_from_config(config: dict[str, Any], milestones: Sequence[int] = (), gamma: float = 0.2,
                         base_batch: int = 128) -> LRSchedule:
    """An LRSchedule from a trial config: ``lr`` and optional ``lr_rule``, ``lr_ramp``,
    ``lr_milestones``, ``lr_gamma``, ``base_batch`` (the recipe's defaults otherwise)."""
    return LRSchedule(base_lr=float(config["lr"]), base_batch=int(config.get("base_batch", base_batch)),
                      rule=str(config.get("lr_rule", "sqrt")), ramp=float(config.get("lr_ramp", 0.1)),
                      milestones=tuple(config.get("lr_milestones", milestones)),
                      gamma=float(config.get("lr_gamma", gamma)))
