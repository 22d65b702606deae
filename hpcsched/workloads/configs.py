"""Config-aware trace replay: a table of each recorded trial's hyperparameters beside its curves.

A configurations table is a CSV ``trial,<param>,<param>,...`` with one row per trial of the trace
(``workload.configs`` beside ``workload.path``). The run's sampler proposes configurations in the
spec's space (derived from the table when the spec has none, see :func:`derive_space`); each trial
replays the recorded curve of the nearest configuration not used yet in this run, measured in the
space's own scale (log for a log range, one unit for a different choice), and is journalled with
that recorded configuration, so a model-based sampler learns from what was replayed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from hpcsched.core.errors import shown
from hpcsched.core.space import INTEGER_KINDS, Param, Space
from hpcsched.workloads import Curve

TRIAL_COLUMN = "trial"


class ConfigsError(ValueError):
    """A configurations table that cannot be used."""


@dataclass(frozen=True)
class ConfigTable:
    """Each recorded trial's configuration, by trial id, in the table's column order."""

    columns: tuple[str, ...]
    rows: dict[str, dict[str, Any]]

    def values(self, column: str) -> list[Any]:
        return [row[column] for row in self.rows.values()]


def load_configs(path: Path) -> ConfigTable:
    """The table at ``path``; raise ConfigsError naming the problem."""
    try:
        frame = pd.read_csv(path, dtype={TRIAL_COLUMN: str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigsError(f"cannot read the configurations table: {exc}") from None
    if TRIAL_COLUMN not in frame.columns:
        raise ConfigsError(f"no {TRIAL_COLUMN!r} column; a configurations table has columns "
                           f"trial,<param>,..., got {list(frame.columns)}")
    columns = tuple(str(c) for c in frame.columns if c != TRIAL_COLUMN)
    if not columns:
        raise ConfigsError("no parameter columns beside 'trial'")
    if frame.empty:
        raise ConfigsError("the table has no rows")
    duplicated = frame[TRIAL_COLUMN][frame[TRIAL_COLUMN].duplicated()]
    if len(duplicated):
        raise ConfigsError(f"trial {shown(duplicated.iloc[0])} has two rows")
    for column in columns:
        empty = frame[column].isna()
        if empty.any():
            raise ConfigsError(f"column {column!r} is empty for trial {shown(frame[TRIAL_COLUMN][empty].iloc[0])}")
        if pd.api.types.is_numeric_dtype(frame[column]) and not np.isfinite(frame[column].to_numpy(float)).all():
            raise ConfigsError(f"column {column!r} has a value that is not finite")
    rows = {str(record[TRIAL_COLUMN]): {c: _plain(record[c]) for c in columns}
            for record in frame.to_dict("records")}
    return ConfigTable(columns, rows)


def trace_trials(trace: Path) -> set[str]:
    """The trial ids of a (checked) trace file."""
    return set(pd.read_csv(trace, usecols=[TRIAL_COLUMN], dtype={TRIAL_COLUMN: str})[TRIAL_COLUMN])


def check_configs(path: Path, trials: set[str]) -> str | None:
    """None if the table at ``path`` has exactly one row for each of the trace's ``trials``, else the problem."""
    try:
        table = load_configs(path)
    except ConfigsError as exc:
        return str(exc)
    missing = sorted(trials - set(table.rows))
    if missing:
        return f"no row for trial {shown(missing[0])} of the trace ({len(missing)} trials without one)"
    extra = sorted(set(table.rows) - trials)
    if extra:
        return f"trial {shown(extra[0])} has no curve in the trace ({len(extra)} rows without one)"
    return None


def derive_space(table: ConfigTable) -> Space:
    """A space the table's configurations were drawn from: a choice of the values of a text column, a
    constant for a column of one value, else a range from the lowest to the highest value (int when
    every value is, log-scaled when the values' median sits nearer the log range's middle)."""
    params = []
    for column in table.columns:
        values = table.values(column)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            params.append(Param(column, "choice", tuple(sorted(set(values), key=str))))
            continue
        low, high = float(min(values)), float(max(values))
        if low == high:
            params.append(Param(column, "value", (values[0],)))
            continue
        integer = all(isinstance(v, int) for v in values)
        log = low > 0 and _log_scaled(np.asarray(values, dtype=float), low, high)
        kind = ("logint" if log else "randint") if integer else ("loguniform" if log else "uniform")
        params.append(Param(column, kind, (), low, high + 1 if integer else high))
    return Space(tuple(params))


def _log_scaled(values: np.ndarray, low: float, high: float) -> bool:
    median = float(np.median(values))
    linear = (median - low) / (high - low)
    logarithmic = (math.log(median) - math.log(low)) / (math.log(high) - math.log(low))
    return abs(logarithmic - 0.5) < abs(linear - 0.5)


def space_problems(space: Space, table: ConfigTable, where: str) -> list[str]:
    """How ``space`` fails to cover the table's configurations (each problem names the parameter)."""
    problems = []
    params = {p.name: p for p in space.params}
    for column in table.columns:
        if column not in params:
            problems.append(f"space: no parameter {shown(column)} for that column of {where}")
    for param in space.params:
        if param.name not in table.columns:
            if param.kind != "value":
                problems.append(f"space.{param.name}: not a column of {where} (columns: {', '.join(table.columns)})")
            continue
        values = table.values(param.name)
        if param.kind in ("choice", "grid", "value"):
            outside = [v for v in values if v not in param.values]
            if outside:
                problems.append(f"space.{param.name}: {where} has the value {shown(outside[0])}, not one of "
                                f"{shown(list(param.values))}")
            continue
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            problems.append(f"space.{param.name}: {where} has the non-numeric value "
                            f"{shown(next(v for v in values if not isinstance(v, (int, float))))} for a range")
            continue
        top = param.high - 1 if param.kind in INTEGER_KINDS else param.high
        if min(values) < param.low or max(values) > top:
            problems.append(f"space.{param.name}: {where} has values from {min(values):g} to {max(values):g}, "
                            f"outside [{param.low:g}, {param.high:g}{')' if param.kind in INTEGER_KINDS else ']'}")
    return problems


class ConfigTraceWorkload:
    """The trace's curves, each standing for its recorded configuration; trial ``index`` of configuration
    ``config`` replays the nearest configuration not used yet (see the module docstring). ``curve(index)``
    without a configuration is the pool's ``index``-th curve, for the oracle."""

    def __init__(self, curves: Mapping[str, Curve], table: ConfigTable, space: Space, seed: int, max_steps: int):
        from hpcsched.workloads.trace import TraceWorkload

        order = TraceWorkload(dict(curves), seed, max_steps)  # the seeded order: ties go by it
        self._curves = [replace(order.curve(i), config=dict(table.rows[order.curve(i).key]))
                        for i in range(order.size)]
        self.size = order.size
        self.median_step = order.median_step
        self._params = [p for p in space.params if p.name in table.columns and p.kind != "value"]
        rows = [table.rows[c.key] for c in self._curves]
        self._points = np.array([[p.to_unit(row[p.name]) for p in self._params] for row in rows],
                                dtype=np.float64).reshape(self.size, len(self._params))
        self._used = np.zeros(self.size, dtype=bool)
        self._given: dict[int, Curve] = {}

    def curve(self, index: int, config: Mapping[str, Any] | None = None) -> Curve:
        """The curve trial ``index`` replays (the same on every call); see the class docstring."""
        if config is None:
            return self._curves[index]
        given = self._given.get(index)
        if given is None:
            given = self._given[index] = self._curves[self.nearest_unused(config)]
        return given

    def unused_configs(self) -> list[Mapping[str, Any]]:
        """The recorded configurations no trial of the run has replayed yet, in the pool's seeded order."""
        return [curve.config or {} for curve, used in zip(self._curves, self._used) if not used]

    def nearest_unused(self, config: Mapping[str, Any]) -> int:
        """The position of the unused configuration nearest ``config``, now marked used."""
        if self._used.all():
            raise IndexError(f"all {self.size} recorded configurations are used")
        target = np.array([p.to_unit(config[p.name]) if p.name in config else np.nan for p in self._params])
        gaps = np.where(np.isnan(target), 1.0, np.abs(self._points - target))
        for j, param in enumerate(self._params):
            if param.kind in ("choice", "grid") and not np.isnan(target[j]):
                gaps[:, j] = self._points[:, j] != target[j]
        distance = np.where(self._used, np.inf, (gaps ** 2).sum(axis=1))
        position = int(np.argmin(distance))  # the first in the seeded order among equals
        self._used[position] = True
        return position


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
