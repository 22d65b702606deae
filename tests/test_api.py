"""hpcsched.run: the Python entry point, from a callable, on the local backend and the simulator."""

from __future__ import annotations

import json

import pytest

import hpcsched
from hpcsched.core.errors import SpecError, UserError
from tests.runs import hpcsched as hpcsched_cli
from tests.trainables.toy import toy

TOY_SPEC = {
    "name": "api-toy",
    "metric": {"name": "acc", "mode": "max"},
    "space": {"quality": {"grid": [0.9, 0.5, 0.2]}, "step_time": 0.1},
    "scheduler": {"kind": "hypersched", "r": 2, "R": 8, "eta": 2},
    "resources": {"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1},
    "deadline": "12s",
    "controller": {"poll_interval": 0.1, "stop_margin": 2, "stop_grace": 10},
}

SIM_SPEC = {
    "name": "api-sim",
    "metric": {"name": "score", "mode": "max"},
    "scheduler": {"kind": "hypersched", "r": 5, "R": 100, "eta": 4},
    "resources": {"atoms": 4},
    "deadline": 20,
    "workload": {"kind": "synthetic", "step_time": 0.1, "startup": 0.0, "scaling": "linear"},
    "variants": [{"name": "asha", "scheduler": {"kind": "asha"}}, {"name": "hypersched"}],
}


@pytest.mark.slow
def test_a_local_search_from_a_callable_returns_the_best_and_its_frames(tmp_path):
    run_dir = tmp_path / "run"
    found = hpcsched.run(toy, TOY_SPEC, run_dir=run_dir, quiet=True)
    assert found.run_dir == run_dir and (run_dir / "result.json").is_file()
    assert found.best is not None and found.best["config"]["quality"] == 0.9  # the toy's best configuration
    assert found.result["reason"] in ("deadline", "nothing left to run")
    run = found.analysis()
    assert len(run.trials) == found.result["trials_started"] >= 3
    assert run.scores["score"].max() == pytest.approx(found.best["score"])
    # every metric the trials reported beside the score: a column (the toy's own `atoms` is renamed)
    scores = run.scores
    assert (scores["steps_done"] == scores["step"]).all() and scores["pid"].gt(0).all()
    assert (scores["metric.atoms"] == scores["atoms"]).all()
    status = json.loads(hpcsched_cli("status", str(run_dir), "--json").stdout)
    reported = [t for t in status["trials"] if t["step"] > 0]
    assert reported and all(t["last_metrics"]["steps_done"] == t["step"] for t in reported)
    from hpcsched.analysis.report import build_report

    build_report(run_dir)
    summary = (run_dir / "report" / "summary.md").read_text()
    assert f"| steps_done | {found.best['step']} |" in summary  # the best report's own metrics


def test_the_simulator_backend_returns_a_reproducible_summary(tmp_path):
    first = hpcsched.run(spec=SIM_SPEC, backend="sim", seeds=2, out=tmp_path / "sim")
    again = hpcsched.run(spec=SIM_SPEC, backend="sim", seeds=2)
    assert first.best is None and first.run_dir is None
    assert sorted(first.summary["variant"]) == ["asha", "asha", "hypersched", "hypersched"]
    assert first.summary["best_score"].tolist() == again.summary["best_score"].tolist()
    assert (tmp_path / "sim" / "summary.csv").is_file()
    with pytest.raises(UserError, match="no run directory"):
        first.analysis()


def test_bad_input_is_refused_before_anything_runs(tmp_path):
    run_dir = tmp_path / "never"

    def nested(config, ctx):  # not importable by another process
        pass

    for train, words in [(lambda config, ctx: None, "top-level"), (nested, "top-level"), (42, "expected a function")]:
        with pytest.raises(UserError, match=words):
            hpcsched.run(train, TOY_SPEC, run_dir=run_dir)
    with pytest.raises(UserError, match="backend"):
        hpcsched.run(toy, TOY_SPEC, backend="cloud", run_dir=run_dir)
    with pytest.raises(SpecError, match="scheduler.eta"):
        hpcsched.run(toy, {**TOY_SPEC, "scheduler": {"kind": "hypersched", "eta": 0}}, run_dir=run_dir)
    with pytest.raises(UserError, match="seeds"):
        hpcsched.run(spec=SIM_SPEC, backend="sim", seeds=0)
    assert not run_dir.exists()


def test_a_function_is_passed_on_by_its_file():
    reference = hpcsched.api.trainable_reference(toy)
    assert reference.endswith("tests/trainables/toy.py:toy")
    assert hpcsched.api.trainable_reference("pkg.mod:train") == "pkg.mod:train"
