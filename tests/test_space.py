import numpy as np
import pytest

from hpcsched.space import Sampler, parse_space


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
