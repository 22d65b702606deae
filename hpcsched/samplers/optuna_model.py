"""Optuna's samplers (TPE, Gaussian process, CMA-ES, NSGA-II, ..., or a user's own object) behind
hpcsched's sampler interface.

hpcsched keeps its own scheduler; Optuna only proposes configurations (ask-and-tell). The model
is fitted as BOHB fits its own (Falkner et al., 2018): on one budget, the highest step that at
least ``max(startup_trials, dimensions + 1)`` trials have reached, with each of those trials told
as complete with its score at that step (the last it reported up to it) and every score it
reported as intermediate values. A model on the early rungs alone learns what wins early, which
on many curves is not what wins at R; the scheduler's own promotions then feed it more of the
same. Until enough trials have reported, proposals are random, and afterwards a
``random_fraction`` of them still are (BOHB's 1/3 by default), so a model that settled early on a
poor region cannot keep the run there.

Reproducible and resumable: the proposal for trial ``index`` comes from a sampler seeded by
``(seed, index)`` and a study built from the scores the journal's records hold, so a resumed run,
shown the same records (``observe``), proposes what the uninterrupted run would have. (A user's own
sampler object is used as it is, unseeded: its proposals are as reproducible as it makes them.)

With ``objectives`` (metrics the trials report beside the score, ``ctx.report(step, acc, loss=...)``)
the study has one direction per objective, the run's metric first, and each trial is told the values
of the report it is fitted on; a trial whose report lacks one of them is left out, with a warning.
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any, Literal

import numpy as np

from hpcsched.core.errors import UserError
from hpcsched.core.records import Record, Reported, TrialCreated
from hpcsched.samplers import optuna_class_name
from hpcsched.samplers.evidence import fit_step, score_at
from hpcsched.core.space import Param, Sampler, Space

log = logging.getLogger(__name__)


class OptunaSampler:
    """Optuna's ``name`` sampler (tpe, gp, cmaes, nsgaii, nsgaiii, optuna.<Class>), or ``model``, over
    ``space``; see the module docstring."""

    def __init__(self, space: Space, seed: int, mode: str, name: str, startup_trials: int = 10,
                 random_fraction: float = 1 / 3, objectives: tuple[tuple[str, str], ...] = (), model: Any = None,
                 lowest_step: float = 0.0):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "Trial 3 finished" line per trial
        if space.grid_params:
            raise ValueError(f"sampler {name}: grid parameters ({', '.join(p.name for p in space.grid_params)}) "
                             f"cannot be proposed by a model; use choice")
        self._optuna = optuna
        self.space = space
        self.seed = seed
        self.directions = [_direction(mode)] + [_direction(m) for _, m in objectives]
        self.objectives = tuple(name for name, _ in objectives)
        self.model = model
        self.name = name
        self.startup_trials = startup_trials
        self.random_fraction = random_fraction
        self.lowest_step = lowest_step  # the lowest step the model may be fitted at (sampler.fit_from x R)
        self._random = Sampler(space, seed)
        self._params = space.random_params
        self._distributions = {p.name: _distribution(p) for p in self._params}
        self.min_trials = max(startup_trials, len(self._params) + 1, 1)  # on the budget the model is fitted at
        self._params_of: dict[str, dict[str, Any]] = {}  # trial -> its Optuna parameters
        self._scores: dict[str, dict[int, float]] = {}  # trial -> step -> first finite score reported there
        self._values: dict[str, dict[int, list[float] | None]] = {}  # with objectives: trial -> step -> values

    @property
    def capacity(self) -> int | None:
        return None

    def config(self, index: int) -> dict[str, Any]:
        """Trial ``index``'s configuration, proposed by a model of the scores observed so far
        (or, a ``random_fraction`` of the time, drawn at random as the random sampler would)."""
        if np.random.default_rng([self.seed, 6, index]).random() < self.random_fraction:
            return self._random.config(index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
            study = self._optuna.create_study(directions=self.directions, sampler=self._sampler_for(index))
            study.add_trials(self._told())
            trial = study.ask(self._distributions)
        return self._config_from(trial.params)

    def observe(self, record: Record) -> None:
        """Learn from one journal record (live, or replayed in order on resume)."""
        if isinstance(record, TrialCreated):
            params = self._params_from(record.config)
            if params is not None:
                self._params_of[record.trial] = params
                self._scores[record.trial] = {}
                self._values[record.trial] = {}
        elif isinstance(record, Reported) and record.trial in self._scores and math.isfinite(record.score):
            if record.step not in self._scores[record.trial]:
                self._scores[record.trial][record.step] = record.score
                self._values[record.trial][record.step] = self._objective_values(record)

    def _objective_values(self, record: Reported) -> list[float] | None:
        """The report's score and objective metrics, None (logged) when one is missing or not finite."""
        values = [record.score]
        for name in self.objectives:
            value = record.metrics.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                log.warning("sampler %s: trial %s reported no finite %r at step %d; the model will not learn "
                            "from that report", self.name, record.trial, name, record.step)
                return None
            values.append(float(value))
        return values

    def budget(self) -> int | None:
        """The step the model is fitted at: the highest that ``min_trials`` trials have reached, if at least
        ``lowest_step`` (None: no model yet)."""
        return fit_step(self._scores, self.min_trials, self.lowest_step)

    # ------------------------------------------------------------ internals

    def _told(self) -> list:
        budget = self.budget()
        if budget is None:
            return []
        frozen = []
        for trial_id, scores in self._scores.items():  # in creation order
            score = score_at(scores, budget)
            if score is None:
                continue
            params = self._params_of[trial_id]  # a conditional space: only the parameters it had
            last = max(step for step in scores if step <= budget)
            values = self._values[trial_id][last] if self.objectives else [score]
            if values is None:
                continue
            frozen.append(self._optuna.trial.create_trial(
                state=self._optuna.trial.TrialState.COMPLETE, values=values, params=params,
                distributions={name: self._distributions[name] for name in params},
                intermediate_values=dict(scores)))
        return frozen

    def _sampler_for(self, index: int):
        if self.model is not None:
            return self.model
        samplers = self._optuna.samplers
        seed = int(np.random.SeedSequence([self.seed, 3, index]).generate_state(1)[0])
        if self.name == "gp":
            return samplers.GPSampler(seed=seed, n_startup_trials=self.startup_trials)
        if self.name == "tpe":
            return samplers.TPESampler(seed=seed, n_startup_trials=self.startup_trials, multivariate=True,
                                       group=self.space.conditional)
        if self.name == "cmaes":
            return samplers.CmaEsSampler(seed=seed, n_startup_trials=self.startup_trials)
        cls = getattr(samplers, optuna_class_name(self.name))
        try:
            return cls(seed=seed)
        except TypeError as exc:
            raise UserError(f"sampler: {self.name} cannot be made from its name alone ({exc}); pass the sampler "
                            f"object through the Python API: hpcsched.run(train, spec, sampler=...)") from None

    def _config_from(self, params: dict[str, Any]) -> dict[str, Any]:
        def value(param: Param) -> Any:
            proposed = params[param.name]
            return param.values[int(proposed)] if param.kind == "choice" else param.quantized(proposed)

        return self.space.config_with({}, value)

    def _params_from(self, config: dict[str, Any]) -> dict[str, Any] | None:
        """The Optuna parameters of a journalled configuration (None, logged, if it is not of this space)."""
        params: dict[str, Any] = {}
        for param in self._params:
            if param.name not in config:
                if param.when and not param.active(config):
                    continue  # a conditional parameter, rightly absent
                log.warning("sampler %s: a journalled configuration has no %r; the model will not learn from it",
                            self.name, param.name)
                return None
            value = config[param.name]
            if param.kind == "choice":
                matches = [i for i, v in enumerate(param.values) if v == value]
                if not matches:
                    log.warning("sampler %s: journalled %s=%r is not one of the choices; the model will not "
                                "learn from it", self.name, param.name, value)
                    return None
                value = matches[0]
            params[param.name] = value
        return params


def _direction(mode: str) -> Literal["maximize", "minimize"]:
    return "maximize" if mode == "max" else "minimize"


def _distribution(param: Param):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if param.kind == "choice":  # by position: Optuna's choices must be plain scalars, ours may be lists
        return CategoricalDistribution(tuple(range(len(param.values))))
    if param.kind in ("randint", "logint"):  # a step is applied to the proposal (Param.quantized)
        return IntDistribution(int(param.low), int(param.high) - 1, log=param.kind == "logint")
    return FloatDistribution(param.low, param.high, log=param.kind == "loguniform")
