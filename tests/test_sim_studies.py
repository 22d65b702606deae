"""The paper's simulated studies (experiments/sim/) and the tools that regenerate and benchmark them."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hpcsched.core.errors import SpecError
from hpcsched.schedulers.sorted_scores import RunningQuantile
from hpcsched.loop.simulate import simulate_experiment
from hpcsched.spec import Experiment, load_experiment

REPO = Path(__file__).resolve().parents[1]
SIM = REPO / "experiments" / "sim"
TRACE = REPO.parent / "shared" / "data" / "curves" / "cifar10-resnets.csv"
needs_trace = pytest.mark.skipif(not TRACE.exists(), reason="the shared curves are absent")


def _tool(name: str):
    """Import tools/<name>.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_tool_{name}", REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _restrict(experiment: Experiment, keep_cell, keep_variants: set[str]) -> Experiment:
    cells = []
    for cell in experiment.cells:
        if keep_cell(dict(cell.params)):
            variants = tuple(v for v in cell.spec.variants if v.name in keep_variants)
            cells.append(dataclasses.replace(cell, spec=dataclasses.replace(cell.spec, variants=variants)))
    return dataclasses.replace(experiment, cells=tuple(cells))


# ---------------------------------------------------------------- the specs


@pytest.mark.parametrize("name", ["speculative", "entrance", "allocation", "profiling", "overhead",
                                  pytest.param("cifar10_trace", marks=needs_trace)])
def test_sim_spec_loads(name):
    experiment = load_experiment(SIM / f"{name}.yaml")
    assert len(experiment.cells) > 1 and len(experiment.spec.variants) >= 3
    assert [v.scheduler.kind for v in experiment.spec.variants[:2]] == ["asha", "random"]  # the baselines first


def test_study_specs_set_what_the_study_varies():
    entrance = load_experiment(SIM / "entrance.yaml")
    assert {v.name: v.scheduler.entrance for v in entrance.spec.variants if v.scheduler.kind == "hypersched"} == \
        {"hypersched": "deadline", "adaptive": "adaptive", "fixed-0.25": 0.25, "fixed-0.5": 0.5, "fixed-0.75": 0.75,
         "no-entrance": "none"}
    allocation = load_experiment(SIM / "allocation.yaml")
    for cell in allocation.cells:
        for v in cell.spec.variants:
            if v.scheduler.kind == "hypersched":  # the belief is the truth in every cell
                assert v.scheduler.scaling == cell.spec.workload.scaling
    for name, fractions in (("profiling", [0.01, 0.05, 0.10]), ("overhead", [0, 0.025, 0.05, 0.10, 0.15, 0.20])):
        cells = load_experiment(SIM / f"{name}.yaml").cells
        assert [c.spec.workload.startup / c.spec.deadline for c in cells] == pytest.approx(fractions)
        assert all(c.spec.workload.scaling.name == "sqrt" and c.spec.resources.atoms == 16 for c in cells)
    naive = {v.name: v.scheduler for v in load_experiment(SIM / "profiling.yaml").spec.variants}
    assert (naive["naive"].scaling.name, naive["naive"].overhead_aware) == ("linear", False)
    assert (naive["profiled"].scaling.name, naive["profiled"].overhead_aware) == ("sqrt", True)


# ---------------------------------------------------------------- scheduling quality (regression)


def test_hypersched_and_its_speculative_variant_beat_asha_at_short_deadlines_per_cell():
    experiment = _restrict(load_experiment(SIM / "speculative.yaml"),
                           lambda p: p["resources.atoms"] in (4, 8) and p["deadline"] in (15, 30),
                           {"asha", "hypersched", "hypersched-speculative"})
    assert len(experiment.cells) == 4
    frame = simulate_experiment(experiment, [0, 1, 2], event_log=False)
    assert (frame["best_score"] <= frame["oracle_score"]).all()
    means = frame.groupby(["resources.atoms", "deadline", "variant"])["best_score"].mean().unstack("variant")
    for cell, row in means.iterrows():
        assert row["hypersched"] >= row["asha"], (cell, row.to_dict())
        assert row["hypersched-speculative"] >= row["asha"], (cell, row.to_dict())


# ---------------------------------------------------------------- the regeneration tool


def _regenerate(out: Path, *args: str) -> None:
    assert _tool("regenerate_sim_results").main(["--seeds", "1", "--jobs", "1", "--quick", "--out", str(out),
                                                 *args]) == 0


def test_regenerate_runs_end_to_end_and_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _regenerate(first, "--only", "entrance")
    frame = pd.read_csv(first / "entrance.csv")
    assert len(frame) == 8 and set(frame["variant"]) >= {"asha", "random", "hypersched", "adaptive", "no-entrance"}
    png = (first / "entrance.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    readme = (first / "README.md").read_text()
    assert "## entrance: Entrance policy" in readme and "| atoms | deadline (s) | oracle | asha | random |" in readme
    assert "--seeds 1" in readme and "## Scale" in readme
    _regenerate(second, "--only", "entrance")
    for name in ("entrance.csv", "entrance.png", "README.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_regenerate_speculative_has_the_check_table(tmp_path):
    _regenerate(tmp_path, "--only", "speculative")
    readme = (tmp_path / "README.md").read_text()
    assert "hypersched ≥ asha" in readme and "hypersched-speculative ≥ hypersched" in readme
    assert "Summary (means over seeds): hypersched ≥ asha in 1 of 1 cells" in readme


def test_regenerate_skips_a_trace_spec_whose_file_is_absent(tmp_path, capsys):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "gone.yaml").write_text("scheduler: {kind: hypersched, r: 1, R: 4}\nresources: {atoms: 2}\n"
                                     "deadline: 10\nworkload: {kind: trace, path: missing.csv, step_time: 1}\n")
    with pytest.raises(SpecError):
        load_experiment(specs / "gone.yaml")
    _regenerate(tmp_path / "out", "--specs", str(specs))
    assert "skipping gone.yaml: its trace file is absent" in capsys.readouterr().out
    assert not (tmp_path / "out" / "gone.csv").exists() and (tmp_path / "out" / "README.md").exists()


@needs_trace
def test_regenerate_trace_replay_compares_with_the_peer(tmp_path):
    _regenerate(tmp_path, "--only", "cifar10_trace")
    frame = pd.read_csv(tmp_path / "cifar10_trace.csv")
    assert (frame["best_score"] <= frame["oracle_score"]).all()
    readme = (tmp_path / "README.md").read_text()
    assert "peer ASHA promotion" in readme and "| 0.713 | 0.737 | 0.759 |" in readme
    assert "Above all three peer figures (mean best_score): asha in" in readme and "Cell by cell:" in readme


# ---------------------------------------------------------------- the scale benchmark


def test_bench_starts_every_trial_it_asks_for():
    bench = _tool("bench_sim")
    for kind in ("asha", "hypersched"):
        result = bench.bench(kind, trials=60, atoms=16, repeat=1)
        assert result.started == 60 and result.events > 60 * 4 and result.us_per_event > 0
    runs = [bench.BenchResult("asha", 10, 4, 10, 100, 2.0), bench.BenchResult("hypersched", 10, 4, 10, 300, 5.0),
            bench.BenchResult("asha", 100, 4, 100, 900, 4.0)]
    assert bench.wall_ratios(runs) == [(10, 2.5)]  # (100 trials: no HyperSched run to compare)
    assert "hypersched / asha wall time at 10 trials = **2.50**" in bench.markdown(runs, "cmd")


# ---------------------------------------------------------------- performance fixes keep behaviour


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_running_quantile_equals_numpy_percentile(q):
    rng = np.random.default_rng(7)
    for values in (rng.normal(size=200), rng.integers(0, 4, size=200).astype(float),
                   np.round(rng.exponential(size=200), 2)):
        running = RunningQuantile(q)
        assert running.value() is None
        for i, v in enumerate(values):
            running.add(float(v))
            assert running.value() == pytest.approx(np.percentile(values[: i + 1], 100 * q), abs=1e-12)
