"""The ``qmc`` sampler: random parameters from a scrambled Sobol sequence (scipy).

A quasi-random sequence covers the space more evenly than independent draws, which matters
when a run can afford only a few dozen trials. Trial ``i`` takes point ``i`` of a sequence
scrambled with ``seed``, so a resumed run needs only the number of trials made; grid
parameters are crossed as with the random sampler.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from hpcsched.core.space import Sampler, Space


class QmcSampler:
    """Grid points as :class:`hpcsched.core.space.Sampler`; random parameters from Sobol point ``index``. (It has
    no ``choose``: in a fixed pool, each trial replays the configuration nearest its point.)"""

    def __init__(self, space: Space, seed: int):
        self.space = space
        self.seed = seed
        self._grid = Sampler(space, seed)
        self._random = space.random_params

    @property
    def capacity(self) -> int | None:
        return self.space.capacity

    def observe(self, record: object) -> None:
        """Quasi-random points learn nothing from the run."""

    def config(self, index: int) -> dict[str, Any]:
        point = self._grid.grid_point(index)
        if not self._random:
            return self.space.config_with(point, lambda param: None)
        from scipy.stats import qmc

        engine = qmc.Sobol(d=len(self._random), scramble=True, seed=np.random.default_rng([self.seed, 5]))
        if index:
            engine.fast_forward(index)
        with warnings.catch_warnings():  # one point at a time: scipy warns that n is not a power of 2
            warnings.simplefilter("ignore", UserWarning)
            unit = dict(zip((p.name for p in self._random), engine.random(1)[0]))
        return self.space.config_with(point, lambda param: param.from_unit(float(unit[param.name])))
