"""The spec's sections, each read through one table of its keys (the keys are its dataclass's fields).

A value that fails its parser is reported with its field path and left out, so the section's
dataclass keeps its default there; the spec as a whole is then refused (``SpecError``) with every
problem listed, so no default stands in for a bad value in a run.
"""

from __future__ import annotations

import warnings
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from hpcsched.core.errors import shown
from hpcsched.core.mode import MODES
from hpcsched.samplers import (EXTRA_FOR, OPTUNA_PREFIX, SAMPLER_NAMES, SamplerSpec, is_model, is_optuna,
                               missing_modules, optuna_class_name)
from hpcsched.core.scaling import Scaling
from hpcsched.core.outcomes import NON_FINITE_POLICIES
from hpcsched.core.space import Space
from hpcsched.spec import fields as f
from hpcsched.spec.model import (ALLOCATION_POLICIES, ASHA_ONLY, COMMON_SCHEDULER_KEYS, MAX_ATOMS, MAX_ETA, MAX_STEPS,
                                 REMOVED_SCHEDULER_KEYS, RUNG_TRUST, RUNG_VALUES, SCHEDULER_KINDS, WORKLOAD_KINDS,
                                 ControllerSpec, MetricSpec, ResourcesSpec, SchedulerSpec, Variant, WorkloadSpec)

Table = Mapping[str, Callable[[Any], Any]]
PROFILE_KEY = "profile"  # scheduler.profile: a profile file that gives scaling and startup_estimate
HYPERSCHED_ONLY = tuple(x.name for x in fields(SchedulerSpec)
                        if x.name not in COMMON_SCHEDULER_KEYS + ASHA_ONLY) + (PROFILE_KEY,)


def _sampler_name(value: object) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if text.lower() in SAMPLER_NAMES:
        return text.lower()
    if text.startswith(OPTUNA_PREFIX) and text[len(OPTUNA_PREFIX):].isidentifier():
        return text
    raise ValueError(f"expected one of {', '.join(SAMPLER_NAMES)} or {OPTUNA_PREFIX}<a class of optuna.samplers>, "
                     f"got {shown(value)}")


def _objectives(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"expected a mapping of metric names to max or min, e.g. {{loss: min}}, got {shown(value)}")
    out = []
    for name, mode in value.items():
        if not isinstance(name, str) or mode not in ("max", "min"):
            raise ValueError(f"expected a metric name and max or min, got {shown(name)}: {shown(mode)}")
        out.append((name, mode))
    return tuple(out)


METRIC_FIELDS: Table = {"name": f.string, "mode": f.one_of(*MODES), "non_finite": f.one_of(*NON_FINITE_POLICIES)}
SAMPLER_FIELDS: Table = {"name": _sampler_name, "startup_trials": f.int_at_least(0), "random_fraction": f.fraction,
                         "objectives": _objectives, "fit_from": f.fraction}
RESOURCES_FIELDS: Table = {"atoms": f.auto_or(f.at_most(f.int_at_least(1), MAX_ATOMS)),
                           "gpus_per_atom": f.auto_or(f.int_at_least(0)), "cpus_per_atom": f.int_at_least(1),
                           "mem_per_atom": f.memory, "distributed": f.boolean}
CONTROLLER_FIELDS: Table = {"poll_interval": f.positive_duration, "stop_margin": f.duration,
                            "stop_grace": f.positive_duration, "hang_timeout": f.hang_timeout,
                            "verdict_timeout": f.duration, "max_failures": f.count_or_none}


def scheduler_fields(path: str, problems: list[str]) -> Table:
    """The scheduler section's keys (``scaling`` reports its own nested problems under ``path``)."""
    return {"kind": f.one_of(*SCHEDULER_KINDS), "r": f.at_most(f.int_at_least(1), MAX_STEPS),
            "R": f.at_most(f.int_at_least(1), MAX_STEPS), "eta": f.at_most(f.number_at_least(2), MAX_ETA),
            "atoms_per_trial": f.int_at_least(1), "speculative": f.boolean,
            "rung_trust": f.one_of(*RUNG_TRUST), "rung_value": f.one_of(*RUNG_VALUES), "runner_ups": f.boolean,
            "entrance": f.entrance,
            "allocation": f.one_of(*ALLOCATION_POLICIES), "overhead_aware": f.boolean,
            "scaling": lambda v: f.scaling(v, f"{path}.scaling", problems),
            "allocation_grid": f.int_at_least(1), "resize_margin": f.number_at_least(0),
            "resize_cooldown": f.int_at_least(0), "startup_quantile": f.fraction,
            "startup_estimate": f.optional(f.duration), "max_atoms_per_trial": f.optional(f.int_at_least(1))}


def workload_fields(problems: list[str]) -> Table:
    return {"kind": f.one_of(*WORKLOAD_KINDS), "path": f.string, "configs": f.string, "step_time": f.positive_duration,
            "startup": f.durations, "step_overhead": f.duration,
            "stop_latency": f.duration,
            "scaling": lambda v: f.scaling(v, "workload.scaling", problems), "trials": f.int_at_least(1),
            "noise": f.number_at_least(0)}


def parse_metric(raw: object, problems: list[str]) -> MetricSpec:
    if isinstance(raw, str):
        return MetricSpec(name=f.string(raw))
    return MetricSpec(**f.Section(raw, "metric", problems).read(METRIC_FIELDS))


def parse_sampler(raw: object, problems: list[str]) -> SamplerSpec:
    if isinstance(raw, str):
        raw = {"name": raw}
    section = f.Section(raw, "sampler", problems)
    before = len(problems)
    sampler = SamplerSpec(**section.read(SAMPLER_FIELDS))
    if len(problems) > before and "name" in section.raw and sampler.name != section.raw["name"]:
        return sampler  # a misspelt name: whether the other keys fit it cannot be told
    for key in ("startup_trials", "random_fraction", "objectives", "fit_from"):
        if key in section.raw and not (is_optuna if key == "objectives" else is_model)(sampler.name):
            names = ", ".join(n for n in SAMPLER_NAMES if (is_optuna if key == "objectives" else is_model)(n))
            problems.append(f"sampler.{key}: only for the model-based samplers ({names}, {OPTUNA_PREFIX}<Class>), "
                            f"not for {shown(sampler.name)}")
    return sampler


def check_sampler(sampler: SamplerSpec, space: Space | None, has_space: bool, problems: list[str]) -> None:
    """A sampler other than random needs a space, its library installed, and no grid parameters (a model)."""
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
    elif sampler.name.startswith(OPTUNA_PREFIX):
        import optuna

        found = getattr(optuna.samplers, optuna_class_name(sampler.name), None)
        if not (isinstance(found, type) and issubclass(found, optuna.samplers.BaseSampler)):
            names = sorted(n for n in dir(optuna.samplers) if n.endswith("Sampler") and not n.startswith("Base"))
            problems.append(f"sampler.name: {shown(sampler.name)} is not a sampler of optuna.samplers "
                            f"({', '.join(names)})")
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "experimental" samplers say so when made
                    make: Any = found  # its own arguments, which BaseSampler does not declare
                    make(seed=0)
            except TypeError as exc:
                problems.append(f"sampler.name: {shown(sampler.name)} cannot be made from its name alone ({exc}); "
                                f"pass the sampler object through the Python API: hpcsched.run(..., sampler=...)")
    if space is not None and is_model(sampler.name) and space.grid_params:
        for param in space.grid_params:
            problems.append(f"space.{param.name}: a grid parameter cannot be proposed by sampler "
                            f"{shown(sampler.name)}; use choice")


def parse_resources(raw: object, problems: list[str]) -> ResourcesSpec:
    return ResourcesSpec(**f.Section(raw, "resources", problems).read(RESOURCES_FIELDS))


def parse_controller(raw: object, problems: list[str]) -> ControllerSpec:
    return ControllerSpec(**f.Section(raw, "controller", problems).read(CONTROLLER_FIELDS))


def _profile(value: Any, base_dir: Path) -> tuple[Scaling, float | None]:
    """A profile file written by ``hpcsched profile``: its speedup table and startup estimate."""
    from hpcsched.spec.profile_file import read_profile

    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected the path of a profile file, got {shown(value)}")
    path = Path(value)
    return read_profile(path if path.is_absolute() else base_dir / path)


def parse_scheduler(raw: Mapping, path: str, problems: list[str],
                    base_dir: Path | None = None) -> SchedulerSpec | None:
    base_dir = base_dir or Path.cwd()
    before = len(problems)
    section = f.Section(raw, path, problems)
    values = section.read(scheduler_fields(path, problems), also=(PROFILE_KEY, *REMOVED_SCHEDULER_KEYS))
    for key, why in REMOVED_SCHEDULER_KEYS.items():
        if key in section.raw:
            problems.append(f"{path}.{key}: no longer a setting ({why}); remove it (got {shown(section.raw[key])})")
    if PROFILE_KEY in section.raw:
        profile = section.take(PROFILE_KEY, lambda v: _profile(v, base_dir))
        if profile is not None:
            if "scaling" in section.raw:
                problems.append(f"{path}.profile: gives the scaling itself; remove {path}.scaling "
                                f"(got both {shown(section.raw['scaling'])} and {shown(section.raw['profile'])})")
            values["scaling"] = profile[0]
            if profile[1] is not None and "startup_estimate" not in section.raw:
                values["startup_estimate"] = profile[1]
    failed = {key for key in section.raw if key not in values and key != PROFILE_KEY} - set(REMOVED_SCHEDULER_KEYS)
    kind = values.get("kind", SchedulerSpec.kind)
    for key in () if "kind" in failed else ASHA_ONLY if kind == "hypersched" else HYPERSCHED_ONLY:
        if key in section.raw:
            owners = "hypersched" if kind != "hypersched" else "asha, random or one_epoch"
            problems.append(f"{path}.{key}: only for kind {owners}, "
                            f"not for kind {shown(kind)} (got {shown(section.raw[key])})")
    r, R = values.get("r", SchedulerSpec.r), values.get("R", SchedulerSpec.R)
    if not failed & {"r", "R"} and r > R:
        problems.append(f"{path}.r: must be <= R ({R}), got {r}")
    if len(problems) != before:
        return None
    return replace(SchedulerSpec(), **values)


def parse_variants(raw: list | None, base_raw: Mapping, base: SchedulerSpec | None,
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
        v = f.Section(item, path, problems)
        name = v.take("name", f.string)
        overrides = v.take("scheduler", f.mapping, default={})
        v.reject_unknown(("name", "scheduler"))
        if name is not None and name in seen:
            problems.append(f"{path}.name: duplicate variant name {shown(name)}")
        seen.add(name or "")
        if overrides is None:
            continue
        kind = overrides.get("kind", base_raw.get("kind", SchedulerSpec.kind))
        not_for_kind = ASHA_ONLY if kind == "hypersched" else HYPERSCHED_ONLY
        # keys inherited from the base section that do not apply to this variant's kind are dropped;
        # written in the variant itself they are an error
        merged = {k: v for k, v in base_raw.items() if k not in not_for_kind}
        merged.update(overrides)
        scheduler = parse_scheduler(merged, f"{path}.scheduler", problems, base_dir)
        if scheduler is not None and name is not None:
            variants.append(Variant(name, scheduler))
    return variants


def parse_workload(raw: object, base_dir: Path, problems: list[str],
                   checked_files: dict[tuple, str | None]) -> WorkloadSpec | None:
    """The workload section; ``checked_files`` caches the checks of its files across a matrix's cells."""
    before = len(problems)
    section = f.Section(raw, "workload", problems)
    values = section.read(workload_fields(problems))
    kind, path, configs = values.get("kind", WorkloadSpec.kind), values.pop("path", None), values.pop("configs", None)
    if kind == "trace":
        if path is None:
            if "path" not in section.raw:
                problems.append("workload.path: required for a trace workload")
        else:
            resolved = _resolved(path, base_dir)
            from hpcsched.workloads.trace import check_trace_file

            key = ("trace", resolved, "step_time" not in values)
            if key not in checked_files:
                checked_files[key] = check_trace_file(resolved, needs_time="step_time" not in values)
            problem = checked_files[key]
            if problem:
                problems.append(f"workload.path: {problem} ({shown(str(resolved))})")
            values["path"] = resolved
            if configs is not None and not problem:
                values["configs"] = _checked_configs(_resolved(configs, base_dir), resolved, problems, checked_files)
    else:
        if path is not None:
            problems.append(f"workload.path: only for kind 'trace', got {shown(path)}")
        if configs is not None:
            problems.append(f"workload.configs: only for kind 'trace', got {shown(configs)}")
    if len(problems) != before:
        return None
    return WorkloadSpec(**values)


def _resolved(path: str, base_dir: Path) -> Path:
    return (base_dir / path) if not Path(path).is_absolute() else Path(path)


def _checked_configs(configs: Path, trace: Path, problems: list[str], checked_files: dict[tuple, str | None]) -> Path:
    from hpcsched.workloads.configs import check_configs, trace_trials

    key = ("configs", configs, trace)
    if key not in checked_files:
        checked_files[key] = check_configs(configs, trace_trials(trace))
    problem = checked_files[key]
    if problem:
        problems.append(f"workload.configs: {problem} ({shown(str(configs))})")
    return configs
