"""Replay of recorded learning curves: CSV ``trial,step,score[,time]``.

``time`` is seconds since the trial started, on one atom; without it every step takes
``step_time``. Each trial of a run replays a distinct trace trial (seeded order); a trace
shorter than R ends that trial at its last step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from hpcsched.workloads import Curve

REQUIRED = ("trial", "step", "score")


class TraceError(ValueError):
    """A trace file that cannot be replayed."""


def load_trace(path: Path, step_time: float | None) -> dict[str, Curve]:
    """Curves by trial id, sorted by step; raise TraceError naming the problem."""
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read the trace: {exc}") from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise TraceError(f"missing column(s) {missing}; a trace has columns trial,step,score[,time], "
                         f"got {list(frame.columns)}")
    extra = [c for c in frame.columns if c not in (*REQUIRED, "time")]
    if extra:
        raise TraceError(f"unknown column(s) {extra}; a trace has columns trial,step,score[,time]")
    if frame.empty:
        raise TraceError("the trace has no rows")
    has_time = "time" in frame.columns
    if not has_time and step_time is None:
        raise TraceError("the trace has no time column: set workload.step_time")
    for column in ("step", "score") + (("time",) if has_time else ()):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = frame[column][values.isna() | ~np.isfinite(values.fillna(0))]
        if len(bad):
            raise TraceError(f"column {column!r} has a non-numeric value {bad.iloc[0]!r} "
                             f"(row {int(bad.index[0]) + 2})")
        frame[column] = values
    if (frame["step"] < 1).any() or (frame["step"] % 1 != 0).any():
        row = frame[(frame["step"] < 1) | (frame["step"] % 1 != 0)].iloc[0]
        raise TraceError(f"steps must be integers >= 1, got {row['step']!r} for trial {row['trial']!r}")
    frame["trial"] = frame["trial"].astype(str)
    frame = frame.sort_values(["trial", "step"], kind="stable")
    if frame.duplicated(["trial", "step"]).any():
        row = frame[frame.duplicated(["trial", "step"])].iloc[0]
        raise TraceError(f"trial {row['trial']!r} has step {int(row['step'])} twice")
    curves: dict[str, Curve] = {}
    for trial, group in frame.groupby("trial", sort=True):
        steps = group["step"].to_numpy(dtype=np.int64)
        work = group["time"].to_numpy(dtype=float) if has_time else steps * float(step_time)
        if has_time and (np.diff(work) < 0).any():
            raise TraceError(f"trial {trial!r}: time decreases between steps")
        curves[str(trial)] = Curve(str(trial), steps, group["score"].to_numpy(dtype=float), work)
    return curves


def check_trace_file(path: Path, needs_time: bool) -> str | None:
    """None if ``path`` is a usable trace, else the problem in words."""
    if not path.is_file():
        return "no such trace file"
    try:
        load_trace(path, None if needs_time else 1.0)
    except TraceError as exc:
        return str(exc)
    return None


class TraceWorkload:
    """The trace's curves, visited in an order seeded by ``seed``, each cut at ``max_steps``."""

    def __init__(self, curves: dict[str, Curve], seed: int, max_steps: int):
        keys = sorted(curves)
        order = np.random.default_rng([seed, 3]).permutation(len(keys))
        self._curves = [_cut(curves[keys[i]], max_steps) for i in order]
        self._curves = [c for c in self._curves if len(c.steps)]
        self.size = len(self._curves)
        steps = [np.diff(c.work, prepend=0.0) for c in self._curves]
        self.median_step = float(np.median(np.concatenate(steps))) if steps else 0.0

    def curve(self, index: int, config: Mapping[str, Any] | None = None) -> Curve:
        """Curve ``index`` (recorded curves do not depend on the config)."""
        return self._curves[index]


def _cut(curve: Curve, max_steps: int) -> Curve:
    n = int(np.searchsorted(curve.steps, max_steps, side="right"))
    return Curve(curve.key, curve.steps[:n], curve.scores[:n], curve.work[:n], curve.config)
