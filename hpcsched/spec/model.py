"""The spec's vocabulary: frozen dataclasses of a validated experiment, its choices and limits.

Each section's dataclass is the one list of that section's keys: the parsers in ``sections`` read a
section through a table whose keys must be the dataclass's fields (checked in the tests).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hpcsched.core.errors import SpecError, shown
from hpcsched.core.failures import DEFAULT_MAX_FAILURES
from hpcsched.samplers import SamplerSpec
from hpcsched.core.scaling import Scaling, named_scaling
from hpcsched.core.space import Space

SCHEDULER_KINDS = ("asha", "hypersched", "random", "one_epoch")
ALLOCATION_POLICIES = ("uniform", "top_job", "none")
WORKLOAD_KINDS = ("synthetic", "trace")
RUNG_TRUST = ("learned", "fixed")
RUNG_VALUES = ("forecast", "score")
# HyperSched keys of earlier versions, with what replaced them (a spec that sets one is refused with this)
REMOVED_SCHEDULER_KEYS = {
    "retrospective": "speculative evaluation compares a trial on every rung it passed, as the paper's did",
    "after_close": "after the entrance closes the leaders grow and the rest train on (docs/ARCHITECTURE.md)",
    "backfill": "no atom idles: atoms nothing else takes go to growth or to the best paused trial",
}
COMMON_SCHEDULER_KEYS = ("kind", "r", "R", "eta")
ASHA_ONLY = ("atoms_per_trial",)  # the baselines' (asha, random, one_epoch) own keys

DEFAULT_STOP_MARGIN = 10.0  # seconds: controller.stop_margin when unset, for runs of 100 s or more
STOP_MARGIN_SHARE = 0.1  # ... and this share of a shorter run
MAX_SPEC_BYTES = 1 << 20  # a spec file is a few KiB
MAX_SPEC_VALUES = 100_000  # values in the document with YAML aliases expanded
MAX_MATRIX_CELLS = 10_000
MAX_ATOMS = 100_000
MAX_STEPS = 10_000_000  # R
MAX_ETA = 1_000


@dataclass(frozen=True)
class MetricSpec:
    name: str = "score"
    mode: str = "max"  # max | min
    non_finite: str = "stop"  # a NaN / infinite score: stop (the trial ends as diverged) | error


@dataclass(frozen=True)
class SchedulerSpec:
    """Policy and its parameters. HyperSched switches make the paper's ablations configs."""

    kind: str = "hypersched"
    r: int = 1
    R: int = 100
    eta: float = 4
    # ASHA
    atoms_per_trial: int = 1
    # HyperSched
    speculative: bool = False  # true: the paper's speculative evaluation (pauses decided at every step)
    rung_trust: str = "learned"  # learned: kept by the rungs' correlation with the end | fixed: 1/eta (paper)
    rung_value: str = "forecast"  # forecast: rungs rank by the curve's forecast | score: by the score (paper)
    runner_ups: bool = True  # learned trust: the lowest rung's first eta runner-ups check its cut (runner_ups.py)
    entrance: str | float = "deadline"  # deadline | adaptive (paper) | none | fraction of the deadline
    allocation: str = "uniform"  # uniform | top_job | none
    overhead_aware: bool = True
    scaling: Scaling = field(default_factory=lambda: named_scaling("linear"))
    allocation_grid: int = 1  # allocations above this many atoms must be multiples of it
    resize_margin: float = 0.1
    resize_cooldown: int = 5  # reports a trial makes after a (re)start before it may grow
    startup_quantile: float = 0.9
    startup_estimate: float | None = None  # T_o before any startup was measured (e.g. from a profile)
    max_atoms_per_trial: int | None = None


@dataclass(frozen=True)
class ResourcesSpec:
    """What one atom is and how many the run holds."""

    atoms: int | str = "auto"  # auto: the whole machine (local) or allocation (SLURM); simulations need a number
    gpus_per_atom: int | str = "auto"  # local: auto = 1 when GPUs are present, else CPU slots (0)
    cpus_per_atom: int = 1
    mem_per_atom: str = ""  # SLURM --mem per atom, e.g. 4G ('' = the partition's default)
    distributed: bool = False  # one process per GPU (or per atom on CPU), torch.distributed environment


@dataclass(frozen=True)
class ControllerSpec:
    """How the controller of a real run behaves."""

    poll_interval: float = 0.25  # seconds between polls of trial files and processes
    stop_margin: float | None = None  # ask trials to checkpoint this long before the deadline (None: auto)
    stop_grace: float = 60.0  # a trial asked to stop is killed after this long (its last checkpoint counts)
    hang_timeout: float | None = None  # silent this long: hung, killed, errored (None: auto; inf: never)
    verdict_timeout: float = 10.0  # at a decision step a trial waits this long at most for the verdict (0: never)
    max_failures: int | None = DEFAULT_MAX_FAILURES  # launches in a row erroring before their first report
    #                                                   that stop the run (None: never)

    def stop_margin_for(self, run_seconds: float) -> float:
        """The stop margin of a run ``run_seconds`` long (start to deadline): the spec's, else
        min(10 s, a tenth of the run), so that a short run is not cut to nothing by the default."""
        if self.stop_margin is not None:
            return self.stop_margin
        return min(DEFAULT_STOP_MARGIN, STOP_MARGIN_SHARE * max(0.0, run_seconds))


@dataclass(frozen=True)
class WorkloadSpec:
    """What the simulator replays: the paper's synthetic curve or recorded traces."""

    kind: str = "synthetic"
    path: Path | None = None
    configs: Path | None = None  # trace: each recorded trial's configuration (workloads.configs)
    step_time: float = 0.1  # seconds per step on one atom (a trace's time column overrides)
    # seconds per start, resume or resize; a list: each launch draws one (seeded by the run's seed)
    startup: float | tuple[float, ...] = 0.0
    step_overhead: float = 0.0  # seconds added to every step (a real report's cost: checkpoint, verdict)
    stop_latency: float = 0.0  # seconds a stopped trial holds its atoms after its last step (a process's exit)
    scaling: Scaling = field(default_factory=lambda: named_scaling("linear"))  # the true s(a)
    trials: int = 10_000  # synthetic: size of the pool of distinct curves
    noise: float = 0.005  # synthetic: sd of the noise on the loss


@dataclass(frozen=True)
class Variant:
    name: str
    scheduler: SchedulerSpec


@dataclass(frozen=True)
class Spec:
    """One validated experiment (one cell of a matrix)."""

    name: str
    metric: MetricSpec
    scheduler: SchedulerSpec
    resources: ResourcesSpec
    variants: tuple[Variant, ...]
    space: Space | None = None
    sampler: SamplerSpec = field(default_factory=SamplerSpec)
    trainable: str | None = None
    deadline: float | None = None
    max_trials: int | None = None
    seed: int = 0
    workload: WorkloadSpec | None = None
    controller: ControllerSpec = field(default_factory=ControllerSpec)
    source: Path | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def digest(self) -> str:
        """Stable hash of the spec's content, to recognise a run directory's experiment."""
        text = json.dumps(self.raw, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def variant(self, name: str | None) -> Variant:
        if name is None:
            if len(self.variants) != 1:
                names = ", ".join(v.name for v in self.variants)
                raise SpecError([f"variants: the spec has several ({names}); choose one with --variant"], self.name)
            return self.variants[0]
        for v in self.variants:
            if v.name == name:
                return v
        names = ", ".join(v.name for v in self.variants)
        raise SpecError([f"--variant: no variant named {shown(name)}; valid: {names}"], self.name)


@dataclass(frozen=True)
class Cell:
    """One point of the spec's matrix: the values set and the resulting spec."""

    params: tuple[tuple[str, Any], ...]
    spec: Spec

    @property
    def label(self) -> str:
        return ",".join(f"{k.split('.')[-1]}={v}" for k, v in self.params) or "base"


@dataclass(frozen=True)
class Experiment:
    """A spec file: its base spec and the cells of its matrix (one cell when there is none)."""

    spec: Spec
    cells: tuple[Cell, ...]
    matrix_keys: tuple[str, ...] = ()
