"""Pace: what a run measured about its trials' step times, as the growth and entrance rules read it."""

from __future__ import annotations

import pytest

from hpcsched.core.scaling import Scaling
from hpcsched.schedulers.pace import OWN_STEP_TIMES, Pace


def test_a_trial_s_step_time_follows_each_new_report():
    """The median of a trial's latest step times (asked at most decisions, remembered between reports)
    moves with the next report, and a forgotten trial takes the run's median again."""
    pace = Pace(0.5, Scaling("linear"))
    pace.add_report("a", 1, 10.0, 10.0, 1, 10.0)
    pace.add_report("b", 1, 2.0, 2.0, 1, 2.0)
    assert pace.step_time("a") == 10.0 and pace.run_step_time() == 6.0
    assert pace.time_to("a", 5, 1) == pytest.approx(40.0)  # 4 steps more, 10 s each
    pace.add_report("a", 2, 14.0, 14.0, 1, 4.0)
    assert pace.step_time("a") == 7.0 and pace.time_to("a", 5, 2) == pytest.approx(3 * 7.0 / 2)
    pace.add_report("a", 3, 17.0, 17.0, 2, 1.5)  # on two atoms: 3 s as on one
    assert pace.step_time("a") == 4.0
    for step in range(4, 4 + OWN_STEP_TIMES):
        pace.add_report("a", step, 17.0 + step, 17.0 + step, 1, 1.0)
    assert pace.step_time("a") == 1.0  # (only the latest count)
    assert pace.stepping("a", 20.0 + OWN_STEP_TIMES, 1) and not pace.stepping("a", 30.0 + OWN_STEP_TIMES, 1)
    pace.forget("a")
    assert pace.step_time("a") == pace.run_step_time()
