import numpy as np
import pytest

from hpcsched.core.space import Sampler, parse_space


def _space(raw):
    problems: list[str] = []
    space = parse_space(raw, "space", problems)
    return space, problems


def test_paper_cifar_grid_has_144_points_all_distinct():
    space, problems = _space({
        "lr": {"grid": [1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1]},
        "weight_decay": {"grid": [1e-4, 5e-4, 1e-3, 5e-3]},
        "momentum": {"grid": [0.9, 0.95, 0.99, 0.997]},
    })
    assert problems == []
    assert space.capacity == 144
    sampler = Sampler(space, seed=3)
    configs = [tuple(sorted(sampler.config(i).items())) for i in range(144)]
    assert len(set(configs)) == 144
    with pytest.raises(IndexError):
        sampler.config(144)


def test_random_parameters_within_bounds_and_reproducible():
    space, problems = _space({
        "lr": {"loguniform": [1e-4, 1e-1]}, "drop": {"uniform": [0.0, 0.5]},
        "width": {"randint": [16, 64]}, "act": {"choice": ["relu", "tanh"]}, "epochs": 3,
    })
    assert problems == [] and space.capacity is None
    a, b = Sampler(space, 7), Sampler(space, 7)
    for i in range(200):
        c = a.config(i)
        assert c == b.config(i)
        assert 1e-4 <= c["lr"] < 1e-1 and 0 <= c["drop"] < 0.5
        assert 16 <= c["width"] < 64 and isinstance(c["width"], int)
        assert c["act"] in ("relu", "tanh") and c["epochs"] == 3
    lrs = np.log10([a.config(i)["lr"] for i in range(400)])
    assert lrs.min() < -3.5 and lrs.max() > -1.5  # log-uniform covers the decades
    assert Sampler(space, 8).config(0) != a.config(0)


def test_grid_crossed_with_random_cycles_the_grid():
    space, _ = _space({"opt": {"grid": ["sgd", "adam"]}, "lr": {"uniform": [0, 1]}})
    sampler = Sampler(space, 0)
    first = {sampler.config(i)["opt"] for i in range(2)}
    assert first == {"sgd", "adam"}
    assert sampler.config(0)["opt"] == sampler.config(2)["opt"]
    assert sampler.config(0)["lr"] != sampler.config(2)["lr"]


@pytest.mark.parametrize("raw,expected", [
    ({}, "space: the search space is empty"),
    ({"lr": {"choice": []}}, "space.lr.choice: expected a non-empty list"),
    ({"lr": {"uniform": [1, 0]}}, "space.lr.uniform: low must be below high, got [1, 0]"),
    ({"lr": {"loguniform": [0, 1]}}, "space.lr.loguniform: low must be > 0"),
    ({"lr": {"randint": [0.5, 3]}}, "space.lr.randint: expected two integers"),
    ({"lr": {"gaussian": [0, 1]}}, "space.lr: unknown parameter kind 'gaussian'"),
    ([1, 2], "space: expected a mapping"),
])
def test_bad_spaces_name_field_and_value(raw, expected):
    space, problems = _space(raw)
    assert space is None
    assert any(expected in p for p in problems), problems


def test_log_integers_steps_and_conditions():
    space, problems = _space({
        "batch": {"logint": [16, 1024]}, "width": {"randint": [8, 64], "step": 8},
        "drop": {"uniform": [0.0, 0.5], "step": 0.1},
        "optimizer": {"choice": ["sgd", "adam"]},
        "momentum": {"uniform": [0.8, 0.99], "when": {"optimizer": "sgd"}},
        "nesterov": {"choice": [True, False], "when": {"optimizer": ["sgd"]}},
    })
    assert problems == [] and space.conditional
    sampler = Sampler(space, 1)
    configs = [sampler.config(i) for i in range(400)]
    assert all(isinstance(c["batch"], int) and 16 <= c["batch"] < 1024 for c in configs)
    batches = np.array([c["batch"] for c in configs])
    assert np.median(batches) < 200  # log-uniform: as many in 16..128 as in 128..1024
    assert {c["width"] for c in configs} == {8, 16, 24, 32, 40, 48, 56}
    assert {round(c["drop"], 6) for c in configs} == {0.0, 0.1, 0.2, 0.3, 0.4}
    for c in configs:
        assert ("momentum" in c) == ("nesterov" in c) == (c["optimizer"] == "sgd")
    assert 100 < sum("momentum" in c for c in configs) < 300


@pytest.mark.parametrize("raw,expected", [
    ({"w": {"randint": [1, 10], "step": 0.5}}, "space.w.step: expected an integer above 0"),
    ({"w": {"uniform": [0, 1], "step": 2}}, "space.w.step: expected a number above 0 and below high - low (1)"),
    ({"w": {"choice": [1, 2], "step": 1}}, "space.w.step: only for a range"),
    ({"w": {"logint": [0, 8]}}, "space.w.logint: low must be > 0"),
    ({"m": {"uniform": [0, 1], "when": {"opt": "sgd"}}}, "space.m.when.opt: not a parameter defined before 'm'"),
    ({"opt": {"choice": ["sgd"]}, "m": {"uniform": [0, 1], "when": {"opt": "adam"}}},
     "space.m.when.opt: 'adam' is not one of ['sgd']"),
    ({"lr": {"uniform": [0, 1]}, "m": {"uniform": [0, 1], "when": {"lr": 0.5}}},
     "space.m.when.lr: conditions name a choice, grid or constant parameter"),
    ({"opt": {"choice": ["a"]}, "g": {"grid": [1, 2], "when": {"opt": "a"}}}, "space.g.when: a grid parameter"),
    ({"w": {"uniform": [0, 1], "randint": [0, 2]}}, "space.w: expected one of"),
])
def test_bad_modifiers_are_named(raw, expected):
    _, problems = _space(raw)
    assert any(expected in p for p in problems), problems
