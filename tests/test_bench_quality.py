"""tools/bench_quality.py on the shared real curves (skipped when they are absent)."""

from __future__ import annotations

import pytest

from hpcsched.simulate import simulate_experiment
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
