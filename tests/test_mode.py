import json

import numpy as np
import pytest

from hpcsched.core.mode import MODES, Mode


def test_better_is_strict_and_anything_beats_none():
    assert Mode.MAX.better(0.9, 0.8) and not Mode.MAX.better(0.8, 0.9) and not Mode.MAX.better(0.8, 0.8)
    assert Mode.MIN.better(70.0, 80.0) and not Mode.MIN.better(80.0, 70.0) and not Mode.MIN.better(5.0, 5.0)
    assert Mode.MAX.better(-1e9, None) and Mode.MIN.better(1e9, None)


def test_sign_turns_every_mode_into_higher_is_better():
    for mode, a, b in [(Mode.MAX, 0.9, 0.8), (Mode.MIN, 70.0, 80.0)]:
        assert mode.better(a, b) and mode.sign * a > mode.sign * b


def test_array_helpers_take_the_first_best():
    values = np.array([3.0, 1.0, 5.0, 1.0, 5.0])
    assert (Mode.MAX.best(values), Mode.MAX.best_index(values)) == (5.0, 2)
    assert (Mode.MIN.best(values), Mode.MIN.best_index(values)) == (1.0, 1)
    assert Mode.MAX.running_best(values).tolist() == [3, 3, 5, 5, 5]
    assert Mode.MIN.running_best(values).tolist() == [3, 1, 1, 1, 1]


def test_a_mode_reads_and_writes_as_its_string():
    assert MODES == ("max", "min")
    assert Mode("min") is Mode.MIN and Mode.MAX == "max"
    assert f"{Mode.MIN}" == str(Mode.MIN) == "min" and json.dumps({"mode": Mode.MAX}) == '{"mode": "max"}'
    with pytest.raises(ValueError):
        Mode("maximum")
