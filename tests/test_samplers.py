"""Samplers: Optuna's TPE through ask-and-tell, quasi-random points; reproducible and resumable."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcsched.core.errors import SpecError, UserError
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import Reported, TrialCreated
from hpcsched.samplers import make_sampler
from hpcsched.loop.simulate import simulate_run
from hpcsched.core.space import parse_space
from hpcsched.spec import parse_experiment


CURVE_SPACE = {"b0": {"loguniform": [0.001, 1.0]}, "b1": {"uniform": [0.0, 1.0]}, "b2": {"uniform": [0.0, 1.0]}}


def _spec(sampler, kind="asha", deadline=20, space=CURVE_SPACE):
    return parse_experiment({
        "name": "samplers", "metric": {"name": "score", "mode": "max"},
        "scheduler": {"kind": kind, "r": 5, "R": 500, "eta": 4}, "resources": {"atoms": 8},
        "deadline": deadline, "space": space, "sampler": sampler,
        "workload": {"kind": "synthetic", "step_time": 0.1}}).spec


def _simulate(spec, seed, tmp_path=None):
    log = tmp_path / f"events-{seed}.jsonl" if tmp_path is not None else None
    state, _ = simulate_run(spec, spec.variants[0], seed, event_log=log)
    return state, (read_journal(log) if log is not None else None)


def assert_proposals_rebuilt(spec, records, seed: int, cuts) -> int:
    """At each cut (the position of a ``trial_created`` record), a sampler fed the records before it (as a
    resumed controller feeds them) proposes exactly that trial's configuration; returns how many were checked."""
    checked = 0
    for cut in cuts:
        sampler = make_sampler(spec.sampler, spec.space, seed, spec.metric.mode)
        for record in records[:cut]:
            sampler.observe(record)
        assert sampler.config(records[cut].index) == {k: v for k, v in records[cut].config.items()
                                                      if k != "curve"}, cut
        checked += 1
    return checked


def _configs(state):
    return [{k: v for k, v in t.config.items() if k != "curve"}
            for t in sorted(state.trials.values(), key=lambda t: t.index)]


def test_tpe_run_is_reproducible_from_its_seed():
    spec = _spec({"name": "tpe", "startup_trials": 5})
    a, _ = _simulate(spec, 1)
    b, _ = _simulate(spec, 1)
    c, _ = _simulate(spec, 2)
    assert len(a.trials) > 20
    assert _configs(a) == _configs(b) and a.best_score == b.best_score
    assert _configs(a) != _configs(c)


def test_tpe_rebuilt_from_the_journal_proposes_what_the_uninterrupted_run_did(tmp_path):
    """Cut the journal before any trial's creation: a sampler fed the records before the cut
    (as a resumed controller feeds them) proposes exactly that trial's configuration."""
    spec = _spec({"name": "tpe", "startup_trials": 5})
    _, records = _simulate(spec, 3, tmp_path)
    created = [i for i, r in enumerate(records) if isinstance(r, TrialCreated)]
    assert len(created) > 20
    assert assert_proposals_rebuilt(spec, records, 3, created[5::4]) >= 5


def test_tpe_learns_from_rung_scores_where_random_does_not():
    """On curves that follow the config (b0 sets the slope), TPE's later proposals move to
    larger b0 than random draws; both runs see the same scheduler and seed."""
    def late_log_b0(sampler):
        values = []
        for seed in range(3):
            state, _ = _simulate(_spec(sampler, deadline=30), seed)
            values += [math.log10(c["b0"]) for c in _configs(state)[15:]]
        return float(np.median(values))

    assert late_log_b0({"name": "tpe", "startup_trials": 10}) > late_log_b0("random") + 0.5


def test_the_model_is_fitted_on_the_highest_step_enough_trials_reached(tmp_path):
    spec = _spec({"name": "tpe", "startup_trials": 5})
    _, records = _simulate(spec, 0, tmp_path)
    sampler = make_sampler(spec.sampler, spec.space, 0, "max")
    reached = {r.trial: 0 for r in records if isinstance(r, TrialCreated)}
    for record in records:
        sampler.observe(record)
        if isinstance(record, Reported):
            reached[record.trial] = max(reached[record.trial], record.step)
    budget = sampler.budget()
    assert budget is not None and budget > spec.scheduler.r  # trials were promoted past the first rung
    assert sum(step >= budget for step in reached.values()) >= 5
    assert sum(step > budget for step in reached.values()) < 5  # the highest such step
    told = sampler._told()
    assert len(told) == sum(step >= budget for step in reached.values())
    first_at_budget = {}
    for r in records:
        if isinstance(r, Reported) and r.step == budget:
            first_at_budget.setdefault(r.trial, r.score)
    assert sorted(t.value for t in told) == sorted(first_at_budget.values())
    assert all(t.state.name == "COMPLETE" and max(t.intermediate_values) >= budget for t in told)


def test_fit_from_keeps_the_model_off_steps_below_its_share_of_R(tmp_path):
    """The same journal: fitted at the highest step five trials reached, or, with fit_from, not before five
    reached that share of R (R = 500: no model at 0.9; the default's step where it is at least 0.05 x R)."""
    spec = _spec({"name": "tpe", "startup_trials": 5})
    _, records = _simulate(spec, 0, tmp_path)

    def budget(fit_from):
        sampler = make_sampler(_spec({"name": "tpe", "startup_trials": 5, "fit_from": fit_from}).sampler,
                               spec.space, 0, "max", R=spec.scheduler.R)
        for record in records:
            sampler.observe(record)
        return sampler.budget()

    default = budget(0.0)
    assert default is not None and default > spec.scheduler.r
    assert budget(0.9) is None and budget(default / 500) == default and budget((default + 1) / 500) is None
    unset = make_sampler(_spec({"name": "tpe", "startup_trials": 5, "fit_from": 0.9}).sampler, spec.space, 0, "max")
    for record in records:
        unset.observe(record)
    assert unset.budget() == default  # (no R given: no floor)


def test_a_third_of_the_proposals_stay_random():
    spec = _spec({"name": "tpe", "startup_trials": 5})
    state, _ = _simulate(spec, 0)
    random_sampler = make_sampler(_spec("random").sampler, spec.space, 0, "max")
    configs = _configs(state)
    same = sum(c == random_sampler.config(i) for i, c in enumerate(configs))
    assert 0.2 * len(configs) < same < 0.5 * len(configs)
    never = make_sampler(_spec({"name": "tpe", "random_fraction": 0}).sampler, spec.space, 0, "max")
    assert all(never.config(i) != random_sampler.config(i) for i in range(10))


def test_qmc_covers_each_bin_once_and_is_a_function_of_the_index():
    problems: list[str] = []
    space = parse_space({"u": {"uniform": [0.0, 1.0]}, "k": {"choice": ["a", "b", "c", "d"]}}, "space", problems)
    sampler = make_sampler(_spec("qmc").sampler, space, 4, "max")
    values = [sampler.config(i)["u"] for i in range(16)]
    assert sorted(int(v * 16) for v in values) == list(range(16))  # one point in each sixteenth
    assert [sampler.config(i)["k"] for i in range(4)].count("a") == 1
    assert sampler.config(7) == make_sampler(_spec("qmc").sampler, space, 4, "max").config(7)
    assert sampler.config(7) != make_sampler(_spec("qmc").sampler, space, 5, "max").config(7)


@pytest.mark.parametrize("sampler,space,expected", [
    ("bayes", CURVE_SPACE, "sampler.name: expected one of random, qmc, kde, gpei, tpe, gp, cmaes, nsgaii, nsgaiii or "
                           "optuna.<a class of optuna.samplers>, got 'bayes'"),
    ({"name": "random", "startup_trials": 3}, CURVE_SPACE, "sampler.startup_trials: only for the model-based samplers"),
    ({"name": "optuna.NoSuchSampler"}, CURVE_SPACE, "sampler.name: 'optuna.NoSuchSampler' is not a sampler of "
                                                    "optuna.samplers (BruteForceSampler, CmaEsSampler"),
    ({"name": "optuna.GridSampler"}, CURVE_SPACE, "sampler.name: 'optuna.GridSampler' cannot be made from its name "
                                                  "alone"),
    ({"name": "nsgaii", "objectives": {"loss": "low"}}, CURVE_SPACE,
     "sampler.objectives: expected a metric name and max or min, got 'loss': 'low'"),
    ({"name": "tpe", "random_fraction": 1.5}, CURVE_SPACE,
     "sampler.random_fraction: expected a number in [0, 1], got 1.5"),
    ({"name": "tpe", "startup_trials": -1}, CURVE_SPACE, "sampler.startup_trials: must be >= 0, got -1"),
    ({"name": "kde", "fit_from": 1.5}, CURVE_SPACE, "sampler.fit_from: expected a number in [0, 1], got 1.5"),
    ({"name": "qmc", "fit_from": 0.25}, CURVE_SPACE, "sampler.fit_from: only for the model-based samplers"),
    ({"name": "tpe", "seeds": 3}, CURVE_SPACE, "sampler.seeds: unknown key"),
    ("tpe", {"opt": {"grid": ["sgd", "adam"]}, "lr": {"uniform": [0, 1]}},
     "space.opt: a grid parameter cannot be proposed by sampler 'tpe'; use choice"),
])
def test_bad_sampler_sections_are_named(sampler, space, expected):
    with pytest.raises(SpecError) as info:
        _spec(sampler, space=space)
    assert any(expected in p for p in info.value.problems), info.value.problems


@pytest.mark.slow
def test_real_run_killed_and_resumed_proposes_what_its_journal_implies(tmp_path):
    """A local run with TPE, SIGKILLed and resumed: every configuration it made, before and after
    the kill, is the one a sampler rebuilt from the journal up to that trial proposes."""
    import os
    import signal

    from tests.runs import hpcsched, records, start, wait_for, write_spec

    spec_path = write_spec(tmp_path, deadline="24s", space={"quality": {"uniform": [0.1, 0.9]}, "step_time": 0.1},
                           sampler={"name": "tpe", "startup_trials": 2})
    run = tmp_path / "run"
    controller = start("run", str(spec_path), "--run-dir", str(run), "--quiet")
    assert wait_for(lambda: (run / "events.jsonl").exists()
                    and sum(isinstance(r, TrialCreated) for r in records(run)) >= 6, timeout=60)
    os.kill(controller.pid, signal.SIGKILL)
    controller.wait()
    killed_at = len(records(run))
    proc = hpcsched("run", str(spec_path), "--run-dir", str(run), "--resume", "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    journal = records(run)
    created = [i for i, r in enumerate(journal) if isinstance(r, TrialCreated)]
    assert any(i > killed_at for i in created), "no trial was made after the resume"
    from hpcsched.spec import load_spec
    spec = load_spec(spec_path)
    for cut in created:
        sampler = make_sampler(spec.sampler, spec.space, spec.seed, "max")
        for record in journal[:cut]:
            sampler.observe(record)
        assert sampler.config(journal[cut].index) == journal[cut].config, (cut, killed_at)


@pytest.mark.torch
def test_gp_run_is_reproducible_and_leaves_the_random_draws():
    spec = _spec({"name": "gp", "startup_trials": 4}, deadline=10)
    a, _ = _simulate(spec, 0)
    b, _ = _simulate(spec, 0)
    random_sampler = make_sampler(_spec("random").sampler, spec.space, 0, "max")
    assert _configs(a) == _configs(b) and len(a.trials) > 8
    assert any(c != random_sampler.config(i) for i, c in enumerate(_configs(a)))


def test_tpe_over_a_conditional_space_is_rebuilt_from_the_journal(tmp_path):
    space = {"shape": {"choice": ["steep", "flat"]}, "b0": {"loguniform": [0.001, 1.0]},
             "b1": {"uniform": [0.0, 1.0], "when": {"shape": "steep"}}, "b2": {"uniform": [0.0, 1.0], "step": 0.25}}
    spec = _spec({"name": "tpe", "startup_trials": 4}, space=space)
    state, records = _simulate(spec, 5, tmp_path)
    configs = _configs(state)
    assert all(("b1" in c) == (c["shape"] == "steep") for c in configs)
    assert {c["b2"] for c in configs} <= {0.0, 0.25, 0.5, 0.75}
    created = [i for i, r in enumerate(records) if isinstance(r, TrialCreated)]
    assert_proposals_rebuilt(spec, records, 5, created[8::6])


def test_a_misspelt_sampler_name_is_the_only_problem_named():
    with pytest.raises(SpecError) as info:
        _spec({"name": "cmae", "startup_trials": 5})
    assert len(info.value.problems) == 1 and "sampler.name:" in info.value.problems[0]


@pytest.mark.parametrize("name", ["cmaes", "nsgaii", "optuna.QMCSampler"])
def test_optuna_samplers_by_name_run_and_are_reproducible(name):
    spec = _spec({"name": name, "startup_trials": 4}, deadline=8)
    a, _ = _simulate(spec, 3)
    b, _ = _simulate(spec, 3)
    assert len(a.trials) > 8 and _configs(a) == _configs(b)
    random_sampler = make_sampler(_spec("random").sampler, spec.space, 3, "max")
    assert any(c != random_sampler.config(i) for i, c in enumerate(_configs(a)))


def test_nsga2_learns_from_two_metrics_reported_together():
    from hpcsched.core.records import TrialCreated

    spec = _spec({"name": "nsgaii", "startup_trials": 2, "random_fraction": 0, "objectives": {"size": "min"}},
                 space={"x": {"uniform": [0.0, 1.0]}})
    sampler = make_sampler(spec.sampler, spec.space, 0, "max")
    for i in range(6):
        config = sampler.config(i)
        sampler.observe(TrialCreated(0.0, f"t{i}", i, config))
        sampler.observe(Reported(1.0, f"t{i}", 5, config["x"], metrics={"size": 1 - config["x"]}))
    told = sampler._told()
    assert len(told) == 6 and all(len(t.values) == 2 for t in told)
    assert all(t.values[1] == pytest.approx(1 - t.params["x"]) for t in told)
    sampler.observe(TrialCreated(0.0, "t6", 6, sampler.config(6)))
    sampler.observe(Reported(1.0, "t6", 5, 0.5))  # no size: left out, the others still told
    assert len(sampler._told()) == 6 and 0.0 <= sampler.config(7)["x"] <= 1.0


def test_a_users_own_optuna_sampler_object_proposes_through_the_python_api(tmp_path):
    import optuna

    import hpcsched
    from tests.runs import TOY

    class Recording(optuna.samplers.RandomSampler):
        asked = 0

        def sample_independent(self, study, trial, name, distribution):
            Recording.asked += 1
            return super().sample_independent(study, trial, name, distribution)

    raw = {"name": "own", "metric": {"name": "acc", "mode": "max"}, "space": {"quality": {"uniform": [0.2, 0.9]},
           "step_time": 0.05}, "scheduler": {"kind": "asha", "r": 1, "R": 4, "eta": 2},
           "resources": {"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1}, "deadline": "8s", "max_trials": 3,
           "sampler": {"name": "tpe", "random_fraction": 0}, "controller": {"poll_interval": 0.1, "stop_margin": 1}}
    found = hpcsched.run(f"{TOY}:toy", raw, run_dir=tmp_path / "run", quiet=True, sampler=Recording(seed=1))
    assert found.best is not None and Recording.asked >= 3
    with pytest.raises(UserError, match="expected an optuna.samplers.BaseSampler object, got str"):
        hpcsched.run(f"{TOY}:toy", raw, run_dir=tmp_path / "other", sampler="tpe")
    with pytest.raises(UserError, match="backend='local' or 'slurm'"):
        hpcsched.run(spec=dict(raw, workload={"kind": "synthetic", "step_time": 0.1}), backend="sim",
                     sampler=Recording())
