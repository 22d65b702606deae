"""A spec document: read (bounded), validated section by section, expanded over its matrix.

Every problem names its field path and the offending value; all problems of a file are
collected into one SpecError before anything runs.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping

import yaml

from hpcsched.core.errors import SpecError, shown
from hpcsched.samplers import SamplerSpec
from hpcsched.core.space import Space, parse_space
from hpcsched.spec import fields as f
from hpcsched.spec.model import (MAX_MATRIX_CELLS, MAX_SPEC_BYTES, MAX_SPEC_VALUES, Cell, ControllerSpec, Experiment,
                                 MetricSpec, ResourcesSpec, Spec, Variant)
from hpcsched.spec.sections import (check_sampler, parse_controller, parse_metric, parse_resources, parse_sampler,
                                    parse_scheduler, parse_variants, parse_workload)
from hpcsched.spec.yaml_text import MAX_DEPTH, load_yaml

# the document's top-level keys: the Spec's fields as written in a file, and the matrix over them
TOP_KEYS = tuple(x.name for x in fields(Spec) if x.name not in ("source", "raw")) + ("matrix",)


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
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise SpecError([f"not valid YAML: {exc}"], str(path)) from None


def _expansion_problem(raw: Any, limit: int) -> str | None:
    """Why the document cannot be read as it expands, shared (aliased) parts counted every time they
    appear: it refers to itself, holds more than ``limit`` values or nests deeper than MAX_DEPTH
    (aliases can nest what YAML wrote flat; a Python spec can be anything). Linear in the document."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (values, levels) of a list or mapping seen before
    visiting: set[int] = set()

    def measure(node: Any, depth: int) -> tuple[int, int]:
        """(values, levels) of ``node``, which sits at nesting level ``depth``."""
        if not isinstance(node, (dict, list)):
            return 1, 0
        if depth > MAX_DEPTH:
            raise _TooDeep
        key = id(node)
        if key not in measured:
            if key in visiting:
                raise RecursionError
            visiting.add(key)
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            total, levels = 1, 1
            for child in children:
                values, below = measure(child, depth + 1)
                total, levels = total + values, max(levels, below + 1)
                if total > limit:
                    raise OverflowError
            visiting.discard(key)
            measured[key] = (total, levels)
        total, levels = measured[key]
        if depth + levels - 1 > MAX_DEPTH:  # a shared part placed deeper than where it was first seen
            raise _TooDeep
        return total, levels

    try:
        measure(raw, 1)
    except _TooDeep:
        return f"(top level): the document nests more than {MAX_DEPTH} levels deep (YAML aliases?)"
    except (OverflowError, RecursionError):
        return f"(top level): the document refers to itself or expands to more than {limit} values (YAML aliases?)"
    return None


class _TooDeep(Exception):
    """Raised inside ``_expansion_problem`` past MAX_DEPTH levels."""


def parse_experiment(raw: Any, source: Path | None = None) -> Experiment:
    """Validate a parsed YAML document into an Experiment."""
    where = str(source) if source else "spec"
    expansion = _expansion_problem(raw, MAX_SPEC_VALUES)
    if expansion is not None:
        raise SpecError([expansion], where)
    if not isinstance(raw, Mapping):
        raise SpecError([f"(top level): expected a mapping of spec sections, got {shown(raw)}"], where)
    problems: list[str] = []
    matrix = _parse_matrix(raw.get("matrix"), problems)
    base_raw = {k: v for k, v in raw.items() if k != "matrix"}
    checked_files: dict[tuple, str | None] = {}
    spec = _parse_spec(base_raw, source, problems, checked_files)
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
            cell_spec = _parse_spec(cell_raw, source, cell_problems, checked_files)
            problems.extend(f"matrix cell ({label}): {p}" for p in cell_problems)
            if cell_spec is not None:
                cells.append(Cell(tuple(zip(keys, labels)), cell_spec))
    if problems or spec is None:
        raise SpecError(problems, where)
    if not matrix:
        cells = [Cell((), spec)]
    return Experiment(spec, tuple(cells), tuple(k for k, _ in matrix))


def _parse_spec(raw: Mapping, source: Path | None, problems: list[str],
                checked_files: dict[tuple, str | None]) -> Spec | None:
    before = len(problems)
    top = f.Section(raw, "", problems)
    name = top.take("name", f.run_name, default=f.default_name(source))
    trainable = top.take("trainable", f.trainable_ref, default=None)
    metric = top.take("metric", lambda v: parse_metric(v, problems), default=MetricSpec())
    space_raw = top.take("space", lambda v: v, default=None)
    space = parse_space(space_raw, "space", problems) if "space" in raw else None
    sampler = top.take("sampler", lambda v: parse_sampler(v, problems), default=SamplerSpec())
    scheduler_raw = top.take("scheduler", f.mapping, default={})
    resources = top.take("resources", lambda v: parse_resources(v, problems), default=ResourcesSpec())
    deadline = top.take("deadline", f.positive_duration, default=None)
    max_trials = top.take("max_trials", f.optional(f.int_at_least(1)), default=None)
    seed = top.take("seed", f.int_at_least(0), default=0)
    base_dir = source.parent if source else Path.cwd()
    workload = top.take("workload", lambda v: parse_workload(v, base_dir, problems, checked_files), default=None)
    controller = top.take("controller", lambda v: parse_controller(v, problems), default=ControllerSpec())
    variants_raw = top.take("variants", f.list_of_mappings, default=None)
    top.take("matrix", lambda v: v, default=None)
    top.reject_unknown(TOP_KEYS)

    scheduler = None
    variants: list[Variant] = []
    if scheduler_raw is not None:
        scheduler = parse_scheduler(scheduler_raw, "scheduler", problems, base_dir)
        variants = parse_variants(variants_raw, scheduler_raw, scheduler, problems, base_dir)
    if trainable is None and workload is None and len(problems) == before:
        problems.append("trainable: required (or a workload: section for simulation)")
    if trainable is not None and space is None and "space" not in raw:
        problems.append("space: required for a trainable (the search space to explore)")
    if workload is not None and workload.configs is not None and (space is not None or "space" not in raw):
        space = _space_of_configs(workload.configs, space, problems)
    if isinstance(sampler, SamplerSpec):
        check_sampler(sampler, space, "space" in raw or space is not None, problems)
    if workload is not None and workload.kind == "synthetic" and isinstance(metric, MetricSpec) \
            and metric.mode != "max":
        problems.append(f"metric.mode: synthetic curves are scores to maximise, got {shown(metric.mode)}")
    if deadline is not None and isinstance(controller, ControllerSpec) and controller.stop_margin is not None \
            and controller.stop_margin >= deadline:
        problems.append(f"controller.stop_margin: must be below the deadline ({deadline:g} s), "
                        f"got {controller.stop_margin:g} s")
    if len(problems) != before or scheduler is None:
        return None
    return Spec(name=name, metric=metric, scheduler=scheduler, resources=resources,
                variants=tuple(variants), space=space, sampler=sampler, trainable=trainable, deadline=deadline,
                max_trials=max_trials, seed=seed, workload=workload, controller=controller, source=source,
                raw=raw)


def _space_of_configs(configs: Path, space: Space | None, problems: list[str]) -> Space | None:
    """The space a configurations table's trials were drawn from: the spec's, checked against the
    table, or (without a space: section) derived from it."""
    from hpcsched.workloads.configs import derive_space, load_configs, space_problems

    table = load_configs(configs)  # checked with the workload section
    if space is None:
        return derive_space(table)
    problems.extend(space_problems(space, table, "workload.configs"))
    return space


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
        if key.split(".")[0] in TOP_KEYS:
            paths = [key]
        elif all(isinstance(v, Mapping) and "label" in v for v in values):
            paths = sorted({str(p) for v in values for p in v if p != "label"})
        else:
            problems.append(f"matrix.{key}: not a spec field (valid: {', '.join(TOP_KEYS)}) and not a list of "
                            f"bundles {{label: ..., field.path: value}}")
            continue
        bad = [p for p in paths if p.split(".")[0] in ("matrix", "variants", "name") or
               p.split(".")[0] not in TOP_KEYS]
        if bad:
            problems.append(f"matrix.{key}: cannot vary {shown(bad[0])}")
            continue
        out.append((key, values))
    return out


def _assign(raw: dict, key: str, value: Any) -> Any:
    """Set one matrix axis in a raw spec; return the value shown in the summary column."""
    if key.split(".")[0] in TOP_KEYS:
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
