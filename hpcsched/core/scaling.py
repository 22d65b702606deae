"""Scaling functions s(a): throughput of a trial on ``a`` atoms relative to one atom.

``none`` (s = 1), ``linear`` (s = a), ``sqrt`` (the HyperSched authors' table, extended by
powers of two) or a measured table ``{atoms: rate}``; values between table points are
interpolated linearly and held flat beyond the last point.
"""

from __future__ import annotations

import bisect
import math

from hpcsched.core.errors import shown
from dataclasses import dataclass, field
from typing import Mapping

NAMED = ("none", "linear", "sqrt")

# Their SQRT map for 1..32 atoms, continued with sqrt(a) rounded to one decimal.
_SQRT_TABLE = ((1, 1.0), (2, 1.4), (4, 2.0), (8, 2.8), (16, 4.0), (32, 5.7), (64, 8.0),
               (128, 11.3), (256, 16.0), (512, 22.6), (1024, 32.0), (2048, 45.3), (4096, 64.0))


@dataclass(frozen=True)
class Scaling:
    """A speedup curve. ``rate(a)`` is steps per base step time on ``a`` atoms."""

    name: str
    table: tuple[tuple[float, float], ...] = ()
    _keys: tuple[float, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", tuple(k for k, _ in self.table))

    def rate(self, atoms: float) -> float:
        if atoms <= 0:
            return 0.0
        if self.name == "linear":
            return float(atoms)
        if self.name == "none":
            return 1.0
        keys, table = self._keys, self.table
        if atoms <= keys[0]:
            return table[0][1] * atoms / keys[0] if atoms < keys[0] else table[0][1]
        if atoms >= keys[-1]:
            return table[-1][1]
        i = bisect.bisect_right(keys, atoms)
        (x0, y0), (x1, y1) = table[i - 1], table[i]
        return y0 + (y1 - y0) * (atoms - x0) / (x1 - x0)

    def best_atoms(self, limit: int) -> int:
        """Smallest allocation <= ``limit`` that reaches the highest rate (no use going beyond)."""
        best, best_rate = 1, self.rate(1)
        for a in range(2, limit + 1):
            r = self.rate(a)
            if r > best_rate + 1e-12:
                best, best_rate = a, r
        return best


def named_scaling(name: str) -> Scaling:
    """One of the named functions: none, linear, sqrt."""
    if name == "sqrt":
        return Scaling("sqrt", _SQRT_TABLE)
    if name in ("none", "linear"):
        return Scaling(name)
    raise ValueError(f"unknown scaling {shown(name)}; valid: {', '.join(NAMED)} or a table {{atoms: rate}}")


def parse_scaling(raw: object, path: str, problems: list[str]) -> Scaling | None:
    """Validate a scaling given as a name or a ``{atoms: rate}`` table."""
    if isinstance(raw, str):
        try:
            return named_scaling(raw.strip().lower())
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
            return None
    if isinstance(raw, Mapping):
        return _parse_table(raw, path, problems)
    problems.append(f"{path}: expected one of {', '.join(NAMED)} or a table {{atoms: rate}}, got {shown(raw)}")
    return None


def table_scaling(points: Mapping[float, float]) -> Scaling:
    """A measured table; raises ValueError when it is not usable."""
    problems: list[str] = []
    scaling = _parse_table(points, "scaling", problems)
    if scaling is None:
        raise ValueError("; ".join(problems))
    return scaling


def _parse_table(raw: Mapping, path: str, problems: list[str]) -> Scaling | None:
    points = []
    for key, value in raw.items():
        try:
            atoms = float(key)
        except (TypeError, ValueError):
            problems.append(f"{path}: table key must be an atom count, got {shown(key)}")
            continue
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value) or value <= 0:
            problems.append(f"{path}.{key}: rate must be a positive number, got {shown(value)}")
            continue
        if not math.isfinite(atoms) or atoms < 1:
            problems.append(f"{path}: table key must be an atom count >= 1, got {shown(key)}")
            continue
        points.append((atoms, float(value)))
    if not points:
        if not raw:
            problems.append(f"{path}: the scaling table is empty")
        return None
    points.sort()
    if points[0][0] != 1:
        problems.append(f"{path}: the table must give the rate at 1 atom, got keys {shown([p[0] for p in points])}")
        return None
    return Scaling("table", tuple(points))
