"""The one bench rule (DESIGN.md §8): the settings of a quality bench derived from a trace alone.

Every trace under a curves folder (recursively) is replayed with the same rule, never a setting
chosen for one file:
- R = the longest curve's last step, r = 1, eta = 4, 8 atoms;
- a step takes what the trace's ``time`` column says, else ``STEP_TIME`` seconds on one atom;
- M = the median over curves of the time to a curve's last step on one atom;
- deadlines 2M, 4M, 8M;
- two systems: no scaling and no startup, and sqrt scaling with a startup of one median step time
  (the scheduler's belief = the truth).
The metric's mode comes from one table (``MODES``: perplexities are minimised), the family a trace
belongs to from another (``FAMILIES``), both by file name.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpcsched.workloads.trace import load_trace

ETA = 4
ATOMS = 8
FIRST_RUNG = 1
STEP_TIME = 30.0  # seconds per step on one atom for a trace without a time column
DEADLINE_FACTORS = (2, 4, 8)  # times M
# the metric's mode by trace name (relative to the curves folder, without .csv); the first match wins
MODES = (("lstm-*", "min"), ("nmt-*", "min"), ("*", "max"))
# the family a trace belongs to, for the per-family figures; the first match wins
FAMILIES = (("lcbench/*", "LCBench"), ("nmt-*", "NMT"), ("*", "DL"))


@dataclass(frozen=True)
class System:
    """How the replayed cluster behaves: scaling and startup (the scheduler believes the truth)."""

    name: str
    scaling: str
    startup_steps: float  # a startup, in median step times


SYSTEMS = (System("plain", "none", 0.0), System("sqrt", "sqrt", 1.0))


@dataclass(frozen=True)
class TraceRule:
    """What the rule derives from one trace."""

    name: str  # the trace's path under the curves folder, without .csv
    path: Path
    family: str
    mode: str
    R: int
    step_time: float | None  # None: the trace's time column
    median_step: float  # seconds of a median step on one atom
    M: float  # median seconds to a curve's last step on one atom

    @property
    def deadlines(self) -> tuple[float, ...]:
        return tuple(round(k * self.M, 3) for k in DEADLINE_FACTORS)

    def startup(self, system: System) -> float:
        return round(system.startup_steps * self.median_step, 3)


def _first_match(name: str, table: tuple[tuple[str, str], ...]) -> str:
    return next(value for pattern, value in table if fnmatch.fnmatch(name, pattern))


def trace_files(curves: Path) -> list[Path]:
    """Every trace under ``curves`` (recursively): CSV files other than configuration tables."""
    return sorted(p for p in curves.rglob("*.csv") if not p.stem.endswith("-configs"))


def derive(path: Path, curves: Path) -> TraceRule:
    """The rule's settings for the trace at ``path``."""
    name = path.relative_to(curves).with_suffix("").as_posix()
    with path.open() as handle:
        has_time = "time" in handle.readline().strip().split(",")
    step_time = None if has_time else STEP_TIME
    loaded = load_trace(path, step_time)
    last_steps = [int(c.steps[-1]) for c in loaded.values()]
    ends = [float(c.work[-1]) for c in loaded.values()]
    steps = np.concatenate([np.diff(c.work, prepend=0.0) for c in loaded.values()])
    return TraceRule(name=name, path=path, family=_first_match(name, FAMILIES), mode=_first_match(name, MODES),
                     R=max(last_steps), step_time=step_time, median_step=float(np.median(steps)),
                     M=float(np.median(ends)))


def rules(curves: Path) -> list[TraceRule]:
    """The rule for every trace under ``curves``."""
    return [derive(path, curves) for path in trace_files(curves)]


def configs_table(rule: TraceRule) -> Path | None:
    """The configurations table beside the rule's trace (``NAME-configs.csv``), if there is one."""
    path = rule.path.with_name(f"{rule.path.stem}-configs.csv")
    return path if path.is_file() else None


def experiment_raw(rule: TraceRule, system: System, variants: list[dict], configs: Path | None = None) -> dict:
    """A spec mapping replaying ``rule``'s trace under ``system`` at its three deadlines; with ``configs``
    each trial replays the recorded configuration nearest its sampler's proposal (workloads.configs)."""
    startup = rule.startup(system)
    workload = {"kind": "trace", "path": str(rule.path), "startup": startup, "scaling": system.scaling}
    if rule.step_time is not None:
        workload["step_time"] = rule.step_time
    if configs is not None:
        workload["configs"] = str(configs)
    return {
        "name": f"{rule.name}-{system.name}".replace("/", "-"),
        "metric": {"name": "score", "mode": rule.mode},
        "scheduler": {"kind": "hypersched", "r": FIRST_RUNG, "R": rule.R, "eta": ETA, "scaling": system.scaling},
        "resources": {"atoms": ATOMS},
        "deadline": rule.deadlines[0],
        "workload": workload,
        "matrix": {"deadline": list(rule.deadlines)},
        "variants": variants,
    }
