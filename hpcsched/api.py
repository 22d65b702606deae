"""The Python entry point for notebooks and scripts: ``hpcsched.run(train, spec, backend=...)``.

The same run as ``hpcsched run`` / ``hpcsched simulate``: a spec file, a parsed spec or a plain
dict (validated as a file is: every problem at once, ``SpecError``); the trainable as a
``'file.py:function'`` / ``'module:function'`` reference or as the function itself. Trials run
in other processes, so a function is passed on by where it is defined: a top-level function of
a ``.py`` file (a script's own ``__main__`` too). Nothing heavy is imported until a run starts.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from hpcsched.core.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from hpcsched.analysis.loaders import Run
    from hpcsched.spec import Experiment, Spec

BACKENDS = ("local", "slurm", "sim")


@dataclass(frozen=True)
class SearchResult:
    """What a search returned: a real run's result.json and directory, or the simulator's summary."""

    result: dict[str, Any]  # result.json of a real run ({} for a simulation)
    run_dir: Path | None = None
    summary: pd.DataFrame | None = None  # one row per variant and seed (simulation)

    @property
    def best(self) -> dict[str, Any] | None:
        """The best checkpointed report (trial, config, score, step, checkpoint), None if there is none."""
        return self.result.get("best")

    def analysis(self) -> Run:
        """The run's journal as pandas frames (``trials``, ``scores``, ``allocations``, ...), as
        ``hpcsched.analysis.load_run`` gives them."""
        if self.run_dir is None:
            raise UserError("a simulation has no run directory; its summary is SearchResult.summary")
        from hpcsched.analysis import load_run

        return load_run(self.run_dir)


def trainable_reference(train: Callable[..., Any] | str) -> str:
    """``train`` as a reference another process can import: 'file.py:function' for a function."""
    if isinstance(train, str):
        return train
    if not callable(train):
        raise UserError(f"train: expected a function or 'file.py:function', got {train!r}")
    name = getattr(train, "__name__", "")
    if getattr(train, "__qualname__", name) != name or not name.isidentifier():
        raise UserError(f"train: {getattr(train, '__qualname__', train)!r} is not a top-level function; trials "
                        f"run in other processes and import it by name")
    try:
        source = inspect.getsourcefile(train)
    except TypeError:
        source = None
    if source is None or not source.endswith(".py") or not Path(source).is_file():
        raise UserError(f"train: {name!r} is not defined in a .py file (a notebook cell?); trials run in other "
                        f"processes: put it in a file and pass it, or 'file.py:{name}'")
    return f"{Path(source).resolve()}:{name}"


def _experiment(spec: str | Path | Mapping[str, Any] | Spec, train: Callable[..., Any] | str | None) -> Experiment:
    from hpcsched.spec import Cell, Experiment, Spec, load_experiment, parse_experiment

    if isinstance(spec, Spec):
        base = spec if train is None else replace(spec, trainable=trainable_reference(train))
        return Experiment(base, (Cell((), base),))
    if isinstance(spec, Mapping):
        raw = dict(spec)
        if train is not None:
            raw["trainable"] = trainable_reference(train)
        return parse_experiment(raw)
    if isinstance(spec, (str, Path)):
        experiment = load_experiment(spec)
        if train is None:
            return experiment
        reference = trainable_reference(train)
        cells = tuple(replace(c, spec=replace(c.spec, trainable=reference)) for c in experiment.cells)
        return replace(experiment, spec=replace(experiment.spec, trainable=reference), cells=cells)
    raise UserError(f"spec: expected a spec file, a dict or a Spec, got {type(spec).__name__}")


def run(train: Callable[..., Any] | str | None = None, spec: str | Path | Mapping[str, Any] | Spec | None = None,
        *, backend: str = "local", run_dir: str | Path | None = None, deadline: float | None = None,
        variant: str | None = None, resume: bool = False, quiet: bool = False, seeds: int = 1,
        out: str | Path | None = None, sampler: Any = None) -> SearchResult:
    """Run a search and return its result.

    ``backend``: ``local`` (trials as local processes), ``slurm`` (job steps of the allocation
    this runs in) or ``sim`` (the spec's ``workload`` replayed on a virtual clock, ``seeds``
    seeds from the spec's, every variant and matrix cell; ``out`` keeps its summary and event
    logs). ``deadline``: seconds from now, overriding the spec's. ``sampler``: your own
    ``optuna.samplers.BaseSampler`` object (local and slurm backends), asked for every new trial's
    configuration instead of the spec's sampler, and told the scores as the spec's Optuna samplers are
    (``sampler:`` keys ``startup_trials``, ``random_fraction``, ``objectives``, ``fit_from`` still apply; a
    ``resume=True`` run needs the object again, and proposes what it proposes then). Raises
    ``SpecError`` for a bad spec and ``UserError`` for other bad input, before anything is launched.
    """
    if spec is None:
        raise UserError("spec: required (a spec file, a dict or a Spec)")
    if backend not in BACKENDS:
        raise UserError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise UserError(f"seeds: expected a whole number >= 1, got {seeds!r}")
    experiment = _experiment(spec, train)
    if sampler is not None:
        _check_sampler_object(sampler, backend, experiment.spec)
    if backend == "sim":
        from hpcsched.loop.simulate import simulate_experiment

        first = experiment.spec.seed
        target = Path(out) if out is not None else None
        frame = simulate_experiment(experiment, seeds=list(range(first, first + seeds)), out=target,
                                    event_log=target is not None)
        return SearchResult({}, None, frame)
    from hpcsched.loop.runner import RunOptions, default_run_dir, run_experiment
    from hpcsched.spec import single_spec

    real = single_spec(experiment, str(experiment.spec.source or experiment.spec.name))
    directory = Path(run_dir) if run_dir is not None else default_run_dir(real)
    options = RunOptions(run_dir=directory, backend=backend, deadline=deadline, resume=resume, variant=variant,
                         quiet=quiet, sampler=sampler)
    result = run_experiment(real, options, out=sys.stdout)
    return SearchResult(result, directory)


def _check_sampler_object(sampler: Any, backend: str, spec: Spec) -> None:
    """A sampler object must be Optuna's, for a real run over a space a model can propose from."""
    try:
        import optuna
    except ImportError:
        raise UserError("sampler: an Optuna sampler object needs optuna (pip install 'hpcsched[samplers]')") from None
    if not isinstance(sampler, optuna.samplers.BaseSampler):
        raise UserError(f"sampler: expected an optuna.samplers.BaseSampler object, got {type(sampler).__name__}")
    if backend == "sim":
        raise UserError("sampler: a sampler object runs with backend='local' or 'slurm'; a simulation names its "
                        "sampler in the spec (sampler: {name: ...})")
    if spec.space is None or spec.space.grid_params:
        raise UserError("sampler: a sampler object needs a space without grid parameters (use choice)"
                        if spec.space is not None else "sampler: a sampler object needs a space: section")
