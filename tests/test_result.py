"""result.json's answer: the best configuration, as its most trained model."""

from __future__ import annotations

from hpcsched.core.records import Exited, Launched, Reported, RunStarted, Running, TrialCreated
from hpcsched.rundir.result import build_result
from hpcsched.rundir.paths import RunDir
from hpcsched.rundir.scores import checkpoint_name
from hpcsched.spec import parse_experiment
from hpcsched.core.state import RunState


def _run(tmp_path, scores: dict[str, list[float]], R: int = 4):
    spec = parse_experiment({"name": "r", "scheduler": {"kind": "asha", "r": 1, "R": R}, "deadline": 100,
                             "resources": {"atoms": 2}, "workload": {"kind": "synthetic"}}).spec
    run_dir = RunDir(tmp_path / "run")
    state = RunState("max")
    state.apply(RunStarted(0.0, "r", 100.0, 2, 0, "d", spec.variants[0].name, ("0", "1")))
    for i, (trial, curve) in enumerate(scores.items()):
        state.apply(TrialCreated(0.0, trial, i, {"i": i}))
        state.apply(Launched(0.0, trial, (str(i),), "start", 0))
        state.apply(Running(0.0, trial, 0.0))
        for step, score in enumerate(curve, start=1):
            name = checkpoint_name(step, ".pkl")
            path = run_dir.trial(trial).checkpoint(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
            state.apply(Reported(float(step), trial, step, score, name))
        state.apply(Exited(10.0, trial, "finished" if len(curve) >= R else "checkpointed", len(curve)))
    return build_result(spec, spec.variants[0].name, run_dir, state)


def test_a_best_trial_trained_to_R_is_returned_as_its_step_R_model_even_below_its_peak(tmp_path):
    result = _run(tmp_path, {"a": [0.5, 0.9, 0.88, 0.89], "b": [0.4, 0.85]})
    best = result["best"]
    assert best["trial"] == "a" and best["completed"]
    assert (best["step"], best["score"], best["peak_step"], best["peak_score"]) == (4, 0.89, 2, 0.9)
    assert best["checkpoint"].endswith(checkpoint_name(4, ".pkl"))
    assert result["best_completed"]["trial"] == "a" and result["best_completed"]["step"] == 4


def test_a_best_trial_not_trained_to_R_is_returned_at_its_best_report(tmp_path):
    result = _run(tmp_path, {"a": [0.5, 0.6, 0.7, 0.75], "b": [0.4, 0.95, 0.9]})
    best = result["best"]
    assert best["trial"] == "b" and not best["completed"]
    assert (best["step"], best["score"]) == (2, 0.95) == (best["peak_step"], best["peak_score"])
    assert result["best_completed"]["trial"] == "a" and result["best_completed"]["score"] == 0.75
