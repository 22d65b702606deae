"""Config-aware trace replay: a proposed configuration replays the recorded curve of the nearest
unused recorded configuration, and is journalled as that configuration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from hpcsched.core.errors import SpecError
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import Reported, TrialCreated
from hpcsched.loop.simulate import simulate_run
from hpcsched.core.space import Space, parse_space
from hpcsched.spec import parse_experiment
from hpcsched.workloads.configs import ConfigTraceWorkload, check_configs, derive_space, load_configs, space_problems
from hpcsched.workloads.trace import load_trace
from tests.runs import hpcsched

CURVES = Path(__file__).resolve().parents[2] / "shared" / "data" / "curves" / "lcbench"

# four recorded trials: a log-scaled learning rate, a linear dropout, a choice of optimizer
TABLE = """trial,lr,dropout,optimizer
a,0.0001,0.5,sgd
b,0.001,0.1,adam
c,0.01,0.9,sgd
d,0.1,0.5,adam
"""
SPACE = {"lr": {"loguniform": [0.0001, 0.2]}, "dropout": {"uniform": [0.0, 1.0]},
         "optimizer": {"choice": ["sgd", "adam"]}}


def _files(tmp_path: Path, trials: str = "abcd", steps: int = 6) -> tuple[Path, Path]:
    """A trace whose trial ``x`` levels off at a score of its own, and the configurations table."""
    rows = ["trial,step,score"]
    for i, trial in enumerate(trials):
        rows += [f"{trial},{s},{(i + 1) / 10 * (1 - 0.5 ** s):.6f}" for s in range(1, steps + 1)]
    trace, table = tmp_path / "curves.csv", tmp_path / "configs.csv"
    trace.write_text("\n".join(rows) + "\n")
    table.write_text(TABLE)
    return trace, table


def _workload(tmp_path: Path, seed: int = 0) -> ConfigTraceWorkload:
    trace, table = _files(tmp_path)
    return ConfigTraceWorkload(load_trace(trace, 1.0), load_configs(table), parse_space(SPACE, "space", []), seed, 6)


def test_a_proposal_replays_the_nearest_recorded_configuration_in_the_spaces_own_scale(tmp_path):
    workload = _workload(tmp_path)
    # lr 0.01 is c's; c's dropout is 0.4 away, a's lr a tenth of the linear range (nearer on that scale)
    # but two thirds of the log range
    assert workload.curve(0, {"lr": 0.01, "dropout": 0.5, "optimizer": "sgd"}).key == "c"
    # the same trial gets the same curve again
    assert workload.curve(0, {"lr": 0.0001, "dropout": 0.5, "optimizer": "sgd"}).key == "c"
    # a different choice counts as a whole unit: a matches but for it, b (adam) is nearer
    assert workload.curve(1, {"lr": 0.0001, "dropout": 0.5, "optimizer": "adam"}).key == "b"
    curve = workload.curve(2, {"lr": 0.0001, "dropout": 0.5, "optimizer": "sgd"})
    assert curve.key == "a" and curve.config == {"lr": 0.0001, "dropout": 0.5, "optimizer": "sgd"}


def test_a_configuration_already_replayed_is_never_replayed_again(tmp_path):
    workload = _workload(tmp_path)
    same = {"lr": 0.001, "dropout": 0.1, "optimizer": "adam"}
    keys = [workload.curve(i, same).key for i in range(4)]
    assert keys[0] == "b" and sorted(keys) == ["a", "b", "c", "d"]
    with pytest.raises(IndexError, match="all 4 recorded configurations are used"):
        workload.curve(4, same)
    assert workload.curve(3).key in "abcd"  # without a configuration: the pool's own curve (the oracle's)


def test_a_simulated_run_replays_distinct_curves_journalled_with_their_recorded_configurations(tmp_path):
    trace, table = _files(tmp_path, trials="abcd")
    spec = parse_experiment({
        "name": "configs", "metric": {"name": "score", "mode": "max"},
        "scheduler": {"kind": "asha", "r": 1, "R": 6, "eta": 2}, "resources": {"atoms": 2}, "deadline": 1000,
        "space": SPACE, "workload": {"kind": "trace", "path": str(trace), "configs": str(table), "step_time": 1}},
        source=tmp_path / "spec.yaml").spec
    log = tmp_path / "events.jsonl"
    simulate_run(spec, spec.variants[0], 5, event_log=log)
    recs = read_journal(log)
    created = [r for r in recs if isinstance(r, TrialCreated)]
    rows = load_configs(table).rows
    assert sorted(r.config["curve"] for r in created) == ["a", "b", "c", "d"]
    for r in created:
        assert {k: v for k, v in r.config.items() if k != "curve"} == rows[r.config["curve"]]
    level = {r.trial: r.score for r in recs if isinstance(r, Reported)}
    curve_of = {r.trial: r.config["curve"] for r in created}
    assert max(level, key=level.get) == next(t for t, c in curve_of.items() if c == "d")  # d levels off highest


def test_the_space_is_derived_from_the_table_when_the_spec_has_none(tmp_path):
    table = tmp_path / "configs.csv"
    rng = np.random.default_rng(0)
    lr = np.exp(rng.uniform(np.log(1e-4), np.log(1e-1), 200))
    units = np.exp(rng.uniform(np.log(16), np.log(1024), 200)).astype(int)
    rows = [f"t{i},{lr[i]},{rng.uniform(0, 1)},{units[i]},{rng.integers(1, 6)},relu,3" for i in range(200)]
    table.write_text("trial,lr,dropout,units,layers,activation,depth\n" + "\n".join(rows) + "\n")
    space = {p.name: p for p in derive_space(load_configs(table)).params}
    assert [space[n].kind for n in ("lr", "dropout", "units", "layers", "activation", "depth")] == \
        ["loguniform", "uniform", "logint", "randint", "choice", "value"]
    assert space["lr"].low == pytest.approx(lr.min()) and space["units"].high == units.max() + 1
    assert space_problems(Space(tuple(space.values())), load_configs(table), "workload.configs") == []


def test_a_table_that_does_not_match_the_trace_is_refused_naming_the_trial(tmp_path):
    trace, table = _files(tmp_path, trials="abc")
    assert "trial 'd' has no curve in the trace" in check_configs(table, {"a", "b", "c"})
    assert "no row for trial 'e' of the trace" in check_configs(table, {"a", "b", "c", "d", "e"})
    table.write_text("trial,lr\na,0.1\na,0.2\n")
    assert "trial 'a' has two rows" in check_configs(table, {"a"})


@pytest.mark.parametrize("space, named", [
    ({"lr": {"loguniform": [0.0001, 0.2]}, "dropout": {"uniform": [0.0, 1.0]}}, "space: no parameter 'optimizer'"),
    ({**SPACE, "momentum": {"uniform": [0.0, 1.0]}}, "space.momentum: not a column of workload.configs"),
    ({**SPACE, "lr": {"loguniform": [0.001, 0.2]}}, "space.lr: workload.configs has values from 0.0001 to 0.1"),
    ({**SPACE, "optimizer": {"choice": ["sgd"]}}, "space.optimizer: workload.configs has the value 'adam'"),
])
def test_cli_refuses_a_space_that_does_not_match_the_table_naming_the_parameter(tmp_path, space, named):
    trace, table = _files(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "configs", "metric": {"name": "score", "mode": "max"},
        "scheduler": {"kind": "asha", "r": 1, "R": 6, "eta": 2}, "resources": {"atoms": 2}, "deadline": 100,
        "space": space, "workload": {"kind": "trace", "path": "curves.csv", "configs": "configs.csv",
                                     "step_time": 1}}))
    out = tmp_path / "out"
    proc = hpcsched("simulate", str(spec), "--out", str(out), "--seeds", "1", "--jobs", "1")
    assert proc.returncode == 2 and named in proc.stderr, proc.stderr
    assert not out.exists()


def test_configs_only_beside_a_trace():
    with pytest.raises(SpecError, match="workload.configs: only for kind 'trace'"):
        parse_experiment({"name": "x", "scheduler": {"kind": "asha", "r": 1, "R": 6}, "deadline": 10,
                          "workload": {"kind": "synthetic", "configs": "c.csv"}})


@pytest.mark.skipif(not CURVES.is_dir(), reason="the shared LCBench curves are absent")
def test_an_lcbench_task_replays_its_real_configurations_with_a_derived_space():
    spec = parse_experiment({
        "name": "lcbench", "metric": {"name": "score", "mode": "max"},
        "scheduler": {"kind": "asha", "r": 1, "R": 51, "eta": 4}, "resources": {"atoms": 8}, "deadline": 3000,
        "workload": {"kind": "trace", "path": str(CURVES / "lcbench-7593.csv"),
                     "configs": str(CURVES / "lcbench-7593-configs.csv")}}).spec
    kinds = {p.name: p.kind for p in spec.space.params}
    assert kinds["learning_rate"] == "loguniform" and kinds["max_dropout"] == "uniform"
    state, _ = simulate_run(spec, spec.variants[0], 0)
    curves = [t.config["curve"] for t in state.trials.values()]
    assert len(curves) == len(set(curves)) > 8


def test_a_sampler_that_cannot_choose_replays_the_row_nearest_its_proposal(tmp_path):
    """qmc proposes Sobol points: each trial replays the unused recorded configuration nearest its point
    (it must not inherit the random sampler's uniform pick from the pool)."""
    from hpcsched.samplers import make_sampler

    trace, table = _files(tmp_path)
    spec = parse_experiment({
        "name": "configs", "metric": {"name": "score", "mode": "max"}, "sampler": "qmc",
        "scheduler": {"kind": "asha", "r": 1, "R": 6, "eta": 2}, "resources": {"atoms": 1}, "deadline": 3,
        "space": SPACE, "workload": {"kind": "trace", "path": str(trace), "configs": str(table), "step_time": 1}},
        source=tmp_path / "spec.yaml").spec
    sampler = make_sampler(spec.sampler, spec.space, 2, "max")
    assert not hasattr(sampler, "choose")
    state, _ = simulate_run(spec, spec.variants[0], 2)
    first = next(t for t in state.trials.values() if t.index == 0)
    assert first.config["curve"] == _workload(tmp_path, seed=2).curve(0, sampler.config(0)).key
