"""Controller._apply: a decision that cannot be applied is a bug in the policy, raised as SchedulerError
naming the decision and why."""

from __future__ import annotations

import math

import pytest

from hpcsched.core.clock import VirtualClock
from hpcsched.loop.controller import Controller, RunSettings, SchedulerError
from hpcsched.executors.sim import SimExecutor
from hpcsched.rundir.journal import ListJournal
from hpcsched.core.records import RunStarted
from hpcsched.samplers import IndexSampler
from hpcsched.core.scaling import named_scaling
from hpcsched.schedulers.decisions import PauseTrial, ResizeTrial, ResumeTrial, Situation, StartTrial
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.core.state import RunState, TrialStatus
from tests.test_simulator import ListWorkload, linear_curve


class Idle:
    """A policy that decides nothing: the tests hand the controller decisions one by one."""

    def decision_steps(self) -> DecisionSteps:
        return DecisionSteps()

    def observe(self, record, trial) -> None:
        pass

    def decide(self, situation: Situation) -> list:
        return []

    def next_decision_time(self, situation: Situation) -> float:
        return math.inf


def _controller(max_trials=2):
    clock = VirtualClock()
    executor = SimExecutor(ListWorkload([linear_curve(f"c{i}", 20) for i in range(3)]), clock,
                           named_scaling("linear"), 0.0)
    settings = RunSettings("t", "v", "d", 0, 100.0, ("0", "1", "2"), max_trials=max_trials)
    controller = Controller(settings, Idle(), executor, clock, ListJournal(), IndexSampler(lambda i: {}),
                            RunState("max"))
    controller._commit(RunStarted(0.0, "t", 100.0, 3, 0, "d", "v", ("0", "1", "2")))
    return controller


def _apply(controller, decision):
    controller._apply(decision)


def test_decisions_that_cannot_be_applied_name_themselves():
    controller = _controller(max_trials=1)
    _apply(controller, StartTrial(1))
    with pytest.raises(SchedulerError, match="no trials left to start"):
        _apply(controller, StartTrial(1))
    with pytest.raises(SchedulerError, match=r"ResumeTrial\(trial_id='t0000', atoms=1\): trial is launching"):
        _apply(controller, ResumeTrial("t0000", 1))
    with pytest.raises(SchedulerError, match="needs 5 more atoms, 2 free"):
        _apply(controller, ResizeTrial("t0000", 6))
    _apply(controller, PauseTrial("t0000"))
    assert controller.state.trials["t0000"].status == TrialStatus.STOPPING
    with pytest.raises(SchedulerError, match="trial is stopping"):
        _apply(controller, ResizeTrial("t0000", 2))
    with pytest.raises(SchedulerError, match="unknown decision"):
        _apply(controller, "start something")


def test_a_launch_on_more_atoms_than_are_free_is_refused():
    controller = _controller()
    with pytest.raises(SchedulerError, match="launch of t0000 on 4 atoms: 3 free"):
        _apply(controller, StartTrial(4))
