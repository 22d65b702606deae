"""``kde``: BOHB's model (Falkner et al., 2018), written for hpcsched, that can also choose among given candidates.

On the step the model is fitted at (samplers.evidence: the highest that enough trials reached), the
trials are split into the good (the best ``good_fraction``, at least one more than the space has
parameters) and the bad (the rest, as many at least); each set is a kernel density over the space's
unit scale (Gaussian per range, log-scaled where the range is; Aitchison-Aitken per choice;
bandwidths by the normal reference rule). A proposal is the candidate with the highest ratio of good
to bad density. Candidates are drawn from the good density with widened bandwidths (BOHB's 3x) in a
real run; where a fixed pool of configurations is all there is (a replayed benchmark), the sampler is
asked to ``choose`` among the pool's unused ones instead, as Syne Tune's ``restrict_configurations``
does. Until a model can be fitted, and a ``random_fraction`` of the time afterwards, it draws at random.

No library beyond numpy; proposals are seeded by ``(seed, index)`` and the model is rebuilt from the
journal's records alone, so a resumed run proposes what the uninterrupted one would have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from hpcsched.core.mode import Mode
from hpcsched.core.records import Record, Reported, TrialCreated
from hpcsched.samplers.evidence import fit_step, score_at
from hpcsched.core.space import Param, Sampler, Space

CANDIDATES = 64  # BOHB's number of samples from the good density per proposal
BANDWIDTH_FACTOR = 3.0  # BOHB's widening of the good density's bandwidths when drawing candidates
MIN_BANDWIDTH = 1e-3  # BOHB's floor on a bandwidth


@dataclass(frozen=True)
class Density:
    """A product-kernel density over unit coordinates (a choice's coordinate is its value's position), mixed
    with the uniform density as one more point (as TPE's prior): far from every trial, where the kernels'
    tails say nothing, the ratio of two densities falls back to that of their sizes."""

    points: np.ndarray  # (n, d); NaN where a parameter is inactive
    bandwidths: np.ndarray  # (d,)
    choices: np.ndarray  # (d,) number of values of a choice, 0 for a range

    def log_density(self, x: np.ndarray) -> np.ndarray:
        """log density at each row of ``x`` (m, d); an inactive parameter on either side counts as a match."""
        diff = x[:, None, :] - self.points[None, :, :]  # (m, n, d)
        ranges = self.choices == 0
        h = self.bandwidths
        log_k = np.where(ranges, -0.5 * (diff / h) ** 2 - np.log(h) - 0.5 * math.log(2 * math.pi), 0.0)
        lam = np.clip(h, 0.0, np.where(ranges, 1.0, (self.choices - 1) / np.maximum(self.choices, 1)))
        same = np.log(np.maximum(1 - lam, 1e-12))
        other = np.log(np.maximum(lam / np.maximum(self.choices - 1, 1), 1e-12))
        log_k = np.where(ranges, log_k, np.where(diff == 0, same, other))
        log_k = np.where(np.isnan(diff), 0.0, log_k)
        prior = np.full((len(x), 1), -np.log(np.maximum(self.choices, 1)).sum())  # the uniform density
        total = np.concatenate([log_k.sum(axis=2), prior], axis=1)  # (m, n + 1)
        peak = total.max(axis=1, keepdims=True)
        return peak[:, 0] + np.log(np.exp(total - peak).mean(axis=1))


def density(points: np.ndarray, choices: np.ndarray) -> Density:
    """The normal reference rule's bandwidths (statsmodels' ``normal_reference``), floored."""
    n, d = points.shape
    spread = np.nanstd(points, axis=0, ddof=1) if n > 1 else np.zeros(d)
    bandwidths = 1.059 * np.nan_to_num(spread) * n ** (-1.0 / (4 + d))
    return Density(points, np.maximum(bandwidths, MIN_BANDWIDTH), choices)


class KdeSampler:
    """See the module docstring."""

    capacity = None
    name = "kde"  # (the spec's name, in messages)

    def __init__(self, space: Space, seed: int, mode: str, startup_trials: int = 10, random_fraction: float = 1 / 3,
                 good_fraction: float = 0.15, lowest_step: float = 0.0):
        if space.grid_params:
            raise ValueError(f"sampler {self.name}: grid parameters ({', '.join(p.name for p in space.grid_params)}) "
                             f"cannot be proposed by a model; use choice")
        self.space = space
        self.seed = seed
        self.mode = Mode(mode)
        self.random_fraction = random_fraction
        self.good_fraction = good_fraction
        self.lowest_step = lowest_step  # the lowest step the model may be fitted at (sampler.fit_from x R)
        self._params = space.random_params
        self._choices = np.array([len(p.values) if p.kind == "choice" else 0 for p in self._params])
        self.min_trials = max(startup_trials, len(self._params) + 1, 2)
        self._random = Sampler(space, seed)
        self._units: dict[str, np.ndarray] = {}  # trial -> its configuration on the unit scale
        self._scores: dict[str, dict[int, float]] = {}  # trial -> step -> first finite score there
        self._from_model: set[int] = set()  # the trial indices whose proposal the model made

    def config(self, index: int) -> dict[str, Any]:
        """Trial ``index``'s configuration: the best of candidates drawn from the good density."""
        rng = self._proposal_rng(index)
        model = self._model(rng)
        if model is None:
            return self._random.config(index)
        self._from_model.add(index)
        good, _ = model
        units = np.array([self._draw(good, rng) for _ in range(CANDIDATES)])
        best = units[int(np.argmax(self._ratio(model, units)))]
        return self._config_at(best)

    def choose(self, index: int, candidates: Sequence[Mapping[str, Any]]) -> int:
        """Trial ``index``'s pick among ``candidates`` (a pool's unused configurations): the position of
        the one with the highest ratio of good to bad density (at random without a model)."""
        rng = self._proposal_rng(index)
        model = self._model(rng)
        if model is None:
            return int(rng.integers(len(candidates)))
        self._from_model.add(index)
        return int(np.argmax(self._ratio(model, np.array([self._unit(c) for c in candidates]))))

    def from_model(self, index: int) -> bool:
        """Whether trial ``index``'s proposal came from the model rather than a random draw."""
        return index in self._from_model

    def observe(self, record: Record) -> None:
        """Learn from one journal record (live, or replayed in order on resume)."""
        if isinstance(record, TrialCreated):
            self._units[record.trial] = self._unit(record.config)
            self._scores[record.trial] = {}
        elif isinstance(record, Reported) and record.trial in self._scores and math.isfinite(record.score):
            self._scores[record.trial].setdefault(record.step, record.score)

    # ------------------------------------------------------------ internals

    def _proposal_rng(self, index: int) -> np.random.Generator:
        """The generator of trial ``index``'s proposal: a function of the seed and the index alone, so that a
        resumed run proposes what the uninterrupted one would have."""
        return np.random.default_rng([self.seed, 9, index])

    def _config_at(self, unit: np.ndarray) -> dict[str, Any]:
        """The configuration at ``unit`` (a coordinate per parameter: a range's unit scale, a choice's position)."""
        return self.space.config_with({}, lambda param: _from_unit(param, unit[self._params.index(param)]))

    def _fitted(self, rng: np.random.Generator) -> list[tuple[float, str]] | None:
        """(score, trial) of every trial at the step a model is fitted on, or None (at random this time, or
        too few trials yet)."""
        if rng.random() < self.random_fraction:
            return None
        step = fit_step(self._scores, self.min_trials, self.lowest_step)
        if step is None:
            return None
        return [(score, trial) for trial in self._scores if (score := score_at(self._scores[trial], step)) is not None]

    def _model(self, rng: np.random.Generator) -> tuple[Density, Density] | None:
        """The good and bad densities, or None (at random this time, or too few trials yet)."""
        scored = self._fitted(rng)
        if scored is None:
            return None
        scored.sort(key=lambda pair: -self.mode.sign * pair[0])  # best first
        floor = len(self._params) + 1
        n_good = min(len(scored), max(floor, math.ceil(self.good_fraction * len(scored))))
        n_bad = min(len(scored), max(floor, len(scored) - n_good))
        good = np.array([self._units[trial] for _, trial in scored[:n_good]])
        bad = np.array([self._units[trial] for _, trial in scored[-n_bad:]])
        return density(good, self._choices), density(bad, self._choices)

    @staticmethod
    def _ratio(model: tuple[Density, Density], units: np.ndarray) -> np.ndarray:
        good, bad = model
        return good.log_density(units) - bad.log_density(units)

    def _draw(self, good: Density, rng: np.random.Generator) -> np.ndarray:
        """One candidate near a good configuration, its bandwidths widened (BOHB)."""
        point = good.points[int(rng.integers(len(good.points)))].copy()
        for j, count in enumerate(self._choices):
            if count == 0:
                centre = rng.uniform() if np.isnan(point[j]) else point[j]
                point[j] = float(np.clip(rng.normal(centre, BANDWIDTH_FACTOR * good.bandwidths[j]), 0.0, 1.0))
            elif np.isnan(point[j]) or rng.uniform() < min(1.0, BANDWIDTH_FACTOR * good.bandwidths[j]):
                point[j] = float(rng.integers(count))
        return point

    def _unit(self, config: Mapping[str, Any]) -> np.ndarray:
        return np.array([p.to_unit(config[p.name]) if p.name in config else np.nan for p in self._params])


def _from_unit(param: Param, u: float) -> Any:
    if param.kind == "choice":
        return param.values[int(u)]
    return param.from_unit(min(max(float(u), 0.0), 1.0 - 1e-12))
