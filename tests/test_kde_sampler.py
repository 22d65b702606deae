"""The numpy model samplers, kde (BOHB's model) and gpei (a Gaussian process with expected improvement):
what they pick on hand-built evidence, that they learn in a run, that a journal rebuilds them, and that
they choose among a replayed benchmark's recorded configurations."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from hpcsched.core.errors import SpecError
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import Reported, TrialCreated
from hpcsched.samplers.gp_ei import GpEiSampler
from hpcsched.samplers.kde import KdeSampler
from hpcsched.loop.simulate import simulate_run
from hpcsched.schedulers import make_scheduler
from hpcsched.core.space import parse_space
from hpcsched.spec import parse_experiment
from hpcsched.workloads.configs import load_configs
from tests.test_samplers import assert_proposals_rebuilt

SPACE = {"lr": {"loguniform": [1e-4, 1.0]}, "opt": {"choice": ["sgd", "adam"]}}


MODELS = {"kde": KdeSampler, "gpei": GpEiSampler}


def _sampler(random_fraction: float = 0.0, mode: str = "max", name: str = "kde") -> KdeSampler:
    return MODELS[name](parse_space(SPACE, "space", []), seed=1, mode=mode, startup_trials=4,
                        random_fraction=random_fraction)


def _feed(sampler: KdeSampler, trials: list[tuple[float, str, float]]) -> None:
    """Trials (lr, opt, score), each reporting its score at step 3."""
    for i, (lr, opt, score) in enumerate(trials):
        sampler.observe(TrialCreated(0.0, f"t{i}", i, {"lr": lr, "opt": opt}))
        sampler.observe(Reported(1.0, f"t{i}", 3, score))


# good trials have a small learning rate and adam
EVIDENCE = [(10 ** -(3.5 - 0.1 * i), "adam", 0.9 - 0.01 * i) for i in range(6)] + \
           [(10 ** -(0.1 * i), "sgd", 0.3 + 0.01 * i) for i in range(10)]


@pytest.mark.parametrize("name", MODELS)
def test_it_chooses_the_candidate_where_the_good_trials_are(name):
    sampler = _sampler(name=name)
    _feed(sampler, EVIDENCE)
    candidates = [{"lr": 0.5, "opt": "sgd"}, {"lr": 3e-4, "opt": "sgd"}, {"lr": 3e-4, "opt": "adam"},
                  {"lr": 0.5, "opt": "adam"}]
    assert sampler.choose(20, candidates) == 2
    proposals = [sampler.config(i) for i in range(20, 40)]
    assert np.median([math.log10(p["lr"]) for p in proposals]) < -2.5
    assert sum(p["opt"] == "adam" for p in proposals) >= 15


@pytest.mark.parametrize("name", MODELS)
def test_minimised_scores_turn_the_preference_around(name):
    sampler = _sampler(mode="min", name=name)
    _feed(sampler, EVIDENCE)
    assert sampler.choose(20, [{"lr": 3e-4, "opt": "adam"}, {"lr": 0.5, "opt": "sgd"}]) == 1


def test_before_enough_trials_reached_a_step_it_draws_at_random_reproducibly():
    a, b = _sampler(), _sampler()
    _feed(a, EVIDENCE[:3])
    _feed(b, EVIDENCE[:3])
    picks = [a.choose(i, [{"lr": 0.1, "opt": "sgd"}] * 10) for i in range(30)]
    assert len(set(picks)) > 3 and picks == [b.choose(i, [{"lr": 0.1, "opt": "sgd"}] * 10) for i in range(30)]
    assert a.config(5) == b.config(5)


def test_below_its_lowest_step_it_picks_at_random_and_from_there_by_the_model():
    """The same scores at step 3: with a lowest step of 5 it picks as with no evidence at all; the same
    trials reporting at step 5 too give the model back."""
    space = parse_space(SPACE, "space", [])
    late = KdeSampler(space, seed=1, mode="max", startup_trials=4, random_fraction=0.0, lowest_step=5)
    blank = KdeSampler(space, seed=1, mode="max", startup_trials=4, random_fraction=0.0, lowest_step=5)
    _feed(late, EVIDENCE)
    candidates = [{"lr": 0.5, "opt": "sgd"}, {"lr": 3e-4, "opt": "sgd"}, {"lr": 3e-4, "opt": "adam"},
                  {"lr": 0.5, "opt": "adam"}]
    picks = [late.choose(i, candidates) for i in range(20, 40)]
    assert picks == [blank.choose(i, candidates) for i in range(20, 40)] and len(set(picks)) > 1
    for i, (_, _, score) in enumerate(EVIDENCE):
        late.observe(Reported(2.0, f"t{i}", 5, score))
    assert [late.choose(i, candidates) for i in range(20, 30)] == [2] * 10


@pytest.mark.parametrize("name", MODELS)
def test_a_random_fraction_of_its_picks_stay_random_and_it_says_which_were_the_model_s(name):
    sampler = _sampler(random_fraction=0.5, name=name)
    assert not sampler.from_model(0) and sampler.config(0) and not sampler.from_model(0)  # no model yet
    _feed(sampler, EVIDENCE)
    candidates = [{"lr": 0.5, "opt": "sgd"}] * 9 + [{"lr": 3e-4, "opt": "adam"}]
    picks = [sampler.choose(i, candidates) for i in range(200)]
    modelled = [sampler.from_model(i) for i in range(200)]
    assert 0.3 < np.mean([p != 9 for p in picks]) < 0.6 and 0.4 < np.mean(modelled) < 0.6
    assert all(pick == 9 for pick, by_model in zip(picks, modelled) if by_model)  # the model's: the good one
    always = _sampler(name=name)  # (no random fraction)
    _feed(always, EVIDENCE)
    assert always.config(300) and always.from_model(300) and not always.from_model(301)


def _synthetic_spec(sampler, deadline: float = 30):
    return parse_experiment({
        "name": "kde", "metric": {"name": "score", "mode": "max"},
        "scheduler": {"kind": "asha", "r": 5, "R": 500, "eta": 4}, "resources": {"atoms": 8}, "deadline": deadline,
        "space": {"b0": {"loguniform": [0.001, 1.0]}, "b1": {"uniform": [0.0, 1.0]}, "b2": {"uniform": [0.0, 1.0]}},
        "sampler": sampler, "workload": {"kind": "synthetic", "step_time": 0.1}}).spec


@pytest.mark.parametrize("name", MODELS)
def test_it_learns_in_a_run_and_a_journal_rebuilds_what_it_proposed(tmp_path, name):
    """On curves whose slope b0 sets, its later proposals move to larger b0 than random draws; a sampler fed
    the journal up to any trial's creation proposes exactly that trial's configuration."""
    def late_log_b0(sampler, seed, log=None):
        spec = _synthetic_spec(sampler)
        state, _ = simulate_run(spec, spec.variants[0], seed, event_log=log)
        configs = [t.config for t in sorted(state.trials.values(), key=lambda t: t.index)]
        return [math.log10(c["b0"]) for c in configs[15:]]

    kde = sum((late_log_b0({"name": name, "startup_trials": 10}, seed) for seed in range(3)), [])
    random = sum((late_log_b0("random", seed) for seed in range(3)), [])
    assert np.median(kde) > np.median(random) + 0.5
    log = tmp_path / "events.jsonl"
    late_log_b0({"name": name, "startup_trials": 10}, 7, log)
    records = read_journal(log)
    spec = _synthetic_spec({"name": name, "startup_trials": 10})
    created = [i for i, r in enumerate(records) if isinstance(r, TrialCreated)]
    assert assert_proposals_rebuilt(spec, records, 7, created[12::5]) >= 3


@pytest.mark.parametrize("name", MODELS)
def test_in_a_replayed_benchmark_it_chooses_among_the_unused_recorded_configurations(tmp_path, name):
    """40 recorded configurations whose level falls with the learning rate (the optimizer does not
    matter): every trial replays one of them exactly (no nearest-point mapping), none twice, and over
    four seeds kde's picks once its model is fitted have lower rates than random sampling's."""
    rng = np.random.default_rng(0)
    lrs = np.exp(rng.uniform(np.log(1e-4), 0.0, 40))
    (tmp_path / "configs.csv").write_text("trial,lr,opt\n" + "".join(
        f"c{i},{lr},{('sgd', 'adam')[i % 2]}\n" for i, lr in enumerate(lrs)))
    rows = ["trial,step,score"]
    for i, lr in enumerate(lrs):
        level = 0.9 - 0.15 * (math.log10(lr) + 4)
        rows += [f"c{i},{s},{level * (1 - 0.6 ** s):.6f}" for s in range(1, 9)]
    (tmp_path / "curves.csv").write_text("\n".join(rows) + "\n")
    table = load_configs(tmp_path / "configs.csv").rows

    def picked(sampler, seed):
        spec = parse_experiment({
            "name": "pool", "metric": {"name": "score", "mode": "max"},
            "scheduler": {"kind": "asha", "r": 1, "R": 8, "eta": 2}, "resources": {"atoms": 2}, "deadline": 20,
            "sampler": sampler, "workload": {"kind": "trace", "path": "curves.csv", "configs": "configs.csv",
                                             "step_time": 1}}, source=tmp_path / "spec.yaml").spec
        state, _ = simulate_run(spec, spec.variants[0], seed)
        configs = [t.config for t in sorted(state.trials.values(), key=lambda t: t.index)]
        assert len(configs) >= 10 and len({c["curve"] for c in configs}) == len(configs)
        assert all({k: v for k, v in c.items() if k != "curve"} == table[c["curve"]] for c in configs)
        return [math.log10(c["lr"]) for c in configs[4:10]]

    kde = sum((picked({"name": name, "startup_trials": 4}, seed) for seed in range(4)), [])
    random = sum((picked("random", seed) for seed in range(4)), [])
    assert np.median(kde) < np.median(random) - 0.5


@pytest.mark.parametrize("kind", ["asha", "hypersched"])
def test_the_journal_says_which_trials_the_model_proposed_and_the_scheduler_learns_it(tmp_path, kind):
    """In a run the first trials are random draws (no model yet), later ones mostly the model's; each
    trial_created record says which, and a scheduler shown the journal holds the model's proposals."""
    spec = _synthetic_spec({"name": "gpei", "startup_trials": 10})
    spec = replace(spec, variants=(replace(spec.variants[0], scheduler=replace(spec.variants[0].scheduler,
                                                                                kind=kind)),))
    log = tmp_path / "events.jsonl"
    simulate_run(spec, spec.variants[0], 3, event_log=log)
    created = [r for r in read_journal(log) if isinstance(r, TrialCreated)]
    assert not any(r.from_model for r in created[:10]) and sum(r.from_model for r in created[10:]) > 5
    scheduler = make_scheduler(spec.variants[0].scheduler, "max")
    for record in created:
        scheduler.observe(record, None)
    assert scheduler.bracket.from_model == {r.trial for r in created if r.from_model}  # type: ignore[attr-defined]


@pytest.mark.parametrize("sampler, problem", [
    ({"name": "kde", "objectives": {"loss": "min"}}, "sampler.objectives: only for the model-based samplers (tpe,"),
    ({"name": "kde", "random_fraction": 2}, "sampler.random_fraction: expected a number in [0, 1], got 2"),
])
def test_kde_settings_are_checked(sampler, problem):
    with pytest.raises(SpecError) as info:
        _synthetic_spec(sampler)
    assert any(problem in p for p in info.value.problems), info.value.problems


def test_kde_takes_the_model_settings():
    assert _synthetic_spec({"name": "kde", "startup_trials": 3, "random_fraction": 0.2}).sampler.random_fraction == 0.2


@pytest.mark.parametrize("name", MODELS)
def test_kde_refuses_grid_parameters(name):
    with pytest.raises(SpecError, match=f"a grid parameter cannot be proposed by sampler '{name}'"):
        parse_experiment({"name": "x", "scheduler": {"kind": "asha", "r": 1, "R": 6}, "deadline": 10,
                          "space": {"opt": {"grid": ["a", "b"]}}, "sampler": name,
                          "workload": {"kind": "synthetic"}})

