"""``gpei``: a Gaussian process with expected improvement, written for hpcsched on numpy (no extra install).

It learns from what ``kde`` learns from (samplers.evidence: the highest step that enough trials reached,
each of those trials' last score up to it), with the scores as normal scores by their rank there (no score
scale matters). The process: a Matern-5/2 kernel over the space's unit scale (log where a range is; a
choice's value at its position over the count), one lengthscale and one noise level, chosen from a small
grid by the marginal likelihood at every fit. A proposal is the candidate of highest expected improvement
over the best fitted score: drawn at random and around the best trials in a real run; where a fixed pool of
configurations is all there is, the pool's unused ones (``choose``). Until a model can be fitted, and a
``random_fraction`` of the time afterwards, it draws at random, as ``kde`` does.

Where kde's ratio of two densities needs many good trials to say where to look, the process also reads
how far below the best each trial stands, which tells a few dozen trials apart.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from hpcsched.samplers.kde import KdeSampler

LENGTHSCALES = (0.1, 0.2, 0.35, 0.6, 1.0)  # of the unit scale, the grid the marginal likelihood chooses from
NOISES = (0.01, 0.1, 0.3)  # noise variances, relative to the normal scores' unit variance
RANDOM_CANDIDATES = 256  # uniform draws per proposal in a real run
LOCAL_CANDIDATES = 64  # draws around the best trials per proposal in a real run
LOCAL_SPREAD = 0.1  # their standard deviation on the unit scale


def matern52(a: np.ndarray, b: np.ndarray, lengthscale: float) -> np.ndarray:
    """The Matern-5/2 kernel (unit variance) between the rows of ``a`` and ``b``."""
    d2 = (((a[:, None, :] - b[None, :, :]) / lengthscale) ** 2).sum(axis=-1)
    r = np.sqrt(5.0 * d2)
    return (1.0 + r + r * r / 3.0) * np.exp(-r)


def expected_improvement(x: np.ndarray, y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The expected improvement over ``max(y)`` at each row of ``candidates``, from a process fitted to
    (``x``, ``y``) with the lengthscale and noise of highest marginal likelihood."""
    best = None
    for lengthscale in LENGTHSCALES:
        kernel = matern52(x, x, lengthscale)
        for noise in NOISES:
            chol = np.linalg.cholesky(kernel + noise * np.eye(len(x)))  # (positive definite: noise > 0)
            alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
            likelihood = -0.5 * float(y @ alpha) - float(np.log(np.diag(chol)).sum())
            if best is None or likelihood > best[0]:
                best = (likelihood, lengthscale, chol, alpha)
    assert best is not None  # (the grids are not empty)
    _, lengthscale, chol, alpha = best
    cross = matern52(candidates, x, lengthscale)
    mean = cross @ alpha
    v = np.linalg.solve(chol, cross.T)
    sd = np.sqrt(np.maximum(1.0 - (v * v).sum(axis=0), 1e-12))
    gain = mean - float(y.max())
    z = gain / sd
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    return gain * cdf + sd * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


class GpEiSampler(KdeSampler):
    """See the module docstring (kde's evidence, its random fallback and its records)."""

    name = "gpei"

    def config(self, index: int) -> dict[str, Any]:
        """Trial ``index``'s configuration: the best of random and local candidates by expected improvement."""
        rng = self._proposal_rng(index)
        data = self._data(rng)
        if data is None:
            return self._random.config(index)
        self._from_model.add(index)
        x, y = data
        width = len(self._params)
        local = x[np.argsort(-y)[:max(1, LOCAL_CANDIDATES // 8)]]
        around = local[rng.integers(len(local), size=LOCAL_CANDIDATES)] + rng.normal(0, LOCAL_SPREAD,
                                                                                      (LOCAL_CANDIDATES, width))
        candidates = np.clip(np.vstack([rng.uniform(size=(RANDOM_CANDIDATES, width)), around]), 0.0, 1.0)
        best = candidates[int(np.argmax(expected_improvement(x, y, candidates)))]
        scale = np.maximum(self._choices - 1, 1)
        unit = np.where(self._choices > 0, np.rint(best * scale), best)  # (back to a choice's position)
        return self._config_at(unit)

    def choose(self, index: int, candidates: Sequence[Mapping[str, Any]]) -> int:
        """Trial ``index``'s pick among ``candidates`` (a pool's unused configurations): the one of highest
        expected improvement (at random without a model)."""
        rng = self._proposal_rng(index)
        data = self._data(rng)
        if data is None:
            return int(rng.integers(len(candidates)))
        self._from_model.add(index)
        x, y = data
        pool = self._scaled(np.array([self._unit(c) for c in candidates]))
        return int(np.argmax(expected_improvement(x, y, pool)))

    def _data(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray] | None:
        """The fitted trials on the [0, 1] scale and their normal scores, or None (at random this time, or
        too few trials yet)."""
        scored = self._fitted(rng)
        if scored is None:
            return None
        signed = np.array([self.mode.sign * score for score, _ in scored])
        ranks = signed.argsort(kind="stable").argsort(kind="stable")
        normal = NormalDist()
        y = np.array([normal.inv_cdf((rank + 0.5) / len(signed)) for rank in ranks.tolist()])
        return self._scaled(np.array([self._units[trial] for _, trial in scored])), y

    def _scaled(self, units: np.ndarray) -> np.ndarray:
        """kde's unit coordinates with a choice's position over its count - 1, an inactive parameter at 0.5."""
        return np.nan_to_num(units / np.where(self._choices > 0, np.maximum(self._choices - 1, 1), 1), nan=0.5)
