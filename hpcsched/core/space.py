"""Search spaces: parameter kinds, grid enumeration and seeded sampling.

A space is a mapping ``name -> definition`` where a definition is one of::

    {choice: [a, b, ...]}        one value drawn uniformly at random
    {grid: [a, b, ...]}          every value, crossed with the other grid parameters
    {uniform: [low, high]}       float in [low, high)
    {loguniform: [low, high]}    float, log-uniform in [low, high), 0 < low
    {randint: [low, high]}       int in [low, high) (high exclusive, as numpy)
    {logint: [low, high]}        int in [low, high), log-uniform, 0 < low (batch sizes, widths)
    {value: x}  or a plain x     a constant

A range may add ``step: q`` (values low, low + q, low + 2q, ... below high), and any parameter
but a grid one ``when: {other: value}`` or ``when: {other: [values]}``: it is in a configuration
only while the earlier parameter ``other`` (choice, grid or constant) has one of those values,
e.g. ``momentum: {uniform: [0.8, 0.99], when: {optimizer: sgd}}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hpcsched.core.errors import shown

KINDS = ("choice", "grid", "uniform", "loguniform", "randint", "logint", "value")
RANDOM_KINDS = ("choice", "uniform", "loguniform", "randint", "logint")
INTEGER_KINDS = ("randint", "logint")
MODIFIERS = ("step", "when")
MAX_GRID_POINTS = 1_000_000  # the visiting order is one permutation of them


@dataclass(frozen=True)
class Param:
    """One parameter of the space."""

    name: str
    kind: str
    values: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    step: float = 0.0  # > 0: a range's values are low + k * step
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # present only while these earlier values hold

    def sample(self, rng: np.random.Generator) -> Any:
        """Draw this (random) parameter with ``rng``."""
        if self.kind not in RANDOM_KINDS:
            raise ValueError(f"parameter {shown(self.name)} of kind {shown(self.kind)} is not random")
        if self.kind == "choice":
            return _plain(self.values[int(rng.integers(len(self.values)))])
        if self.kind == "randint":
            return self.quantized(int(rng.integers(int(self.low), int(self.high))))
        return self.from_unit(float(rng.uniform()))

    def from_unit(self, u: float) -> Any:
        """This (random) parameter's value at ``u`` in [0, 1) of its range (for quasi-random points)."""
        if self.kind == "choice":
            return _plain(self.values[min(int(u * len(self.values)), len(self.values) - 1)])
        if self.kind == "uniform":
            return self.quantized(self.low + u * (self.high - self.low))
        if self.kind in ("loguniform", "logint"):
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
            return self.quantized(int(min(math.floor(value), self.high - 1)) if self.kind == "logint" else value)
        if self.kind == "randint":
            span = int(self.high) - int(self.low)
            return self.quantized(int(self.low) + min(int(u * span), span - 1))
        raise ValueError(f"parameter {shown(self.name)} of kind {shown(self.kind)} is not random")

    def to_unit(self, value: Any) -> float:
        """Where ``value`` of this range lies in [0, 1] (log-scaled for a log range); the inverse of
        ``from_unit``. A choice's value maps to its position among the values (-1 if it is none)."""
        if self.kind in ("choice", "grid"):
            return float(next((i for i, v in enumerate(self.values) if v == value), -1))
        if self.kind in ("loguniform", "logint"):
            return (math.log(float(value)) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        if self.kind in ("uniform", "randint"):
            return (float(value) - self.low) / (self.high - self.low)
        raise ValueError(f"parameter {shown(self.name)} of kind {shown(self.kind)} has no unit scale")

    def quantized(self, value: float) -> Any:
        """``value`` on this range's step grid (low + k * step, k rounded down); ints stay ints."""
        if self.step > 0:
            value = self.low + math.floor((value - self.low) / self.step + 1e-9) * self.step
            value = round(value, 12)
        return int(value) if self.kind in INTEGER_KINDS else float(value)

    def active(self, config: Mapping[str, Any]) -> bool:
        """Whether this parameter belongs in ``config`` (its ``when`` conditions hold there)."""
        return all(name in config and config[name] in values for name, values in self.when)


@dataclass(frozen=True)
class Space:
    """An ordered set of parameters."""

    params: tuple[Param, ...]

    @property
    def grid_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "grid")

    @property
    def random_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind in RANDOM_KINDS)

    @property
    def conditional(self) -> bool:
        """Whether some parameter is present only under a condition (``when``)."""
        return any(p.when for p in self.params)

    @property
    def grid_size(self) -> int:
        return math.prod(len(p.values) for p in self.grid_params)

    @property
    def capacity(self) -> int | None:
        """How many distinct trials the space yields, or None when unlimited (random parameters)."""
        return None if self.random_params else self.grid_size

    def grid_point(self, index: int) -> dict[str, Any]:
        """The ``index``-th combination of grid values (mixed radix, last parameter fastest)."""
        point: dict[str, Any] = {}
        for param in reversed(self.grid_params):
            index, digit = divmod(index, len(param.values))
            point[param.name] = _plain(param.values[digit])
        return point

    def config(self, grid_point: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        """A full configuration: the given grid point, random parameters drawn with ``rng``."""
        return self.config_with(grid_point, lambda param: param.sample(rng))

    def config_with(self, grid_point: Mapping[str, Any], draw: Callable[[Param], Any]) -> dict[str, Any]:
        """A full configuration: the given grid point, each random parameter's value from ``draw``."""
        config: dict[str, Any] = {}
        for param in self.params:  # every random parameter is drawn, then dropped if inactive
            if param.kind == "grid":
                value = grid_point[param.name]
            elif param.kind == "value":
                value = param.values[0]
            else:
                value = draw(param)
            if param.active(config):
                config[param.name] = value
        return config


class Sampler:
    """The ``random`` sampler, a deterministic sequence: trial ``i`` always gets the same config.

    Grid points are visited in a seeded random order; once all are used, random parameters
    (if any) are drawn again for a second pass. Trial ``i``'s random draws come from a
    generator seeded by ``(seed, i)``, so resuming a run needs only the number of trials made.
    """

    def __init__(self, space: Space, seed: int):
        self.space = space
        self.seed = seed
        size = space.grid_size
        self._order = np.random.default_rng([seed, 0]).permutation(size) if size > 1 else np.zeros(1, dtype=int)

    @property
    def capacity(self) -> int | None:
        return self.space.capacity

    def config(self, index: int) -> dict[str, Any]:
        """Configuration of the ``index``-th trial (0-based); the run's state does not matter to it."""
        return self.space.config(self.grid_point(index), np.random.default_rng([self.seed, 1, index]))

    def grid_point(self, index: int) -> dict[str, Any]:
        """The grid point of the ``index``-th trial."""
        capacity = self.capacity
        if index < 0 or (capacity is not None and index >= capacity):
            raise IndexError(f"trial index {index} outside the space (capacity {capacity})")
        return self.space.grid_point(int(self._order[index % len(self._order)]))

    def choose(self, index: int, candidates: Sequence[Mapping[str, Any]]) -> int:
        """Trial ``index``'s pick among a pool's unused ``candidates``: one at random (seeded by the index)."""
        return int(np.random.default_rng([self.seed, 2, index]).integers(len(candidates)))

    def observe(self, record: object) -> None:
        """Random draws learn nothing from the run."""


def parse_space(raw: object, path: str, problems: list[str]) -> Space | None:
    """Validate ``raw`` (the YAML mapping) into a Space; append problems naming ``path.name``."""
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: expected a mapping of parameter names to definitions, got {shown(raw)}")
        return None
    if not raw:
        problems.append(f"{path}: the search space is empty")
        return None
    params: list[Param] = []
    before = len(problems)
    for name, definition in raw.items():
        param = _parse_param(str(name), definition, f"{path}.{name}", problems)
        if param is not None:
            param = _parse_modifiers(param, definition, f"{path}.{name}", params, problems)
        if param is not None:
            params.append(param)
    if len(problems) != before:
        return None
    space = Space(tuple(params))
    if space.grid_size > MAX_GRID_POINTS:
        sizes = " x ".join(str(len(p.values)) for p in space.grid_params)
        problems.append(f"{path}: the grid has {space.grid_size} points ({sizes}); at most {MAX_GRID_POINTS}")
        return None
    return space


def _parse_param(name: str, definition: object, path: str, problems: list[str]) -> Param | None:
    if not isinstance(definition, Mapping):
        return Param(name, "value", (definition,))
    kinds = [k for k in definition if k not in MODIFIERS]
    if len(kinds) != 1:
        problems.append(f"{path}: expected one of {{{', '.join(KINDS)}}} as the only key (with {' or '.join(MODIFIERS)}"
                        f" beside it), got {shown(dict(definition))}")
        return None
    kind, args = kinds[0], definition[kinds[0]]
    if kind not in KINDS:
        problems.append(f"{path}: unknown parameter kind {shown(kind)}; valid kinds: {', '.join(KINDS)}")
        return None
    if kind == "value":
        return Param(name, "value", (args,))
    if kind in ("choice", "grid"):
        if not isinstance(args, Sequence) or isinstance(args, (str, bytes)) or len(args) == 0:
            problems.append(f"{path}.{kind}: expected a non-empty list of values, got {shown(args)}")
            return None
        return Param(name, kind, tuple(args))
    return _parse_range(name, kind, args, path, problems)


def _parse_range(name: str, kind: str, args: object, path: str, problems: list[str]) -> Param | None:
    where = f"{path}.{kind}"
    if not isinstance(args, Sequence) or isinstance(args, (str, bytes)) or len(args) != 2:
        problems.append(f"{where}: expected [low, high], got {shown(args)}")
        return None
    low, high = args
    numeric = (int,) if kind in INTEGER_KINDS else (int, float)
    if not all(isinstance(v, numeric) and not isinstance(v, bool) for v in (low, high)):
        expected = "integers" if kind in INTEGER_KINDS else "numbers"
        problems.append(f"{where}: expected two {expected}, got {shown(args)}")
        return None
    if not all(math.isfinite(v) for v in (low, high)):
        problems.append(f"{where}: bounds must be finite, got {shown(args)}")
        return None
    if not low < high:
        problems.append(f"{where}: low must be below high, got {shown(args)}")
        return None
    if kind in ("loguniform", "logint") and low <= 0:
        problems.append(f"{where}: low must be > 0 for a log-uniform range, got {shown(low)}")
        return None
    return Param(name, kind, (), float(low), float(high))


def _parse_modifiers(param: Param, definition: object, path: str, earlier: list[Param],
                     problems: list[str]) -> Param | None:
    """``step`` and ``when`` beside a parameter's kind."""
    if not isinstance(definition, Mapping):
        return param
    step = definition.get("step")
    if step is not None:
        if param.kind not in ("uniform", "loguniform", "randint", "logint"):
            problems.append(f"{path}.step: only for a range (uniform, loguniform, randint, logint), "
                            f"not for {shown(param.kind)}")
            return None
        integer = param.kind in INTEGER_KINDS
        if isinstance(step, bool) or not isinstance(step, (int,) if integer else (int, float)) \
                or not 0 < step < param.high - param.low:
            problems.append(f"{path}.step: expected a{'n integer' if integer else ' number'} above 0 and below "
                            f"high - low ({param.high - param.low:g}), got {shown(step)}")
            return None
        param = replace(param, step=float(step))
    when = definition.get("when")
    if when is None:
        return param
    if param.kind == "grid":
        problems.append(f"{path}.when: a grid parameter is in every configuration; make it a choice to condition it")
        return None
    if not isinstance(when, Mapping) or not when:
        problems.append(f"{path}.when: expected a mapping of earlier parameters to values, got {shown(when)}")
        return None
    by_name = {p.name: p for p in earlier}
    conditions = []
    for other, wanted in when.items():
        values = tuple(wanted) if isinstance(wanted, (list, tuple)) else (wanted,)
        source = by_name.get(str(other))
        if source is None:
            problems.append(f"{path}.when.{other}: not a parameter defined before {shown(param.name)}")
            return None
        if source.kind not in ("choice", "grid", "value"):
            problems.append(f"{path}.when.{other}: conditions name a choice, grid or constant parameter, "
                            f"not a {source.kind} one")
            return None
        unknown = [v for v in values if v not in source.values]
        if unknown or not values:
            problems.append(f"{path}.when.{other}: {shown(unknown[0] if unknown else wanted)} is not one of "
                            f"{shown(list(source.values))}")
            return None
        conditions.append((str(other), values))
    return replace(param, when=tuple(conditions))  # an inactive source is absent, so nesting holds


def _plain(value: Any) -> Any:
    """Turn numpy scalars into Python scalars so configs serialise as JSON/YAML."""
    return value.item() if isinstance(value, np.generic) else value
