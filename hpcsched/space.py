"""Search spaces: parameter kinds, grid enumeration and seeded sampling.

A space is a mapping ``name -> definition`` where a definition is one of::

    {choice: [a, b, ...]}        one value drawn uniformly at random
    {grid: [a, b, ...]}          every value, crossed with the other grid parameters
    {uniform: [low, high]}       float in [low, high)
    {loguniform: [low, high]}    float, log-uniform in [low, high), 0 < low
    {randint: [low, high]}       int in [low, high) (high exclusive, as numpy)
    {value: x}  or a plain x     a constant
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hpcsched.errors import shown

KINDS = ("choice", "grid", "uniform", "loguniform", "randint", "value")
MAX_GRID_POINTS = 1_000_000  # the visiting order is one permutation of them


@dataclass(frozen=True)
class Param:
    """One parameter of the space."""

    name: str
    kind: str
    values: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0

    def sample(self, rng: np.random.Generator) -> Any:
        """Draw this (random) parameter with ``rng``."""
        if self.kind == "choice":
            return _plain(self.values[int(rng.integers(len(self.values)))])
        if self.kind == "uniform":
            return float(rng.uniform(self.low, self.high))
        if self.kind == "loguniform":
            return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        if self.kind == "randint":
            return int(rng.integers(int(self.low), int(self.high)))
        raise ValueError(f"parameter {shown(self.name)} of kind {shown(self.kind)} is not random")

    def from_unit(self, u: float) -> Any:
        """This (random) parameter's value at ``u`` in [0, 1) of its range (for quasi-random points)."""
        if self.kind == "choice":
            return _plain(self.values[min(int(u * len(self.values)), len(self.values) - 1)])
        if self.kind == "uniform":
            return float(self.low + u * (self.high - self.low))
        if self.kind == "loguniform":
            return float(math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low))))
        if self.kind == "randint":
            span = int(self.high) - int(self.low)
            return int(self.low) + min(int(u * span), span - 1)
        raise ValueError(f"parameter {shown(self.name)} of kind {shown(self.kind)} is not random")


@dataclass(frozen=True)
class Space:
    """An ordered set of parameters."""

    params: tuple[Param, ...]

    @property
    def grid_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "grid")

    @property
    def random_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind in ("choice", "uniform", "loguniform", "randint"))

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
        for param in self.params:
            if param.kind == "grid":
                config[param.name] = grid_point[param.name]
            elif param.kind == "value":
                config[param.name] = param.values[0]
            else:
                config[param.name] = draw(param)
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
    params = []
    before = len(problems)
    for name, definition in raw.items():
        param = _parse_param(str(name), definition, f"{path}.{name}", problems)
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
    if len(definition) != 1:
        problems.append(f"{path}: expected one of {{{', '.join(KINDS)}}} as the only key, "
                        f"got {shown(dict(definition))}")
        return None
    (kind, args), = definition.items()
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
    numeric = (int,) if kind == "randint" else (int, float)
    if not all(isinstance(v, numeric) and not isinstance(v, bool) for v in (low, high)):
        expected = "integers" if kind == "randint" else "numbers"
        problems.append(f"{where}: expected two {expected}, got {shown(args)}")
        return None
    if not all(math.isfinite(v) for v in (low, high)):
        problems.append(f"{where}: bounds must be finite, got {shown(args)}")
        return None
    if not low < high:
        problems.append(f"{where}: low must be below high, got {shown(args)}")
        return None
    if kind == "loguniform" and low <= 0:
        problems.append(f"{where}: low must be > 0 for a log-uniform range, got {shown(low)}")
        return None
    return Param(name, kind, (), float(low), float(high))


def _plain(value: Any) -> Any:
    """Turn numpy scalars into Python scalars so configs serialise as JSON/YAML."""
    return value.item() if isinstance(value, np.generic) else value
