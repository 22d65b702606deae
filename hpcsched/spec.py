"""Experiment specs: YAML -> validated frozen dataclasses.

Every problem names its field path and the offending value; all problems of a file are
collected into one SpecError before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from hpcsched.durations import parse_duration
from hpcsched.errors import SpecError, shown
from hpcsched.mode import MODES
from hpcsched.scaling import Scaling, named_scaling, parse_scaling
from hpcsched.scores import NON_FINITE_POLICIES
from hpcsched.samplers import EXTRA_FOR, MODEL_SAMPLERS, SAMPLER_NAMES, SamplerSpec, missing_modules
from hpcsched.space import Space, parse_space

SCHEDULER_KINDS = ("asha", "hypersched", "random", "one_epoch")
ALLOCATION_POLICIES = ("uniform", "top_job", "none")
WORKLOAD_KINDS = ("synthetic", "trace")
RUNG_TRUST = ("learned", "fixed")
RETROSPECTIVE = ("current", "all")
AFTER_CLOSE = ("finish", "paper")
_HYPERSCHED_ONLY = ("speculative", "entrance", "allocation", "overhead_aware", "scaling", "backfill",
                    "rung_trust", "retrospective", "after_close",
                    "allocation_grid", "resize_margin", "resize_cooldown", "startup_quantile",
                    "startup_estimate", "max_atoms_per_trial", "profile")
_ASHA_ONLY = ("atoms_per_trial",)


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
    rung_trust: str = "learned"  # learned: cutoffs scaled by each rung's learned trust | fixed: the paper's
    retrospective: str = "current"  # current: compare on the highest rung passed | all: every rung (paper)
    entrance: str | float = "deadline"  # deadline | adaptive (paper) | none | fraction of the deadline
    after_close: str = "finish"  # finish: finalists trained to the end | paper: cutoffs and backfill only
    allocation: str = "uniform"  # uniform | top_job | none
    overhead_aware: bool = True
    scaling: Scaling = field(default_factory=lambda: named_scaling("linear"))
    backfill: bool = True  # after exploration ends, idle atoms the live trials cannot use explore again
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
    stop_margin: float = 10.0  # ask trials to checkpoint this long before the deadline
    stop_grace: float = 60.0  # a trial asked to stop is killed after this long (its last checkpoint counts)
    hang_timeout: float | None = None  # silent this long: hung, killed, errored (None: auto; inf: never)
    verdict_timeout: float = 10.0  # at a decision step a trial waits this long at most for the verdict (0: never)


@dataclass(frozen=True)
class WorkloadSpec:
    """What the simulator replays: the paper's synthetic curve or recorded traces."""

    kind: str = "synthetic"
    path: Path | None = None
    step_time: float = 0.1  # seconds per step on one atom (a trace's time column overrides)
    startup: float = 0.0  # seconds per start, resume or resize
    step_overhead: float = 0.0  # seconds added to every step (a real report's cost: checkpoint, verdict)
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


# ---------------------------------------------------------------- loading


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate a spec file; raise SpecError listing every problem."""
    path = Path(path)
    raw = read_yaml(path)
    return parse_experiment(raw, source=path)


def load_spec(path: str | Path) -> Spec:
    """Read a spec that has no matrix (for real runs)."""
    return single_spec(load_experiment(path), str(path))


def single_spec(experiment: Experiment, where: str) -> Spec:
    """The experiment's one spec; SpecError when it has a matrix (a real run is one cell)."""
    if len(experiment.cells) > 1:
        raise SpecError([f"matrix: a real run takes a spec without a matrix, got keys {list(experiment.matrix_keys)}"],
                        where)
    return experiment.spec


MAX_SPEC_BYTES = 1 << 20  # a spec file is a few KiB
MAX_SPEC_VALUES = 100_000  # values in the document with YAML aliases expanded
MAX_MATRIX_CELLS = 10_000
MAX_ATOMS = 100_000
MAX_STEPS = 10_000_000  # R
MAX_ETA = 1_000
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", re.ASCII)  # a run name is a directory name


def read_yaml(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError([f"the spec file has {size} bytes; a spec is at most {MAX_SPEC_BYTES}"], str(path))
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([f"cannot read the spec file: {exc.strerror or exc}"], str(path)) from None
    except UnicodeDecodeError as exc:
        raise SpecError([f"not UTF-8 text: {exc}"], str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([f"not valid YAML: {exc}"], str(path)) from None


def _expanded_size(raw: Any, limit: int) -> int | None:
    """How many values the document holds with shared (aliased) parts counted every time they
    appear; None when it is more than ``limit`` or refers to itself. Linear in the document."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            raise RecursionError
        visiting.add(key)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                raise OverflowError
        visiting.discard(key)
        sizes[key] = total
        return total

    try:
        return size(raw)
    except (OverflowError, RecursionError):
        return None


def parse_experiment(raw: Any, source: Path | None = None) -> Experiment:
    """Validate a parsed YAML document into an Experiment."""
    where = str(source) if source else "spec"
    if _expanded_size(raw, MAX_SPEC_VALUES) is None:
        raise SpecError([f"(top level): the document refers to itself or expands to more than {MAX_SPEC_VALUES} "
                         f"values (YAML aliases?)"], where)
    if not isinstance(raw, Mapping):
        raise SpecError([f"(top level): expected a mapping of spec sections, got {shown(raw)}"], where)
    problems: list[str] = []
    matrix = _parse_matrix(raw.get("matrix"), problems)
    base_raw = {k: v for k, v in raw.items() if k != "matrix"}
    checked_traces: dict[tuple[Path, bool], str | None] = {}
    spec = _parse_spec(base_raw, source, problems, checked_traces)
    cells: list[Cell] = []
    n_cells = math.prod(len(values) for _, values in matrix)
    if n_cells > MAX_MATRIX_CELLS:
        problems.append(f"matrix: {n_cells} cells ({' x '.join(str(len(v)) for _, v in matrix)}); "
                        f"at most {MAX_MATRIX_CELLS}")
    if matrix and not problems:
        keys = [k for k, _ in matrix]
        for values in itertools.product(*(vals for _, vals in matrix)):
            cell_raw = copy.deepcopy(base_raw)
            labels = [_assign(cell_raw, key, value) for key, value in zip(keys, values)]
            cell_problems: list[str] = []
            label = ", ".join(f"{k}={shown(v)}" for k, v in zip(keys, labels))
            cell_spec = _parse_spec(cell_raw, source, cell_problems, checked_traces)
            problems.extend(f"matrix cell ({label}): {p}" for p in cell_problems)
            if cell_spec is not None:
                cells.append(Cell(tuple(zip(keys, labels)), cell_spec))
    if problems or spec is None:
        raise SpecError(problems, where)
    if not matrix:
        cells = [Cell((), spec)]
    return Experiment(spec, tuple(cells), tuple(k for k, _ in matrix))


_TOP_KEYS = ("name", "trainable", "metric", "space", "sampler", "scheduler", "resources", "deadline",
             "max_trials", "seed", "workload", "controller", "variants", "matrix")


def _parse_spec(raw: Mapping, source: Path | None, problems: list[str],
                checked_traces: dict[tuple[Path, bool], str | None]) -> Spec | None:
    before = len(problems)
    top = _Section(raw, "", problems)
    name = top.take("name", _run_name, default=_default_name(source))
    trainable = top.take("trainable", _trainable_ref, default=None)
    metric = top.take("metric", lambda v: _parse_metric(v, problems), default=MetricSpec())
    space_raw = top.take("space", lambda v: v, default=None)
    space = parse_space(space_raw, "space", problems) if "space" in raw else None
    sampler = top.take("sampler", lambda v: _parse_sampler(v, problems), default=SamplerSpec())
    scheduler_raw = top.take("scheduler", _mapping, default={})
    resources = top.take("resources", lambda v: _parse_resources(v, problems), default=ResourcesSpec())
    deadline = top.take("deadline", _positive_duration, default=None)
    max_trials = top.take("max_trials", _optional(_int_at_least(1)), default=None)
    seed = top.take("seed", _int_at_least(0), default=0)
    base_dir = source.parent if source else Path.cwd()
    workload = top.take("workload", lambda v: _parse_workload(v, base_dir, problems, checked_traces), default=None)
    controller = top.take("controller", lambda v: _parse_controller(v, problems), default=ControllerSpec())
    variants_raw = top.take("variants", _list_of_mappings, default=None)
    top.take("matrix", lambda v: v, default=None)
    top.reject_unknown(_TOP_KEYS)

    scheduler = None
    variants: list[Variant] = []
    if scheduler_raw is not None:
        scheduler = _parse_scheduler(scheduler_raw, "scheduler", problems, base_dir)
        variants = _parse_variants(variants_raw, scheduler_raw, scheduler, problems, base_dir)
    if trainable is None and workload is None and len(problems) == before:
        problems.append("trainable: required (or a workload: section for simulation)")
    if trainable is not None and space is None and "space" not in raw:
        problems.append("space: required for a trainable (the search space to explore)")
    if isinstance(sampler, SamplerSpec):
        _check_sampler(sampler, space, "space" in raw, problems)
    if workload is not None and workload.kind == "synthetic" and isinstance(metric, MetricSpec) \
            and metric.mode != "max":
        problems.append(f"metric.mode: synthetic curves are scores to maximise, got {shown(metric.mode)}")
    explicit_margin = isinstance(raw.get("controller"), Mapping) and "stop_margin" in raw["controller"]
    if deadline is not None and explicit_margin and isinstance(controller, ControllerSpec) \
            and controller.stop_margin >= deadline:
        problems.append(f"controller.stop_margin: must be below the deadline ({deadline:g} s), "
                        f"got {controller.stop_margin:g} s")
    if len(problems) != before or scheduler is None:
        return None
    return Spec(name=name, metric=metric, scheduler=scheduler, resources=resources,
                variants=tuple(variants), space=space, sampler=sampler, trainable=trainable, deadline=deadline,
                max_trials=max_trials, seed=seed, workload=workload, controller=controller, source=source,
                raw=raw)


def _parse_sampler(raw: object, problems: list[str]) -> SamplerSpec:
    if isinstance(raw, str):
        raw = {"name": raw}
    section = _Section(raw, "sampler", problems)
    name = section.take("name", _one_of(*SAMPLER_NAMES), default=SamplerSpec.name)
    startup = section.take("startup_trials", _int_at_least(0), default=SamplerSpec.startup_trials)
    fraction = section.take("random_fraction", _fraction, default=SamplerSpec.random_fraction)
    section.reject_unknown(("name", "startup_trials", "random_fraction"))
    for key in ("startup_trials", "random_fraction"):
        if key in section.raw and name not in MODEL_SAMPLERS:
            problems.append(f"sampler.{key}: only for a model-based sampler ({', '.join(MODEL_SAMPLERS)}), "
                            f"not for {shown(name)}")
    return SamplerSpec(name=name or SamplerSpec.name,
                       startup_trials=startup if startup is not None else SamplerSpec.startup_trials,
                       random_fraction=fraction if fraction is not None else SamplerSpec.random_fraction)


def _check_sampler(sampler: SamplerSpec, space: Space | None, has_space: bool, problems: list[str]) -> None:
    if sampler.name == "random":
        return
    if not has_space:
        problems.append(f"sampler: {shown(sampler.name)} needs a space: section to propose from")
        return
    missing = missing_modules(sampler.name)
    if missing:
        extras = sorted({EXTRA_FOR[m] for m in missing})
        problems.append(f"sampler: {shown(sampler.name)} needs {', '.join(missing)}, which is not installed "
                        f"(pip install {' '.join(repr(e) for e in extras)})")
    if space is not None and sampler.name in MODEL_SAMPLERS and space.grid_params:
        for param in space.grid_params:
            problems.append(f"space.{param.name}: a grid parameter cannot be proposed by sampler "
                            f"{shown(sampler.name)}; use choice")


def _parse_metric(raw: object, problems: list[str]) -> MetricSpec:
    if isinstance(raw, str):
        return MetricSpec(name=_string(raw))
    section = _Section(raw, "metric", problems)
    name = section.take("name", _string, default="score")
    mode = section.take("mode", _one_of(*MODES), default="max")
    non_finite = section.take("non_finite", _one_of(*NON_FINITE_POLICIES), default=MetricSpec.non_finite)
    section.reject_unknown(("name", "mode", "non_finite"))
    return MetricSpec(name or "score", mode or "max", non_finite or MetricSpec.non_finite)


def _parse_resources(raw: object, problems: list[str]) -> ResourcesSpec:
    section = _Section(raw, "resources", problems)
    d = ResourcesSpec()
    atoms = section.take("atoms", _auto_or(_at_most(_int_at_least(1), MAX_ATOMS)), default=d.atoms)
    gpus = section.take("gpus_per_atom", _auto_or(_int_at_least(0)), default=d.gpus_per_atom)
    cpus = section.take("cpus_per_atom", _int_at_least(1), default=d.cpus_per_atom)
    mem = section.take("mem_per_atom", _memory, default=d.mem_per_atom)
    distributed = section.take("distributed", _bool, default=d.distributed)
    section.reject_unknown(("atoms", "gpus_per_atom", "cpus_per_atom", "mem_per_atom", "distributed"))
    return ResourcesSpec(atoms=d.atoms if atoms is None else atoms,
                         gpus_per_atom=d.gpus_per_atom if gpus is None else gpus,
                         cpus_per_atom=cpus or 1, mem_per_atom=mem or "", distributed=bool(distributed))


def _parse_controller(raw: object, problems: list[str]) -> ControllerSpec:
    section = _Section(raw, "controller", problems)
    d = ControllerSpec()
    poll = section.take("poll_interval", _positive_duration, default=d.poll_interval)
    margin = section.take("stop_margin", _duration, default=d.stop_margin)
    grace = section.take("stop_grace", _positive_duration, default=d.stop_grace)
    hang = section.take("hang_timeout", _hang_timeout, default=d.hang_timeout)
    verdict = section.take("verdict_timeout", _duration, default=d.verdict_timeout)
    section.reject_unknown(("poll_interval", "stop_margin", "stop_grace", "hang_timeout", "verdict_timeout"))
    return ControllerSpec(poll or d.poll_interval, d.stop_margin if margin is None else margin, grace or d.stop_grace,
                          hang, d.verdict_timeout if verdict is None else verdict)


def _hang_timeout(value: Any) -> float | None:
    if isinstance(value, str) and value.strip().lower() in ("auto", "none"):
        return None if value.strip().lower() == "auto" else math.inf
    try:
        return _positive_duration(value)
    except ValueError:
        raise ValueError(f"expected auto, none or a duration (like 10m), got {shown(value)}") from None


_SCHEDULER_KEYS = ("kind", "r", "R", "eta") + _ASHA_ONLY + _HYPERSCHED_ONLY


def _profile(value: Any, base_dir: Path) -> tuple[Scaling, float | None]:
    """A profile file written by ``hpcsched profile``: its speedup table and startup estimate."""
    from hpcsched.profile_file import read_profile

    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected the path of a profile file, got {shown(value)}")
    path = Path(value)
    return read_profile(path if path.is_absolute() else base_dir / path)


def _parse_scheduler(raw: Mapping, path: str, problems: list[str],
                     base_dir: Path | None = None) -> SchedulerSpec | None:
    base_dir = base_dir or Path.cwd()
    before = len(problems)
    s = _Section(raw, path, problems)
    d = SchedulerSpec()
    kind = s.take("kind", _one_of(*SCHEDULER_KINDS), default=d.kind)
    r = s.take("r", _at_most(_int_at_least(1), MAX_STEPS), default=d.r)
    R = s.take("R", _at_most(_int_at_least(1), MAX_STEPS), default=d.R)
    eta = s.take("eta", _at_most(_number_at_least(2), MAX_ETA), default=d.eta)
    values: dict[str, Any] = {}
    for key, parse in (("atoms_per_trial", _int_at_least(1)), ("speculative", _bool),
                       ("rung_trust", _one_of(*RUNG_TRUST)), ("retrospective", _one_of(*RETROSPECTIVE)),
                       ("after_close", _one_of(*AFTER_CLOSE)),
                       ("entrance", _entrance), ("allocation", _one_of(*ALLOCATION_POLICIES)),
                       ("overhead_aware", _bool), ("backfill", _bool),
                       ("scaling", lambda v: _scaling(v, f"{path}.scaling", problems)),
                       ("allocation_grid", _int_at_least(1)), ("resize_margin", _number_at_least(0)),
                       ("resize_cooldown", _int_at_least(0)), ("startup_quantile", _fraction),
                       ("startup_estimate", _optional(_duration)),
                       ("max_atoms_per_trial", _optional(_int_at_least(1)))):
        if key in raw:
            values[key] = s.take(key, parse)
    if "profile" in raw:
        profile = s.take("profile", lambda v: _profile(v, base_dir))
        if profile is not None:
            if "scaling" in raw:
                problems.append(f"{path}.profile: gives the scaling itself; remove {path}.scaling "
                                f"(got both {shown(raw['scaling'])} and {shown(raw['profile'])})")
            values["scaling"] = profile[0]
            if profile[1] is not None and "startup_estimate" not in raw:
                values["startup_estimate"] = profile[1]
    s.reject_unknown(_SCHEDULER_KEYS)
    wrong_kind = _ASHA_ONLY if kind == "hypersched" else _HYPERSCHED_ONLY
    for key in wrong_kind:
        if key in raw:
            owners = "hypersched" if kind != "hypersched" else "asha, random or one_epoch"
            problems.append(f"{path}.{key}: only for kind {owners}, "
                            f"not for kind {shown(kind)} (got {shown(raw[key])})")
    if isinstance(r, int) and isinstance(R, int) and r > R:
        problems.append(f"{path}.r: must be <= R ({R}), got {r}")
    if len(problems) != before:
        return None
    return replace(d, kind=kind, r=r, R=R, eta=eta, **values)


def _parse_variants(raw: list | None, base_raw: Mapping, base: SchedulerSpec | None,
                    problems: list[str], base_dir: Path) -> list[Variant]:
    if raw is None:
        return [Variant(base.kind, base)] if base else []
    if not raw:
        problems.append("variants: expected a non-empty list, got []")
        return []
    variants: list[Variant] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = f"variants[{i}]"
        v = _Section(item, path, problems)
        name = v.take("name", _string)
        overrides = v.take("scheduler", _mapping, default={})
        v.reject_unknown(("name", "scheduler"))
        if name is not None and name in seen:
            problems.append(f"{path}.name: duplicate variant name {shown(name)}")
        seen.add(name or "")
        if overrides is None:
            continue
        kind = overrides.get("kind", base_raw.get("kind", SchedulerSpec.kind))
        not_for_kind = _ASHA_ONLY if kind == "hypersched" else _HYPERSCHED_ONLY
        # keys inherited from the base section that do not apply to this variant's kind are dropped;
        # written in the variant itself they are an error
        merged = {k: v for k, v in base_raw.items() if k not in not_for_kind}
        merged.update(overrides)
        scheduler = _parse_scheduler(merged, f"{path}.scheduler", problems, base_dir)
        if scheduler is not None and name is not None:
            variants.append(Variant(name, scheduler))
    return variants


def _parse_workload(raw: object, base_dir: Path, problems: list[str],
                    checked_traces: dict[tuple[Path, bool], str | None]) -> WorkloadSpec | None:
    before = len(problems)
    s = _Section(raw, "workload", problems)
    d = WorkloadSpec()
    kind = s.take("kind", _one_of(*WORKLOAD_KINDS), default=d.kind)
    path = s.take("path", _string, default=None)
    step_time = s.take("step_time", _positive_duration, default=None)
    startup = s.take("startup", _duration, default=d.startup)
    step_overhead = s.take("step_overhead", _duration, default=d.step_overhead)
    scaling = s.take("scaling", lambda v: _scaling(v, "workload.scaling", problems), default=d.scaling)
    trials = s.take("trials", _int_at_least(1), default=d.trials)
    noise = s.take("noise", _number_at_least(0), default=d.noise)
    s.reject_unknown(("kind", "path", "step_time", "startup", "step_overhead", "scaling", "trials", "noise"))
    resolved = None
    if kind == "trace":
        if path is None:
            problems.append("workload.path: required for a trace workload")
        else:
            resolved = (base_dir / path) if not Path(path).is_absolute() else Path(path)
            from hpcsched.workloads.trace import check_trace_file

            key = (resolved, step_time is None)
            if key not in checked_traces:
                checked_traces[key] = check_trace_file(resolved, needs_time=step_time is None)
            problem = checked_traces[key]
            if problem:
                problems.append(f"workload.path: {problem} ({shown(str(resolved))})")
    elif path is not None:
        problems.append(f"workload.path: only for kind 'trace', got {shown(path)}")
    if len(problems) != before:
        return None
    return WorkloadSpec(kind=kind, path=resolved, step_time=step_time if step_time is not None else d.step_time,
                        startup=startup, step_overhead=step_overhead, scaling=scaling, trials=trials, noise=noise)


def _parse_matrix(raw: object, problems: list[str]) -> list[tuple[str, list]]:
    """Axes of the matrix. An axis is a field path with a list of values, or a free name with a
    list of bundles ``{label: ..., path: value, ...}`` that set several fields together."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping) or not raw:
        problems.append(f"matrix: expected a mapping of field paths to lists of values, got {shown(raw)}")
        return []
    out = []
    for key, values in raw.items():
        key = str(key)
        if not isinstance(values, list) or not values:
            problems.append(f"matrix.{key}: expected a non-empty list of values, got {shown(values)}")
            continue
        if key.split(".")[0] in _TOP_KEYS:
            paths = [key]
        elif all(isinstance(v, Mapping) and "label" in v for v in values):
            paths = sorted({str(p) for v in values for p in v if p != "label"})
        else:
            problems.append(f"matrix.{key}: not a spec field (valid: {', '.join(_TOP_KEYS)}) and not a list of "
                            f"bundles {{label: ..., field.path: value}}")
            continue
        bad = [p for p in paths if p.split(".")[0] in ("matrix", "variants", "name") or
               p.split(".")[0] not in _TOP_KEYS]
        if bad:
            problems.append(f"matrix.{key}: cannot vary {shown(bad[0])}")
            continue
        out.append((key, values))
    return out


def _assign(raw: dict, key: str, value: Any) -> Any:
    """Set one matrix axis in a raw spec; return the value shown in the summary column."""
    if key.split(".")[0] in _TOP_KEYS:
        _set_path(raw, key, value)
        return value
    for path, v in value.items():
        if path != "label":
            _set_path(raw, str(path), v)
    return value["label"]


def _set_path(raw: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


# ---------------------------------------------------------------- field parsers

_MISSING = object()


class _Section:
    """Reads one mapping of the spec, recording problems with their field paths."""

    def __init__(self, raw: object, path: str, problems: list[str]):
        self.path = path
        self.problems = problems
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            problems.append(f"{path or '(top level)'}: expected a mapping, got {shown(raw)}")
            raw = {}
        self.raw = raw

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def take(self, key: str, parse: Callable[[Any], Any], default: Any = _MISSING) -> Any:
        if key not in self.raw:
            if default is _MISSING:
                self.problems.append(f"{self._where(key)}: required")
                return None
            return default
        try:
            return parse(self.raw[key])
        except ValueError as exc:
            self.problems.append(f"{self._where(key)}: {exc}")
            return None

    def reject_unknown(self, known: tuple[str, ...]) -> None:
        for key in self.raw:
            if key not in known:
                self.problems.append(f"{self._where(str(key))}: unknown key; valid keys: {', '.join(known)}")


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {shown(value)}")
    return value.strip()


def _run_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value.strip()):
        raise ValueError(f"expected a name of letters, digits, '.', '_' and '-' (at most 100, starting with a "
                         f"letter or digit; it names the run directory), got {shown(value)}")
    return value.strip()


def _default_name(source: Path | None) -> str:
    stem = source.stem if source else "experiment"
    return stem if NAME_PATTERN.fullmatch(stem) else "experiment"


def _mapping(value: Any) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {shown(value)}")
    return value


def _list_of_mappings(value: Any) -> list:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"expected a list of mappings, got {shown(value)}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shown(value)}")
    return value


def _one_of(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value.strip().lower()

    return parse


def _int_at_least(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ValueError(f"expected an integer >= {low}, got {shown(value)}")
        if value < low:
            raise ValueError(f"must be >= {low}, got {shown(value)}")
        return value

    return parse


def _at_most(parse: Callable[[Any], Any], high: float) -> Callable[[Any], Any]:
    """``parse``, then an upper bound (sizes that would make the run allocate without end)."""

    def bounded(value: Any) -> Any:
        value = parse(value)
        if value > high:
            raise ValueError(f"must be <= {int(high) if float(high).is_integer() else high}, got {shown(value)}")
        return value

    return bounded


def _number_at_least(low: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"expected a number >= {low:g}, got {shown(value)}")
        if value < low:
            raise ValueError(f"must be >= {low:g}, got {shown(value)}")
        return value

    return parse


def _fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"expected a number in [0, 1], got {shown(value)}")
    return float(value)


def _auto_or(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(value: Any) -> Any:
        if value == "auto":
            return "auto"
        try:
            return parse(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (or auto)") from None

    return wrapped


def _memory(value: Any) -> str:
    text = str(value).strip().upper() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text or not (text.isdigit() or (text[:-1].isdigit() and text[-1] in "KMGT")):
        raise ValueError(f"expected a memory size like 4G or 4096M, got {shown(value)}")
    return text


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else parse(value)


def _duration(value: Any) -> float:
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError(f"expected a duration (seconds, or like 90s, 30m, 2h), got {shown(value)}") from None


def _positive_duration(value: Any) -> float:
    seconds = _duration(value)
    if seconds <= 0:
        raise ValueError(f"must be > 0, got {shown(value)}")
    return seconds


def _entrance(value: Any) -> str | float:
    if isinstance(value, str) and value.strip().lower() in ("deadline", "adaptive", "none"):
        return value.strip().lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise ValueError(f"expected deadline, adaptive, none, or the fraction of the deadline spent exploring "
                     f"(0 < f <= 1), "
                     f"got {shown(value)}")


def _scaling(value: Any, path: str, problems: list[str]) -> Scaling:
    nested: list[str] = []
    scaling = parse_scaling(value, path, nested)
    if scaling is None or nested:
        # parse_scaling names the path itself; strip it so _Section adds it once.
        raise ValueError("; ".join(p.split(": ", 1)[1] if p.startswith(path + ":") else p for p in nested))
    return scaling


def _trainable_ref(value: Any) -> str:
    text = _string(value)
    target, sep, function = text.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise ValueError(f"expected 'path/to/file.py:function' or 'module:function', got {shown(value)}")
    return text
