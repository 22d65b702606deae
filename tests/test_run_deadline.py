"""plan_deadline: when a new, resumed or extended run ends (the runner's one deadline rule)."""

from __future__ import annotations

import pytest

from hpcsched.core.errors import SpecError
from hpcsched.core.records import RunExtended, RunStarted
from hpcsched.loop.runner import RunOptions, plan_deadline
from hpcsched.spec import parse_experiment


def _spec(deadline=None, stop_margin=10.0):
    raw = {"name": "d", "scheduler": {"kind": "asha", "r": 1, "R": 4}, "resources": {"atoms": 2},
           "workload": {"kind": "synthetic"},
           "controller": {} if stop_margin is None else {"stop_margin": stop_margin}}
    if deadline is not None:
        raw["deadline"] = deadline
    return parse_experiment(raw).spec


def _started(deadline: float):
    return [RunStarted(0.0, "d", deadline, 2, 0, "digest", "v")]


def test_a_new_run_ends_at_its_deadline_from_now_or_at_the_allocations_end():
    assert plan_deadline(_spec(60), RunOptions(), [], now=1000.0, hard_end=None).deadline == 1060.0
    assert plan_deadline(_spec(60), RunOptions(deadline=30.0), [], now=1000.0, hard_end=None).deadline == 1030.0
    assert plan_deadline(_spec(60), RunOptions(), [], now=1000.0, hard_end=1040.0).deadline == 1040.0
    assert plan_deadline(_spec(), RunOptions(), [], now=1000.0, hard_end=1500.0).deadline == 1500.0
    with pytest.raises(SpecError, match="deadline: required"):
        plan_deadline(_spec(), RunOptions(), [], now=1000.0, hard_end=None)


def test_a_resumed_run_keeps_its_deadline_and_is_late_within_the_stop_margin():
    resumed = RunOptions(resume=True)
    plan = plan_deadline(_spec(60), resumed, _started(500.0), now=400.0, hard_end=None)
    assert (plan.deadline, plan.extension, plan.late) == (500.0, None, False)
    assert plan_deadline(_spec(60), resumed, _started(500.0), now=491.0, hard_end=None).late
    assert plan_deadline(_spec(60), resumed, _started(500.0), now=400.0, hard_end=450.0).deadline == 450.0
    extended = _started(500.0) + [RunExtended(600.0, 900.0, 300.0, 500.0)]
    assert plan_deadline(_spec(60), resumed, extended, now=700.0, hard_end=None).deadline == 900.0


def test_extend_counts_from_the_later_of_the_deadline_and_now_within_the_allocation():
    plan = plan_deadline(_spec(60), RunOptions(resume=True, extend=100.0), _started(500.0), now=800.0, hard_end=None)
    assert (plan.deadline, plan.extension, plan.late) == (900.0, (900.0, 100.0), False)
    plan = plan_deadline(_spec(60), RunOptions(resume=True, extend=100.0), _started(500.0), now=300.0, hard_end=None)
    assert plan.deadline == 600.0
    plan = plan_deadline(_spec(60), RunOptions(resume=True, extend=100.0), _started(500.0), now=300.0, hard_end=550.0)
    assert plan.deadline == 550.0 and plan.extension == (550.0, 100.0)
    plan = plan_deadline(_spec(60), RunOptions(resume=True, extend=100.0), _started(500.0), now=800.0, hard_end=450.0)
    assert (plan.deadline, plan.extension, plan.late) == (450.0, None, True)  # the allocation ends first


def test_the_default_stop_margin_is_10_s_or_a_tenth_of_a_shorter_run():
    """A 20 s run with the 10 s default lost half its time; an 8 s one ended before it began."""
    assert plan_deadline(_spec(300, None), RunOptions(), [], now=0.0, hard_end=None).stop_margin == 10.0
    assert plan_deadline(_spec(20, None), RunOptions(), [], now=0.0, hard_end=None).stop_margin == 2.0
    assert plan_deadline(_spec(None, None), RunOptions(), [], now=0.0, hard_end=50.0).stop_margin == 5.0
    assert plan_deadline(_spec(20, 7), RunOptions(), [], now=0.0, hard_end=None).stop_margin == 7.0  # as set
    # a resumed run keeps the margin of its whole length (started at 0, deadline 40), late within it
    resumed = RunOptions(resume=True)
    plan = plan_deadline(_spec(40, None), resumed, _started(40.0), now=37.0, hard_end=None)
    assert (plan.stop_margin, plan.late) == (4.0, True)
    assert not plan_deadline(_spec(40, None), resumed, _started(40.0), now=30.0, hard_end=None).late
