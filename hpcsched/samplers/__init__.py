"""Samplers: where each new trial's configuration comes from.

A sampler answers ``config(index)`` for the run's ``index``-th trial and is shown every
journal record through ``observe(record)`` (live, and again in order when a run resumes),
so a model-based sampler rebuilds what it learnt from the journal alone. The scheduler keeps
deciding fidelity, pauses and atoms; a sampler only proposes configurations.

- ``random`` (default): :class:`hpcsched.core.space.Sampler`, grid points crossed with seeded draws.
- ``tpe`` / ``gp`` / ``cmaes`` / ``nsgaii`` / ``nsgaiii``, or any class of ``optuna.samplers`` as
  ``optuna.<Class>``: Optuna's samplers through ask-and-tell, fitted as BOHB fits its model, on the
  highest step enough trials reached (:mod:`hpcsched.samplers.optuna_model`); with ``objectives``
  (metrics reported beside the score) a multi-objective one such as NSGA-II learns from several.
  Through the Python API, a user's own ``optuna.samplers.BaseSampler`` object.
- ``qmc``: a scrambled Sobol sequence (scipy), a space-filling alternative to random draws.
- ``kde``: BOHB's model written for hpcsched (numpy only, :mod:`hpcsched.samplers.kde`); it can also
  ``choose`` among a fixed pool of configurations, as a replayed benchmark offers.
- ``gpei``: a Gaussian process with expected improvement on kde's evidence (numpy only,
  :mod:`hpcsched.samplers.gp_ei`); it can ``choose`` too.

A sampler may have ``choose(index, candidates) -> position``: where the run draws from a fixed pool
(a trace replayed with its configurations table) it is asked to pick among the unused ones instead of
proposing a point whose nearest recorded configuration is replayed. And ``from_model(index) -> bool``
(``kde``, ``gpei``): whether trial ``index``'s proposal came from the model rather than a random draw; the
journal says so of each trial, and the schedulers' lowest rung judges by the random draws alone
(schedulers/rungs.py).

May import: ``core`` only (the records a sampler learns from, the space it proposes in).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from hpcsched.core.records import Record
from hpcsched.core.space import Sampler, Space

OPTUNA_NAMES = {"tpe": "TPESampler", "gp": "GPSampler", "cmaes": "CmaEsSampler", "nsgaii": "NSGAIISampler",
                "nsgaiii": "NSGAIIISampler"}  # short names of Optuna's samplers
OPTUNA_PREFIX = "optuna."  # optuna.<Class>: any other class of optuna.samplers
NUMPY_MODELS = ("kde", "gpei")  # model-based samplers written for hpcsched on numpy
SAMPLER_NAMES = ("random", "qmc", *NUMPY_MODELS, *OPTUNA_NAMES)
NEEDS = {"tpe": ("optuna",), "gp": ("optuna", "torch", "scipy"), "qmc": ("scipy",), "cmaes": ("optuna", "cmaes"),
         "nsgaii": ("optuna",), "nsgaiii": ("optuna",)}
EXTRA_FOR = {"optuna": "hpcsched[samplers]", "scipy": "hpcsched[samplers]", "cmaes": "hpcsched[samplers]",
             "torch": "hpcsched[examples]"}


def is_optuna(name: str) -> bool:
    """Whether sampler ``name`` is one of Optuna's."""
    return name in OPTUNA_NAMES or name.startswith(OPTUNA_PREFIX)


def is_model(name: str) -> bool:
    """Whether sampler ``name`` learns from the scores (Optuna's, kde or gpei; a space without grid parameters)."""
    return name in NUMPY_MODELS or is_optuna(name)


def optuna_class_name(name: str) -> str:
    """The class of ``optuna.samplers`` that sampler ``name`` names."""
    return OPTUNA_NAMES.get(name) or name[len(OPTUNA_PREFIX):]


@dataclass(frozen=True)
class SamplerSpec:
    """The spec's ``sampler:`` section."""

    name: str = "random"
    startup_trials: int = 10  # Optuna's: trials that must reach a step before a model is fitted there
    random_fraction: float = 1 / 3  # Optuna's: share of proposals drawn at random all the same (BOHB's)
    objectives: tuple[tuple[str, str], ...] = ()  # Optuna's: more metrics to learn from, (name, max | min)
    fit_from: float = 0.0  # a model is fitted on no step below this share of R (0: BOHB's rule alone)


class ConfigSampler(Protocol):
    """Proposes trial configurations; learns from the journal's records if it wants to (optionally
    ``choose`` and ``from_model``, above: without ``from_model`` every proposal counts as a random draw)."""

    @property
    def capacity(self) -> int | None: ...  # how many distinct trials it can propose (None: unlimited)

    def config(self, index: int) -> dict[str, Any]: ...

    def observe(self, record: Record) -> None: ...


def proposed_by_model(sampler: ConfigSampler, index: int) -> bool:
    """Whether ``sampler`` says its model made trial ``index``'s proposal (a sampler without ``from_model``
    draws at random as far as the run knows)."""
    from_model = getattr(sampler, "from_model", None)
    return bool(from_model and from_model(index))


def missing_modules(name: str) -> list[str]:
    """The modules sampler ``name`` needs that are not installed."""
    needs = NEEDS.get(name, ("optuna",) if name.startswith(OPTUNA_PREFIX) else ())
    return [module for module in needs if importlib.util.find_spec(module) is None]


class NoSpace:
    """The sampler of a run without a space: every trial's configuration is empty."""

    capacity = None

    def config(self, index: int) -> dict[str, Any]:
        return {}

    def observe(self, record: Record) -> None:
        pass


class IndexSampler:
    """Configurations from a function of the trial index alone (tests, benchmarks)."""

    capacity = None

    def __init__(self, config_of: Callable[[int], dict[str, Any]]):
        self.config_of = config_of

    def config(self, index: int) -> dict[str, Any]:
        return self.config_of(index)

    def observe(self, record: Record) -> None:
        pass


def make_sampler(spec: SamplerSpec, space: Space | None, seed: int, mode: str, model: Any = None,
                 R: int = 0) -> ConfigSampler:
    """The sampler ``spec`` names over ``space`` (none: empty configurations), seeded with ``seed``;
    ``model``, an ``optuna.samplers.BaseSampler`` object, proposes instead of the one ``spec`` names;
    ``R``: the run's most steps a trial trains (a model fits on no step below ``spec.fit_from`` of it)."""
    if space is None:
        return NoSpace()
    from hpcsched.samplers.optuna_model import OptunaSampler
    lowest = spec.fit_from * R
    if model is not None:
        return OptunaSampler(space, seed, mode, type(model).__name__, spec.startup_trials, spec.random_fraction,
                             spec.objectives, model=model, lowest_step=lowest)
    if spec.name == "random":
        return Sampler(space, seed)
    if spec.name == "qmc":
        from hpcsched.samplers.qmc import QmcSampler
        return QmcSampler(space, seed)
    if spec.name == "kde":
        from hpcsched.samplers.kde import KdeSampler
        return KdeSampler(space, seed, mode, spec.startup_trials, spec.random_fraction, lowest_step=lowest)
    if spec.name == "gpei":
        from hpcsched.samplers.gp_ei import GpEiSampler
        return GpEiSampler(space, seed, mode, spec.startup_trials, spec.random_fraction, lowest_step=lowest)
    return OptunaSampler(space, seed, mode, spec.name, spec.startup_trials, spec.random_fraction, spec.objectives,
                         lowest_step=lowest)
