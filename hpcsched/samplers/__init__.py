"""Samplers: where each new trial's configuration comes from.

A sampler answers ``config(index)`` for the run's ``index``-th trial and is shown every
journal record through ``observe(record)`` (live, and again in order when a run resumes),
so a model-based sampler rebuilds what it learnt from the journal alone. The scheduler keeps
deciding fidelity, pauses and atoms; a sampler only proposes configurations.

- ``random`` (default): :class:`hpcsched.space.Sampler`, grid points crossed with seeded draws.
- ``tpe`` / ``gp``: Optuna's TPE and Gaussian-process samplers through ask-and-tell, fitted as
  BOHB fits its model, on the highest step enough trials reached
  (:mod:`hpcsched.samplers.optuna_model`).
- ``qmc``: a scrambled Sobol sequence (scipy), a space-filling alternative to random draws.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from hpcsched.records import Record
from hpcsched.space import Sampler, Space

SAMPLER_NAMES = ("random", "tpe", "gp", "qmc")
MODEL_SAMPLERS = ("tpe", "gp")  # learn from the scores; need a space without grid parameters
NEEDS = {"tpe": ("optuna",), "gp": ("optuna", "torch", "scipy"), "qmc": ("scipy",)}
EXTRA_FOR = {"optuna": "hpcsched[samplers]", "scipy": "hpcsched[samplers]", "torch": "hpcsched[examples]"}


@dataclass(frozen=True)
class SamplerSpec:
    """The spec's ``sampler:`` section."""

    name: str = "random"
    startup_trials: int = 10  # tpe, gp: trials that must reach a step before a model is fitted there
    random_fraction: float = 1 / 3  # tpe, gp: share of proposals drawn at random all the same (BOHB's)


class ConfigSampler(Protocol):
    """Proposes trial configurations; learns from the journal's records if it wants to."""

    @property
    def capacity(self) -> int | None: ...  # how many distinct trials it can propose (None: unlimited)

    def config(self, index: int) -> dict[str, Any]: ...

    def observe(self, record: Record) -> None: ...


def missing_modules(name: str) -> list[str]:
    """The modules sampler ``name`` needs that are not installed."""
    return [module for module in NEEDS.get(name, ()) if importlib.util.find_spec(module) is None]


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


def make_sampler(spec: SamplerSpec, space: Space | None, seed: int, mode: str) -> ConfigSampler:
    """The sampler ``spec`` names over ``space`` (none: empty configurations), seeded with ``seed``."""
    if space is None:
        return NoSpace()
    if spec.name == "random":
        return Sampler(space, seed)
    if spec.name == "qmc":
        from hpcsched.samplers.qmc import QmcSampler
        return QmcSampler(space, seed)
    from hpcsched.samplers.optuna_model import OptunaSampler
    return OptunaSampler(space, seed, mode, spec.name, spec.startup_trials, spec.random_fraction)
