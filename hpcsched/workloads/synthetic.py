"""The HyperSched authors' synthetic ("Optimus") learning curve.

loss(k) = 1 / (b0 k / 100 + 0.1 b1 + 0.5) + 0.01 b2 + |eps|,  eps ~ N(0, noise^2)
b0 ~ Exponential(scale 0.1), b1, b2 ~ U(0, 1);  score = (2 - loss) / 2.

When the search space names any of ``b0``, ``b1``, ``b2`` (as the authors' own experiment does),
a trial's curve takes those from its configuration: the curve then depends on the config, so a
model-based sampler has something to learn.
"""

from __future__ import annotations

import numpy as np

from typing import Any, Mapping

from hpcsched.workloads import Curve

CURVE_PARAMETERS = ("b0", "b1", "b2")  # config keys that set a trial's curve


def synthetic_scores(b0: float, b1: float, b2: float, steps: np.ndarray, eps: np.ndarray | float) -> np.ndarray:
    """Scores at ``steps`` (1-based) of the curve with parameters b0, b1, b2 and noise ``eps``."""
    loss = 1.0 / (b0 * steps / 100.0 + 0.1 * b1 + 0.5) + 0.01 * b2 + np.abs(eps)
    return (2.0 - loss) / 2.0


class SyntheticWorkload:
    """A pool of ``size`` synthetic curves.

    The pool's parameters come from one generator seeded by (seed, 4); curve ``i``'s noise
    from a generator seeded by (seed, 2, i), drawn only when the curve is used.
    """

    def __init__(self, seed: int, max_steps: int, step_time: float, size: int, noise: float,
                 config_ranges: Mapping[str, tuple[float, float]] | None = None):
        self.seed = seed
        self.config_ranges = dict(config_ranges or {})  # curve parameters set by the config: their ranges
        self.size = size
        self.noise = noise
        self.step_time = float(step_time)
        self.median_step = self.step_time
        rng = np.random.default_rng([seed, 4])
        self._b0 = rng.exponential(0.1, size=size)
        self._b1 = rng.uniform(size=size)
        self._b2 = rng.uniform(size=size)
        self._steps = np.arange(1, max_steps + 1, dtype=np.int64)
        self._work = self._steps * self.step_time

    def curve(self, index: int, config: Mapping[str, Any] | None = None) -> Curve:
        """Curve ``index`` of the pool; its b0, b1, b2 from ``config`` where the config sets them."""
        if not 0 <= index < self.size:
            raise IndexError(f"curve {index} outside the pool of {self.size}")
        eps = np.random.default_rng([self.seed, 2, index]).normal(0.0, self.noise, size=len(self._steps)) \
            if self.noise > 0 else 0.0
        b = [float(config[name]) if config and name in config else float(pool[index])
             for name, pool in zip(CURVE_PARAMETERS, (self._b0, self._b1, self._b2))]
        scores = synthetic_scores(b[0], b[1], b[2], self._steps, eps)
        return Curve(f"s{index}", self._steps, scores, self._work)

    def best_within(self, work_budget: float, mode: str) -> float | None:
        """Best score any curve of the pool reaches within ``work_budget`` (branch and bound:
        the noiseless score at the last reachable step bounds each curve, noise only lowers it)."""
        reachable = int(np.searchsorted(self._work, work_budget, side="right"))
        if reachable == 0:
            return None
        if self.config_ranges:  # the best corner of the space, noiseless: an upper bound on any trial
            b0, b1, b2 = ((self.config_ranges[name][pick] if name in self.config_ranges else pool)
                          for name, pick, pool in zip(CURVE_PARAMETERS, (1, 1, 0), (self._b0, self._b1, self._b2)))
            return float(np.max(synthetic_scores(b0, b1, b2, np.float64(reachable), 0.0)))
        bounds = synthetic_scores(self._b0, self._b1, self._b2, np.float64(reachable), 0.0)
        best: float | None = None
        for index in np.argsort(-bounds, kind="stable"):
            if best is not None and bounds[index] <= best:
                break
            value = self.curve(int(index)).best_within(work_budget, "max")
            if value is not None and (best is None or value > best):
                best = value
        return best
