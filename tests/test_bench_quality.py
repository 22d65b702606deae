"""tools/bench_quality.py on the shared real curves (skipped when they are absent)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hpcsched.simulate import simulate_experiment, simulate_run
from hpcsched.spec import parse_experiment
from tests.test_sim_studies import _tool

bench = _tool("bench_quality")
needs_curves = pytest.mark.skipif(not (bench.CURVES / "cifar10-resnets.csv").exists(),
                                  reason="the shared curves are absent")


@needs_curves
def test_bench_writes_every_variant_with_regrets_and_ratios(tmp_path):
    out = tmp_path / "quality.md"
    assert bench.main(["--seeds", "2", "--jobs", "1", "--only", "lstm-ptb", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| lstm-ptb | 900 |" in text and "| lstm-ptb | 3600 |" in text
    for column in ("ASHA", "random", "one-epoch", "HyperSched", "regret HyperSched", "ratio", "over ASHA",
                   "over random"):
        assert column in text
    assert "| lstm-ptb | 900 | " in text.split("paired by seed")[1]  # the paired gains, per cell
    # 900 and 1800 s are picked blind (no trial that reaches the furthest step can be chosen on evidence)
    assert "| lstm-ptb | 900 † |" in text and "| lstm-ptb | 1800 † |" in text
    assert "| lstm-ptb | 3600 † |" not in text and "2 of 3 cells." in text
    # what the rungs know: where each rung's top quarter ends by R (epoch 2 of lstm-ptb: no better than chance)
    (row,) = [line for line in text.splitlines() if line.startswith("| lstm-ptb.csv | 2 |")]
    assert 0.4 < float(row.strip("| ").split(" | ")[-1]) < 0.6


@needs_curves
def test_fidelity_limited_run_trains_its_first_trials_to_the_deadline_like_random_search():
    # 900 s at 30 s per step and no scaling: no trial can reach R = 50, so exploring would only lower
    # the fidelity the leaders reach. HyperSched closes at its first measured step and pauses nothing.
    setting = next(s for s in bench.SETTINGS if s.name == "cifar10-resnets")
    raw = bench.experiment_raw(setting, bench.CURVES)
    raw.pop("matrix")
    raw["variants"] = [{"name": "random", "scheduler": {"kind": "random"}}, {"name": "hypersched"}]
    frame = simulate_experiment(parse_experiment(raw), seeds=[0, 1, 2], event_log=False)
    by = frame.set_index(["variant", "seed"])
    for seed in (0, 1, 2):
        ours, theirs = by.loc[("hypersched", seed)], by.loc[("random", seed)]
        assert ours["best_score"] == theirs["best_score"]
        assert ours["trials_started"] == 8 and ours["pauses"] == 0
        assert ours["entrance_closed_at"] <= 30.0


@needs_curves
def test_trust_learned_on_real_curves_separates_informative_from_uninformative_rungs(monkeypatch):
    # MetaQNN's epoch-1 ranking predicts the end (rank correlation 0.74), the ResNets' epoch-2 one
    # does not (0.06): the trust the runs learn on their own must order them the same way (on
    # average over seeds: one run sees a few dozen top-of-rung pairs, and one seed may not).
    from hpcsched.controller import Controller

    seen = []
    original = Controller.run

    def run(self):
        seen.append(self.scheduler)
        return original(self)

    monkeypatch.setattr(Controller, "run", run)
    trusts = {}
    for name in ("cifar10-metaqnn-peer", "cifar10-resnets"):
        setting = next(s for s in bench.SETTINGS if s.name == name)
        raw = bench.experiment_raw(setting, bench.CURVES)
        raw.pop("matrix")
        raw["deadline"] = 3600
        raw["variants"] = [{"name": "hypersched"}]
        seen.clear()
        simulate_experiment(parse_experiment(raw), seeds=[0, 1, 2, 3], jobs=1, event_log=False)
        assert len(seen) == 4
        trusts[name] = sum(scheduler.trust.trust(0) for scheduler in seen) / len(seen)
    assert trusts["cifar10-metaqnn-peer"] > trusts["cifar10-resnets"], trusts


def test_picked_blind_when_the_furthest_step_needs_the_whole_run_without_scaling():
    step = bench.STEP_TIME
    assert bench.picked_blind(10, "none", 0.0, 8 * step)  # no trial reaches R: the furthest step needs it all
    assert bench.picked_blind(10, "none", 0.0, 10 * step)  # R exactly fits
    assert bench.picked_blind(10, "none", 0.0, 11 * step - 1)  # less than a step to spare
    assert not bench.picked_blind(10, "none", 0.0, 11 * step)  # one step's report can inform the pick
    assert bench.picked_blind(10, "none", 10.0, 10 * step + 10.0)  # after a startup
    assert not bench.picked_blind(10, "none", 10.0, 11 * step + 10.0)
    assert not bench.picked_blind(10, "sqrt", 0.0, 8 * step)  # more atoms let a later trial catch up


def test_in_a_blind_cell_every_trial_at_the_furthest_step_ran_from_the_start_without_a_pause(tmp_path):
    # what picked_blind claims, checked in the simulator on curves made here: 8 steps fit, R = 10,
    # no scaling; whatever the scheduler, the trials that reach step 8 were started at once, never paused
    # (ASHA, pausing at its rungs, may get none there)
    rng = np.random.default_rng(0)
    rows = [(f"c{i}", step, float(score)) for i in range(40)
            for step, score in enumerate(np.cumsum(rng.uniform(0.0, 0.1, size=12)), start=1)]
    pd.DataFrame(rows, columns=["trial", "step", "score"]).to_csv(tmp_path / "toy.csv", index=False)
    setting = bench.Setting("toy", "toy.csv", "max", 10, 1, "none", 0.0, "")
    deadline = 8 * bench.STEP_TIME
    assert bench.picked_blind(setting.R, setting.scaling, setting.startup, deadline)
    raw = bench.experiment_raw(setting, tmp_path)
    raw.pop("matrix")
    raw["deadline"] = deadline
    raw["variants"] = [v for v in raw["variants"] if v["name"] in ("asha", "hypersched", "random")]
    spec = parse_experiment(raw).cells[0].spec
    reached = 0
    for variant in spec.variants:
        for seed in (0, 1):
            state, _ = simulate_run(spec, variant, seed)
            assert max(trial.step for trial in state.trials.values()) <= 8
            for trial in state.trials.values():
                if trial.step == 8:
                    reached += 1
                    assert trial.created_at == 0.0 and trial.launches == 1, (variant.name, trial)
    assert reached >= 16  # random search alone puts 8 trials there per seed
