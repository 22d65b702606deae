import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hpcsched.core.errors import SpecError
from hpcsched.spec import load_experiment, parse_experiment

REPO = Path(__file__).resolve().parents[1]

GOOD = {
    "name": "x", "metric": {"name": "acc", "mode": "max"},
    "scheduler": {"kind": "hypersched", "r": 2, "R": 50, "eta": 4, "scaling": {1: 1, 2: 1.8, 4: 3.2},
                  "entrance": 0.5, "allocation": "top_job", "allocation_grid": 2},
    "resources": {"atoms": 8}, "deadline": "30m", "max_trials": 40, "seed": 3,
    "workload": {"kind": "synthetic", "startup": "5s"},
}


def test_good_spec_parses_with_durations_and_tables():
    spec = parse_experiment(GOOD).spec
    assert spec.deadline == 1800 and spec.workload.startup == 5
    assert spec.scheduler.scaling.rate(3) == pytest.approx(2.5)
    assert spec.scheduler.entrance == 0.5 and spec.scheduler.allocation_grid == 2
    assert [v.name for v in spec.variants] == ["hypersched"]


def _problems(raw) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_experiment(raw)
    return info.value.problems


def test_all_problems_collected_each_naming_path_and_value():
    raw = {**GOOD, "scheduler": {"kind": "hypersched", "r": 60, "R": 50, "eta": 1, "entrance": 2,
                                 "allocation": "greedy", "rung_value": "guess", "bogus": 1},
           "resources": {"atoms": 0}, "deadline": "soon", "max_trials": -1, "extra": True}
    problems = _problems(raw)
    for expected in ["scheduler.eta: must be >= 2, got 1",
                     "scheduler.entrance: expected deadline, adaptive, none, or the fraction",
                     "scheduler.allocation: expected one of uniform, top_job, none, got 'greedy'",
                     "scheduler.rung_value: expected one of forecast, score, got 'guess'",
                     "scheduler.bogus: unknown key; valid keys:",
                     "scheduler.r: must be <= R (50), got 60",
                     "resources.atoms: must be >= 1, got 0",
                     "deadline: expected a duration (seconds, or like 90s, 30m, 2h), got 'soon'",
                     "max_trials: must be >= 1, got -1",
                     "extra: unknown key; valid keys:"]:
        assert any(expected in p for p in problems), (expected, problems)


def test_kind_specific_keys_and_variants():
    problems = _problems({**GOOD, "scheduler": {"kind": "asha", "r": 1, "R": 9, "allocation": "uniform"}})
    assert any("scheduler.allocation: only for kind hypersched, not for kind 'asha'" in p for p in problems)
    raw = {**GOOD, "variants": [{"name": "asha", "scheduler": {"kind": "asha"}}, {"name": "hs"},
                                {"name": "hs-spec", "scheduler": {"speculative": True}}]}
    spec = parse_experiment(raw).spec
    kinds = {v.name: (v.scheduler.kind, v.scheduler.speculative, v.scheduler.R) for v in spec.variants}
    assert kinds == {"asha": ("asha", False, 50), "hs": ("hypersched", False, 50), "hs-spec": ("hypersched", True, 50)}
    problems = _problems({**GOOD, "variants": [{"name": "a", "scheduler": {"kind": "asha", "speculative": False}},
                                               {"name": "a"}]})
    assert any("variants[0].scheduler.speculative: only for kind hypersched" in p for p in problems)
    assert any("variants[1].name: duplicate variant name 'a'" in p for p in problems)


def test_matrix_cells_and_bundles():
    raw = {**GOOD, "matrix": {"resources.atoms": [4, 8], "belief": [
        {"label": "sqrt", "workload.scaling": "sqrt", "scheduler.scaling": "sqrt"},
        {"label": "none", "workload.scaling": "none", "scheduler.scaling": "none"}]}}
    exp = parse_experiment(raw)
    assert exp.matrix_keys == ("resources.atoms", "belief")
    cells = {(c.params[0][1], c.params[1][1]): c.spec for c in exp.cells}
    assert set(cells) == {(4, "sqrt"), (4, "none"), (8, "sqrt"), (8, "none")}
    assert cells[(8, "none")].resources.atoms == 8 and cells[(8, "none")].workload.scaling.name == "none"
    problems = _problems({**GOOD, "matrix": {"resources.atoms": [4, 0]}})
    assert any("matrix cell (resources.atoms=0): resources.atoms: must be >= 1, got 0" in p for p in problems)


def test_trace_problems(tmp_path):
    base = {**GOOD, "workload": {"kind": "trace", "path": str(tmp_path / "missing.csv")}}
    assert any("workload.path: no such trace file" in p for p in _problems(base))
    bad = tmp_path / "bad.csv"
    bad.write_text("trial,step,score\na,1,0.5\na,x,0.6\n")
    problems = _problems({**GOOD, "workload": {"kind": "trace", "path": str(bad), "step_time": 1}})
    assert any("column 'step' has a non-numeric value 'x' (row 3)" in p for p in problems)
    no_time = tmp_path / "nt.csv"
    no_time.write_text("trial,step,score\na,1,0.5\n")
    problems = _problems({**GOOD, "workload": {"kind": "trace", "path": str(no_time)}})
    assert any("no time column: set workload.step_time" in p for p in problems)


def test_cli_simulate_bad_spec_exits_2_and_writes_nothing(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(textwrap.dedent("""
        scheduler: {kind: hypersched, r: 5, R: 4, eta: 1.5}
        resources: {atoms: 0}
        deadline: 10
        workload: {kind: synthetic}
    """))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "hpcsched", "simulate", str(spec), "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert "scheduler.eta: must be >= 2, got 1.5" in proc.stderr
    assert "scheduler.r: must be <= R (4), got 5" in proc.stderr
    assert "resources.atoms: must be >= 1, got 0" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_cli_simulate_without_out_writes_under_runs_as_run_does_and_status_says_what_it_is(tmp_path):
    spec = tmp_path / "small.yaml"
    spec.write_text(textwrap.dedent("""
        name: small
        scheduler: {kind: hypersched, r: 1, R: 4, eta: 2}
        resources: {atoms: 2}
        deadline: 60
        workload: {kind: synthetic}
    """))
    proc = subprocess.run([sys.executable, "-m", "hpcsched", "simulate", str(spec), "--jobs", "1", "--no-events"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = list((tmp_path / "runs").glob("small-sim-*/summary.csv"))
    assert len(written) == 1 and len(written[0].read_text().splitlines()) == 2
    assert f"wrote {written[0].relative_to(tmp_path)} (1 run)" in proc.stdout
    status = subprocess.run([sys.executable, "-m", "hpcsched", "status", str(written[0].parent)],
                            capture_output=True, text=True, cwd=tmp_path)  # beside the runs, mistaken for one
    assert status.returncode == 2 and "it holds a simulation's output: 'hpcsched report" in status.stderr


def test_cli_unreadable_yaml_exits_2(tmp_path):
    spec = tmp_path / "broken.yaml"
    spec.write_text("scheduler: [unclosed\n")
    proc = subprocess.run([sys.executable, "-m", "hpcsched", "simulate", str(spec), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and "not valid YAML" in proc.stderr
    missing = subprocess.run([sys.executable, "-m", "hpcsched", "simulate", str(tmp_path / "nope.yaml"),
                              "--out", str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO)
    assert missing.returncode == 2 and "cannot read the spec file" in missing.stderr


@pytest.mark.parametrize("path", sorted((REPO / "experiments").glob("*/*.yaml")), ids=lambda p: p.name)
def test_shipped_specs_validate(path):
    try:
        load_experiment(path)
    except SpecError as exc:
        if any("no such trace file" in p for p in exc.problems) and not (REPO.parent / "shared").exists():
            pytest.skip(f"{path.name}: the shared curves are absent")
        raise


def test_each_sections_keys_are_its_dataclass_fields():
    """The spec's keys are written once: every section's parser table is its dataclass's fields."""
    from dataclasses import fields

    from hpcsched.samplers import SamplerSpec
    from hpcsched.spec import TOP_KEYS, ControllerSpec, MetricSpec, ResourcesSpec, SchedulerSpec, Spec, WorkloadSpec
    from hpcsched.spec.sections import (CONTROLLER_FIELDS, METRIC_FIELDS, RESOURCES_FIELDS, SAMPLER_FIELDS,
                                        scheduler_fields, workload_fields)

    def names(cls):
        return [x.name for x in fields(cls)]

    assert list(METRIC_FIELDS) == names(MetricSpec)
    assert list(SAMPLER_FIELDS) == names(SamplerSpec)
    assert list(RESOURCES_FIELDS) == names(ResourcesSpec)
    assert list(CONTROLLER_FIELDS) == names(ControllerSpec)
    assert sorted(scheduler_fields("scheduler", [])) == sorted(names(SchedulerSpec))
    assert list(workload_fields([])) == names(WorkloadSpec)
    assert set(TOP_KEYS) == set(names(Spec)) - {"source", "raw"} | {"matrix"}


def test_a_bad_value_is_reported_once_without_follow_on_problems():
    from hpcsched.spec import parse_experiment

    raw = {"name": "x", "workload": {"kind": "synthetic"}, "scheduler": {"kind": "fast", "r": 0, "R": 10,
                                                                         "speculative": "yes"}}
    with pytest.raises(SpecError) as err:
        parse_experiment(raw)
    text = str(err.value)
    assert "scheduler.kind: expected one of asha, hypersched, random, one_epoch, got 'fast'" in text
    assert "scheduler.r: must be >= 1, got 0" in text
    assert "scheduler.speculative: expected true or false, got 'yes'" in text
    assert "only for kind" not in text and "must be <= R" not in text


def test_numbers_written_as_ml_users_write_them_are_numbers(tmp_path):
    """YAML 1.1 (PyYAML) reads 1e-3 as a string; a spec, like a paper, means 0.001."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent("""
        metric: {name: accuracy, mode: max}
        space:
          lr: {loguniform: [1e-4, 1e-1]}
          weight_decay: {choice: [0, 5E-4, 1.0e-3, "1e-3"]}
        scheduler: {kind: hypersched, r: 1, R: 8}
        resources: {atoms: 2}
        deadline: 6e2
        workload: {kind: synthetic}
    """))
    experiment = load_experiment(spec)
    params = {p.name: p for p in experiment.spec.space.params}
    assert experiment.spec.deadline == 600
    assert (params["lr"].low, params["lr"].high) == (0.0001, 0.1)
    assert tuple(params["weight_decay"].values) == (0, 0.0005, 0.001, "1e-3")  # quoted: the user's string


def test_profile_config_overrides_read_1e_minus_4_as_a_number():
    from hpcsched.cli.profiler import profiled_config

    spec = parse_experiment(GOOD).spec
    config = profiled_config(spec, ["weight_decay=1e-4", "name=1e-4x", "layers=3"])
    assert config["weight_decay"] == 0.0001 and config["name"] == "1e-4x" and config["layers"] == 3


def test_a_hypersched_key_of_earlier_versions_is_refused_saying_what_replaced_it():
    from hpcsched.spec import parse_experiment

    raw = {"name": "x", "workload": {"kind": "synthetic"}, "deadline": 60,
           "scheduler": {"kind": "hypersched", "R": 10, "after_close": "paper", "backfill": False}}
    with pytest.raises(SpecError) as err:
        parse_experiment(raw)
    text = str(err.value)
    assert "scheduler.after_close: no longer a setting (after the entrance closes" in text
    assert "scheduler.backfill: no longer a setting (no atom idles" in text and "remove it (got False)" in text
    assert "unknown key" not in text
