"""The simulated executor and the controller loop on a virtual clock."""

import numpy as np
import pytest

from hpcsched.core.clock import VirtualClock
from hpcsched.loop.controller import Controller, RunSettings
from hpcsched.executors.base import LaunchRequest, TrialExit, TrialReport, TrialStarted
from hpcsched.core.errors import SpecError
from hpcsched.executors.sim import SimExecutor
from hpcsched.samplers import IndexSampler, NoSpace
from hpcsched.rundir.journal import ListJournal
from hpcsched.core.records import Exited, Reported, Running, StopRequested
from hpcsched.core.scaling import named_scaling
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.schedulers import make_scheduler
from hpcsched.spec import SchedulerSpec, parse_experiment
from hpcsched.loop.simulate import simulate_run
from hpcsched.core.state import RunState
from hpcsched.workloads import Curve, oracle_score


class ListWorkload:
    def __init__(self, curves):
        self.curves = curves
        self.size = len(curves)

    def curve(self, index, config=None):
        return self.curves[index]


def linear_curve(key, n, step_time=1.0, start=0.0, slope=0.1):
    steps = np.arange(1, n + 1)
    return Curve(key, steps, start + slope * steps, steps * step_time)


def run_controller(curves, scheduler_spec, atoms=2, deadline=100.0, startup=0.0, scaling="linear",
                   max_trials=None):
    clock = VirtualClock()
    executor = SimExecutor(ListWorkload(curves), clock, named_scaling(scaling), startup)
    journal = ListJournal()
    state = RunState("max")
    settings = RunSettings("t", "v", "d", 0, deadline, tuple(str(i) for i in range(atoms)),
                           max_trials=max_trials or len(curves))
    Controller(settings, make_scheduler(scheduler_spec, "max"), executor, clock, journal,
               IndexSampler(lambda i: {"i": i}), state).run()
    return state, journal.records


def test_steps_advance_at_true_scaling_after_startup():
    spec = SchedulerSpec(kind="asha", r=100, R=10, eta=4, atoms_per_trial=2)
    state, records = run_controller([linear_curve("c", 10, step_time=0.5)], spec, atoms=2, startup=1.0)
    times = [r.t for r in records if isinstance(r, Reported)]
    assert [r.startup for r in records if isinstance(r, Running)] == [1.0]
    assert times == pytest.approx([1.0 + 0.25 * k for k in range(1, 11)])  # two atoms, linear: 0.25 per step
    exit_ = [r for r in records if isinstance(r, Exited)]
    assert exit_[0].outcome == "finished" and exit_[0].t == pytest.approx(3.5) and exit_[0].step == 10
    assert state.counts["completed"] == 1 and state.best_score == pytest.approx(1.0)


def test_resume_and_resize_continue_from_the_checkpoint_step():
    clock = VirtualClock()
    ex = SimExecutor(ListWorkload([linear_curve("c", 20)]), clock, named_scaling("linear"), startup=2.0)
    ex.launch(LaunchRequest("t0", 0, {}, ("0",), 0, "start", decision_steps=DecisionSteps((4,))))
    events = []
    while clock.now() < 6.0:
        clock.sleep_until(min(ex.next_wakeup(clock.now()), 6.0))
        events += ex.poll(clock.now())
    assert isinstance(events[0], TrialStarted) and events[0].t == 2.0
    assert [e.step for e in events if isinstance(e, TrialReport)] == [1, 2, 3, 4]
    ex.request_stop("t0")
    (exit_,) = ex.poll(clock.now())
    assert isinstance(exit_, TrialExit) and exit_.outcome == "checkpointed" and exit_.step == 4
    ex.launch(LaunchRequest("t0", 0, {}, ("0", "1"), 4, "resize"))
    clock.sleep_until(ex.next_wakeup(clock.now()))
    assert isinstance(ex.poll(clock.now())[0], TrialStarted) and clock.now() == 8.0
    clock.sleep_until(ex.next_wakeup(clock.now()))
    (report,) = ex.poll(clock.now())
    assert report.step == 5 and report.t == pytest.approx(8.5)  # resumed at step 5, twice as fast


def test_short_trace_ends_the_trial_at_its_last_step():
    spec = SchedulerSpec(kind="asha", r=100, R=50, eta=4)
    state, records = run_controller([linear_curve("short", 3), linear_curve("long", 8)], spec, atoms=2)
    exits = {r.trial: r for r in records if isinstance(r, Exited)}
    assert exits["t0000"].step == 3 and exits["t0000"].outcome == "finished"
    assert exits["t0001"].step == 8


def test_deadline_stops_trials_and_best_is_what_was_reported_by_then():
    spec = SchedulerSpec(kind="asha", r=100, R=1000, eta=4)
    state, records = run_controller([linear_curve("c", 1000, slope=0.001)], spec, atoms=1, deadline=10.5)
    reports = [r for r in records if isinstance(r, Reported)]
    assert reports[-1].step == 10 and all(r.t <= 10.5 for r in reports)
    assert state.best_score == pytest.approx(0.010)
    stops = [r for r in records if isinstance(r, StopRequested)]
    assert stops[-1].intent == "deadline"
    assert state.counts["paused"] == 1 and state.live_count == 0
    assert state.finished is not None and state.finished.reason == "deadline"


def test_atoms_never_oversubscribed_and_replay_rebuilds_state():
    raw = {"scheduler": {"kind": "hypersched", "r": 5, "R": 200, "eta": 4, "allocation": "uniform",
                         "resize_cooldown": 1, "runner_ups": False},  # (a run that both pauses and resizes)
           "resources": {"atoms": 6}, "deadline": 40, "workload": {"kind": "synthetic", "startup": 0.3}}
    spec = parse_experiment(raw).spec
    clock = VirtualClock()
    from hpcsched.workloads.synthetic import SyntheticWorkload

    workload = SyntheticWorkload(0, 200, 0.1, 500, 0.005)
    executor = SimExecutor(workload, clock, named_scaling("linear"), 0.3)
    journal = ListJournal()
    state = RunState("max")

    def check(record, st):
        held = sum(len(t.atoms) + len(t.reserved) for t in st.trials.values())
        assert held + st.free_atoms == 6

    settings = RunSettings("t", "hypersched", "d", 0, 40.0, tuple(str(i) for i in range(6)), max_trials=500)
    Controller(settings, make_scheduler(spec.scheduler, "max"), executor, clock, journal, NoSpace(),
               state, on_record=check).run()
    assert state.resizes > 0 and state.pauses > 0
    replayed = RunState("max")
    for record in journal.records:
        replayed.apply(record)
    assert replayed.best_score == state.best_score and replayed.counts == state.counts
    assert {k: (t.status, t.step) for k, t in replayed.trials.items()} == \
        {k: (t.status, t.step) for k, t in state.trials.items()}


def test_oracle_is_best_prefix_with_all_atoms_and_one_startup():
    curves = [linear_curve("a", 10, slope=0.1), Curve("b", np.arange(1, 11), np.r_[0.5, 0.9, [0.2] * 8],
                                                      np.arange(1, 11) * 1.0)]
    w = ListWorkload(curves)
    # 4 atoms linear, deadline 2, startup 1: 4 one-atom seconds -> 4 steps: a reaches 0.4, b peaked at 0.9
    assert oracle_score(w, atoms=4, deadline=2, startup=1, scaling=named_scaling("linear"), mode="max") == 0.9
    assert oracle_score(w, atoms=4, deadline=1.2, startup=1, scaling=named_scaling("linear"), mode="max") is None
    assert oracle_score(w, atoms=4, deadline=3.5, startup=1, scaling=named_scaling("linear"), mode="min") == 0.1


def test_simulated_best_never_beats_the_oracle():
    raw = {"scheduler": {"kind": "hypersched", "r": 5, "R": 500, "eta": 4}, "resources": {"atoms": 8},
           "deadline": 20, "workload": {"kind": "synthetic", "startup": 0.2},
           "variants": [{"name": "asha", "scheduler": {"kind": "asha"}}, {"name": "hs"}]}
    spec = parse_experiment(raw).spec
    for variant in spec.variants:
        for seed in range(2):
            state, workload = simulate_run(spec, variant, seed)
            oracle = oracle_score(workload, atoms=8, deadline=20, startup=0.2, scaling=named_scaling("linear"),
                                  mode="max")
            assert state.best_score <= oracle


def test_every_step_costs_the_report_overhead_whatever_the_atoms():
    clock = VirtualClock()
    ex = SimExecutor(ListWorkload([linear_curve("c", 6)]), clock, named_scaling("linear"), startup=1.0,
                     step_overhead=0.25)
    ex.launch(LaunchRequest("t0", 0, {}, ("0", "1"), 0, "start"))
    times = []
    while len(times) < 4:
        clock.sleep_until(ex.next_wakeup(clock.now()))
        times += [e.t for e in ex.poll(clock.now()) if isinstance(e, TrialReport)]
    assert times == pytest.approx([1.0 + k * (0.5 + 0.25) for k in range(1, 5)])  # two atoms: 0.5 s of work


def test_the_workload_spec_takes_the_step_overhead():
    experiment = parse_experiment({"name": "x", "scheduler": {"kind": "asha", "r": 1, "R": 4}, "deadline": 10,
                                   "workload": {"kind": "synthetic", "step_overhead": "0.2s"}})
    assert experiment.spec.workload.step_overhead == 0.2


def _run_until(ex, clock, t):
    events = []
    while clock.now() < t:
        clock.sleep_until(min(ex.next_wakeup(clock.now()), t))
        events += ex.poll(clock.now())
    return events


def test_a_stop_between_reports_lets_the_step_in_progress_finish_then_the_exit_takes_the_stop_latency():
    clock = VirtualClock()
    ex = SimExecutor(ListWorkload([linear_curve("c", 20)]), clock, named_scaling("linear"), startup=2.0,
                     stop_latency=0.5)
    ex.launch(LaunchRequest("t0", 0, {}, ("0",), 0, "start"))
    _run_until(ex, clock, 4.4)  # started at 2, steps 1 and 2 reported at 3 and 4; step 3 in progress
    ex.request_stop("t0")
    events = _run_until(ex, clock, 10.0)
    assert [(type(e).__name__, e.t) for e in events] == [("TrialReport", 5.0), ("TrialExit", 5.5)]
    assert events[0].step == 3 and events[1].step == 3 and events[1].outcome == "checkpointed"


def test_a_stop_at_the_report_of_a_step_that_is_no_decision_step_finds_the_trial_in_its_next_step():
    clock = VirtualClock()
    ex = SimExecutor(ListWorkload([linear_curve("c", 20)]), clock, named_scaling("linear"), startup=0.0,
                     stop_latency=0.5)
    ex.launch(LaunchRequest("t0", 0, {}, ("0",), 0, "start", decision_steps=DecisionSteps((2,))))
    _run_until(ex, clock, 3.0)  # step 3 reported at 3.0: no decision step, the trial is already in step 4
    ex.request_stop("t0")
    (report, exit_) = _run_until(ex, clock, 10.0)
    assert (report.step, report.t, exit_.step, exit_.t) == (4, 4.0, 4, 4.5)


def test_a_stop_at_a_report_leaves_from_that_step_and_one_in_startup_after_the_startup():
    clock = VirtualClock()
    ex = SimExecutor(ListWorkload([linear_curve("c", 20), linear_curve("d", 20)]), clock, named_scaling("linear"),
                     startup=2.0, stop_latency=0.25)
    ex.launch(LaunchRequest("t0", 0, {}, ("0",), 0, "start", decision_steps=DecisionSteps((2,))))
    _run_until(ex, clock, 4.0)  # t0 reports step 2, a decision step, at 4.0 and waits there for the verdict
    ex.launch(LaunchRequest("t1", 1, {}, ("1",), 0, "start"))
    ex.request_stop("t0")
    clock.sleep_until(4.5)
    ex.request_stop("t1")  # in its startup
    events = _run_until(ex, clock, 10.0)
    exits = {e.trial_id: e for e in events if isinstance(e, TrialExit)}
    assert exits["t0"].t == 4.25 and exits["t0"].step == 2
    assert exits["t1"].t == 6.25 and exits["t1"].step == 0
    assert not [e for e in events if isinstance(e, TrialReport)]


def test_each_launch_draws_its_startup_from_measured_ones_seeded():
    spec = SchedulerSpec(kind="asha", r=100, R=2, eta=4)
    measured = (1.0, 3.0)

    def startups(seed):
        clock = VirtualClock()
        executor = SimExecutor(ListWorkload([linear_curve(f"c{i}", 2) for i in range(12)]), clock,
                               named_scaling("linear"), measured, rng=np.random.default_rng(seed))
        state = RunState("max")
        settings = RunSettings("t", "v", "d", 0, 100.0, ("0", "1"), max_trials=12)
        journal = ListJournal()
        Controller(settings, make_scheduler(spec, "max"), executor, clock, journal,
                   IndexSampler(lambda i: {"i": i}), state).run()
        return [r.startup for r in journal.records if isinstance(r, Running)]

    drawn = startups(0)
    assert len(drawn) == 12 and set(drawn) == {1.0, 3.0}  # both drawn, nothing else
    assert startups(0) == drawn  # the same seed draws the same startups
    with pytest.raises(ValueError, match="rng"):
        SimExecutor(ListWorkload([]), VirtualClock(), named_scaling("linear"), measured)


def test_the_workload_spec_takes_a_list_of_measured_startups_and_names_a_bad_one():
    raw = {"name": "x", "scheduler": {"kind": "asha", "r": 1, "R": 4}, "deadline": 10,
           "workload": {"kind": "synthetic", "startup": [0.5, "2s"]}}
    assert parse_experiment(raw).spec.workload.startup == (0.5, 2.0)
    raw["workload"]["startup"] = [0.5, "soon"]
    with pytest.raises(SpecError, match=r"workload\.startup.*soon"):
        parse_experiment(raw)
    raw["workload"]["startup"] = []
    with pytest.raises(SpecError, match=r"workload\.startup"):
        parse_experiment(raw)


def test_a_trial_killed_at_the_deadline_exits_at_the_step_it_reached():
    # 1.5 s steps: the deadline at 10.5 s comes in the middle of step 8; the trial is asked to stop and
    # killed at the deadline, its last checkpoint the report of step 7 (each simulated report is one)
    spec = SchedulerSpec(kind="asha", r=100, R=1000, eta=4)
    state, records = run_controller([linear_curve("c", 1000, step_time=1.5, slope=0.001)], spec, atoms=1,
                                    deadline=10.5)
    (exit_record,) = [r for r in records if isinstance(r, Exited)]
    assert exit_record.step == 7 and state.trials["t0000"].step == 7
    assert "did not exit in time" in exit_record.error


def _ending_early_trace(path, trials=40, R=100):
    """A trace whose curves end long before the longest (converged runs stopped early), one step a second."""
    rows = ["trial,step,score,time"]
    rng = np.random.default_rng(5)
    for i in range(trials):
        end = R if i == 0 else int(rng.integers(4, 12))
        quality = rng.uniform(0.3, 0.9)
        for step in range(1, end + 1):
            rows.append(f"c{i},{step},{quality * (1 - 0.5 ** step):.5f},{float(step)}")
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("scaling", ["none", "sqrt"])
def test_no_atom_idles_while_a_trial_could_still_report_a_step_when_trials_end_before_R(tmp_path, scaling):
    """HyperSched: every run's idle atom-time, before a trial started then could no longer report a step,
    stays under one median step per atom; ASHA leaves atoms idle once its pool is screened and nothing
    is promotable."""
    from hpcsched.loop.simulate import simulate_experiment

    trace = tmp_path / "early.csv"
    _ending_early_trace(trace)
    raw = {"name": "early", "metric": {"name": "score", "mode": "max"}, "deadline": 200,
           "scheduler": {"kind": "hypersched", "r": 1, "R": 100, "eta": 4, "scaling": scaling},
           "resources": {"atoms": 4}, "workload": {"kind": "trace", "path": str(trace), "scaling": scaling,
                                                   "startup": 0.0 if scaling == "none" else 1.0},
           "variants": [{"name": "hypersched"}, {"name": "asha", "scheduler": {"kind": "asha"}}]}
    frame = simulate_experiment(parse_experiment(raw), seeds=list(range(8)), event_log=False)
    ours = frame[frame["variant"] == "hypersched"]
    assert (ours["idle_steps"] < 1.0).all(), ours["idle_steps"].tolist()
    assert (frame[frame["variant"] == "asha"]["idle_steps"] > 5.0).all()
