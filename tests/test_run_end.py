"""How a controller's life ends in the journal: a stop (resumable), the run's end, an extension."""

from __future__ import annotations

import os
import signal

from hpcsched.core.clock import VirtualClock
from hpcsched.loop.controller import Controller, RunSettings
from hpcsched.executors.sim import SimExecutor
from hpcsched.rundir.journal import ListJournal
from hpcsched.core.records import ControllerStopped, Reported, RunExtended, RunFinished
from hpcsched.loop.interrupts import TIME_LIMIT_WARNING, install_interrupts, restore_interrupts
from hpcsched.samplers import IndexSampler
from hpcsched.core.scaling import named_scaling
from hpcsched.schedulers import make_scheduler
from hpcsched.spec import SchedulerSpec
from hpcsched.core.state import LIVE, RunState
from tests.test_simulator import ListWorkload, linear_curve


def _controller(interrupt_after: int | None = None, at_deadline: bool = False):
    clock = VirtualClock()
    curves = [linear_curve(f"c{i}", 50) for i in range(4)]
    executor = SimExecutor(ListWorkload(curves), clock, named_scaling("linear"), 0.0)
    journal = ListJournal()
    settings = RunSettings("t", "v", "d", 0, 100.0, ("0", "1"), max_trials=4, stop_margin=1.0)
    seen = []

    def on_record(record, state):
        seen.append(record)
        if interrupt_after is not None and sum(isinstance(r, Reported) for r in seen) == interrupt_after:
            controller.interrupt("interrupted by SIGTERM", at_deadline=at_deadline)

    controller = Controller(settings, make_scheduler(SchedulerSpec(kind="asha", r=5, R=50, eta=2), "max"),
                            executor, clock, journal, IndexSampler(lambda i: {"i": i}), RunState("max"),
                            on_record=on_record)
    return controller, journal


def test_a_signal_stops_the_controller_without_finishing_the_run():
    controller, journal = _controller(interrupt_after=6)
    state = controller.run()
    assert isinstance(journal.records[-1], ControllerStopped) and journal.records[-1].reason.endswith("SIGTERM")
    assert not any(isinstance(r, RunFinished) for r in journal.records)
    assert state.finished is None and state.stopped is not None and state.live_count == 0
    assert all(t.status not in LIVE for t in state.trials.values())


def test_slurms_time_limit_warning_ends_the_run_as_its_deadline():
    controller, journal = _controller(interrupt_after=6, at_deadline=True)
    state = controller.run()
    assert isinstance(journal.records[-1], RunFinished) and journal.records[-1].reason == "deadline"
    assert not any(isinstance(r, ControllerStopped) for r in journal.records) and state.stopped is None


def test_an_extension_moves_the_deadline_for_the_state_and_the_scheduler():
    controller, journal = _controller()
    controller.run()
    assert journal.records[-1].t <= 100.0
    controller.extend(250.0, by=150.0)
    extended = journal.records[-1]
    assert isinstance(extended, RunExtended) and (extended.previous_deadline, extended.deadline) == (100.0, 250.0)
    assert controller.state.deadline == 250.0 and controller.state.finished is None
    assert controller.situation().deadline == 249.0  # the scheduler plans to the new one, less the stop margin


def test_sigusr1_near_the_allocations_end_is_the_deadline_elsewhere_a_stop():
    class Recorder:
        clock = VirtualClock()

        def __init__(self):
            self.calls = []

        def interrupt(self, reason, at_deadline=False):
            self.calls.append((reason, at_deadline))

    for ends_in, signum, expected in [(TIME_LIMIT_WARNING - 60, signal.SIGUSR1, True),
                                      (TIME_LIMIT_WARNING + 60, signal.SIGUSR1, False),
                                      (None, signal.SIGUSR1, False),
                                      (60.0, signal.SIGTERM, False)]:
        recorder = Recorder()
        previous = install_interrupts(recorder, None if ends_in is None else recorder.clock.now() + ends_in)
        try:
            os.kill(os.getpid(), signum)
        finally:
            restore_interrupts(previous)
        assert [at for _, at in recorder.calls] == [expected], (ends_in, signum, recorder.calls)
