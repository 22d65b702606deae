import pytest

from hpcsched.records import EntranceClosed, Exited, StopRequested
from hpcsched.scaling import named_scaling, table_scaling
from hpcsched.schedulers.allocation import allowed_size, target_atoms, worth_resizing
from hpcsched.schedulers.decisions import CloseEntrance, PauseTrial, ResizeTrial, ResumeTrial, StartTrial
from tests.harness import Harness


def _closes(h) -> bool:
    return any(isinstance(d, CloseEntrance) for d in h.decide())


# ---------------------------------------------------------------- entrance policy


def test_adaptive_entrance_bound_by_R_times_step_time():
    # one trial, one atom, one step per second: T_a = 1, T' = k at step k
    h = Harness(atoms=1, deadline=30.0, kind="hypersched", r=100, R=20, eta=4, entrance="adaptive")
    h.start("a")
    for k in range(1, 11):
        h.report("a", k, 0.1 * k, t=float(k))
        assert not _closes(h), k  # time_left = 30 - k >= min(20, 4k)
    h.report("a", 11, 0.9, t=11.0)  # time_left 19 < min(R*T_a = 20, 44)
    assert _closes(h)


def test_adaptive_entrance_bound_by_eta_times_longest_trial():
    h = Harness(atoms=1, deadline=30.0, kind="hypersched", r=100, R=1000, eta=4, entrance="adaptive")
    h.start("a")
    for k in range(1, 7):
        h.report("a", k, 0.1, t=float(k))
        assert not _closes(h), k  # at k = 6: time_left 24 == eta*T' 24, still open
    h.report("a", 7, 0.1, t=7.0)  # 23 < 28
    assert _closes(h)


def test_fixed_fraction_entrance_and_none():
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", entrance=0.5)
    h.now = 49.9
    assert not _closes(h)
    h.now = 50.0
    assert _closes(h)
    never = Harness(atoms=2, deadline=100.0, kind="hypersched", entrance="none", R=10)
    never.start("a")
    never.report("a", 1, 0.5, t=1.0)
    never.now = 98.0  # 2 s left: a new trial would still report a step
    decisions = never.decide()
    assert not any(isinstance(d, CloseEntrance) for d in decisions)
    assert StartTrial(1) in decisions


def test_closed_entrance_starts_and_promotes_nothing():
    h = Harness(atoms=4, deadline=100.0, kind="hypersched", r=1, R=50, eta=4, allocation="none",
                after_close="paper", rung_trust="fixed", speculative=True)  # the paper's rules after the close
    for name in "abc":
        h.start(name)
    for name, s in [("a", 0.9), ("b", 0.8)]:
        h.report(name, 1, s)
    h.report("c", 1, 0.1)
    assert h.decide()[0] == PauseTrial("c", "rung 1")
    h.pause("c")
    h.commit(EntranceClosed(h.now, "test"))
    for i in range(8):
        h.start(f"w{i}") if h.state.free_atoms else None
    assert h.decide() == []
    assert h.scheduler.bracket.best_promotable() is None


# ---------------------------------------------------------------- overhead-aware resize test


def test_resize_test_on_both_sides_of_the_inequality():
    linear = named_scaling("linear")
    # H' (T - T_o) > (1 + m) H T with H = 1, H' = 2, T = 100, m = 0.1: T_o < 45
    assert worth_resizing(linear, 1, 2, time_left=100, overhead=44.9, margin=0.1)
    assert not worth_resizing(linear, 1, 2, time_left=100, overhead=45.0, margin=0.1)
    assert worth_resizing(linear, 1, 2, time_left=100, overhead=49.9, margin=0.0)
    assert not worth_resizing(linear, 1, 2, time_left=100, overhead=50.0, margin=0.0)
    assert not worth_resizing(linear, 1, 2, time_left=10, overhead=10, margin=0.0)
    assert worth_resizing(linear, 4, 2, time_left=1, overhead=100, margin=0.1)  # shrinking always passes
    assert not worth_resizing(named_scaling("none"), 1, 8, time_left=100, overhead=0, margin=0.0)
    sqrt = named_scaling("sqrt")
    assert worth_resizing(sqrt, 1, 4, time_left=100, overhead=10, margin=0.1)  # 2*90 > 110
    assert not worth_resizing(sqrt, 1, 2, time_left=100, overhead=25, margin=0.1)  # 1.4*75 = 105 < 110


def test_scaling_tables_interpolate_and_hold_flat():
    table = table_scaling({1: 1.0, 2: 1.8, 4: 3.0})
    assert table.rate(3) == pytest.approx(2.4)
    assert table.rate(8) == 3.0
    assert table.best_atoms(8) == 4
    assert named_scaling("sqrt").rate(4) == 2.0 and named_scaling("sqrt").rate(3) == pytest.approx(1.7)


def test_allocation_targets_and_sizes():
    assert [target_atoms("uniform", r, 3, 8, 8) for r in range(3)] == [3, 3, 2]
    assert [target_atoms("top_job", r, 3, 8, 8) for r in range(3)] == [6, 1, 1]
    assert target_atoms("uniform", 0, 2, 16, 4) == 4  # capped
    assert [allowed_size(a, 2) for a in (1, 2, 3, 5, 8)] == [1, 2, 2, 4, 8]
    assert [allowed_size(a, 1) for a in (1, 3, 7)] == [1, 3, 7]


# ---------------------------------------------------------------- dynamic allocation


def _exploiting(**fields):
    """Eight atoms, three live trials on one atom each, exploration closed."""
    h = Harness(atoms=8, deadline=1000.0, kind="hypersched", r=100, R=500, eta=4, resize_cooldown=2, **fields)
    for name in "abc":
        h.start(name, startup=1.0)
    h.commit(EntranceClosed(0.0, "test"))
    return h


def _report_all(h, step, scores):
    for name, s in zip("abc", scores):
        h.report(name, step, s)


def test_uniform_growth_of_the_reporting_trial():
    h = _exploiting(allocation="uniform")
    _report_all(h, 1, [0.9, 0.8, 0.7])
    h.decide()
    h.report("a", 2, 0.91)
    h.report("c", 2, 0.71)
    decisions = h.decide()
    # spare = 5 round-robin in score order: a 3, b 3, c 2; free = 5
    assert ResizeTrial("a", 3, "grow 1->3 (uniform)") in decisions
    assert ResizeTrial("c", 2, "grow 1->2 (uniform)") in decisions


def test_top_job_gives_spare_atoms_to_the_best():
    h = _exploiting(allocation="top_job")
    _report_all(h, 1, [0.5, 0.8, 0.7])
    h.decide()
    _report_all(h, 2, [0.5, 0.8, 0.7])
    assert h.decide() == [ResizeTrial("b", 6, "grow 1->6 (top_job)")]


def test_cooldown_and_allocation_grid():
    h = _exploiting(allocation="top_job", allocation_grid=4)
    _report_all(h, 1, [0.9, 0.1, 0.1])
    assert h.decide() == []  # one report since launch < cooldown 2
    h.report("a", 2, 0.9)
    assert h.decide() == [ResizeTrial("a", 4, "grow 1->4 (top_job)")]  # 6 rounded down to a multiple of 4


def test_scale_awareness_no_growth_when_belief_says_no_speedup():
    h = _exploiting(allocation="top_job", scaling=named_scaling("none"), backfill=False)
    _report_all(h, 1, [0.9, 0.1, 0.1])
    _report_all(h, 2, [0.9, 0.1, 0.1])
    assert h.decide() == []


def test_backfill_explores_with_atoms_the_live_trials_cannot_use():
    # belief: no speedup, so the five free atoms would idle; backfill starts trials on them
    h = _exploiting(allocation="top_job", scaling=named_scaling("none"))
    _report_all(h, 1, [0.9, 0.1, 0.1])
    assert h.decide() == [StartTrial(1)] * 5
    # linear belief: the live trials take the atoms (top_job: the best grows), nothing is backfilled
    h = _exploiting(allocation="top_job")
    _report_all(h, 1, [0.9, 0.1, 0.1])
    _report_all(h, 2, [0.9, 0.1, 0.1])
    assert h.decide() == [ResizeTrial("a", 6, "grow 1->6 (top_job)")]


def test_overhead_awareness_uses_measured_startups():
    # startup 400 s measured, 1000 s left, top_job 1 -> 6 under sqrt: 2.45*(1000-400) = 1470 > 1.1*1000
    # but a startup of 600 s: 2.45*400 = 980 < 1100 -> no resize; ignored when overhead_aware is false
    for overhead_aware, startup, grows in [(True, 400.0, True), (True, 600.0, False), (False, 600.0, True)]:
        h = Harness(atoms=8, deadline=1000.0, kind="hypersched", r=100, R=500, eta=4, resize_cooldown=1,
                    allocation="top_job", scaling=named_scaling("sqrt"), overhead_aware=overhead_aware)
        for name in "abc":
            h.start(name, startup=startup)
        h.commit(EntranceClosed(0.0, "test"))
        _report_all(h, 1, [0.9, 0.1, 0.1])
        assert bool(h.decide()) is grows, (overhead_aware, startup)


def test_shrink_to_make_room_while_exploring():
    h = Harness(atoms=4, deadline=1000.0, kind="hypersched", r=100, R=500, eta=4, resize_cooldown=0,
                allocation="top_job")
    h.trials_left = 1
    h.start("a")
    h.report("a", 1, 0.5)
    # exploration first (one new trial), then the leftover atoms grow the reporting trial
    assert h.decide() == [StartTrial(1), ResizeTrial("a", 3, "grow 1->3 (top_job)")]
    h.start("b")
    h.trials_left = 0
    h.commit(StopRequested(h.now, "a", "resize", 3, h.state.pool.choose(2)))
    h.commit(Exited(h.now, "a", "checkpointed", 1))
    h.start("a", atoms=3)
    assert h.state.free_atoms == 0
    h.trials_left = 5  # exploration wants an atom again (e.g. more trials allowed)
    assert h.decide() == [ResizeTrial("a", 2, "make room for exploration")]
    assert h.decide() == []  # one shrink at a time
    h.commit(StopRequested(h.now, "a", "resize", 2))
    h.commit(Exited(h.now, "a", "checkpointed", 1))
    assert h.decide()[0] == StartTrial(1)


def test_paused_trial_promoted_while_exploring():
    h = Harness(atoms=3, deadline=1000.0, kind="hypersched", r=1, R=500, eta=4, allocation="none", speculative=True)
    h.trials_left = 0
    for name in "abc":
        h.start(name)
    h.report("a", 1, 0.9)
    h.report("b", 1, 0.8)
    h.report("c", 1, 0.5)
    assert h.decide() == [PauseTrial("c", "rung 1")]
    h.pause("c")
    assert h.decide() == []
    for i, s in enumerate([0.1] * 10):
        h.trials_left = 1
        assert h.decide() == [StartTrial(1)]
        h.start(f"w{i}")
        h.trials_left = 0
        h.report(f"w{i}", 1, s)
        decisions = h.decide()
        h.pause(f"w{i}")
        if ResumeTrial("c", 1) in decisions or ResumeTrial("c", 1) in h.decide():
            break
    else:
        pytest.fail("c never became promotable")


def test_idle_atoms_resume_the_best_paused_trial_instead_of_ending_early():
    h = Harness(atoms=3, deadline=1000.0, kind="hypersched", r=1, R=50, eta=2, allocation="none", speculative=True)
    h.trials_left = 0
    for name in "acb":
        h.start(name)
    h.report("a", 1, 0.9)
    h.report("c", 1, 0.8)
    h.report("b", 1, 0.2)  # below the cutoff of {0.9, 0.8}: paused
    assert h.decide() == [PauseTrial("b", "rung 1")]
    h.pause("b")
    for name, step in (("a", 50), ("c", 50)):
        h.commit(StopRequested(h.now, name, "stop"))
        h.commit(Exited(h.now, name, "finished", step))
    # nothing runs, nothing may start, b is not promotable: resume it rather than idle to the deadline
    assert h.decide() == [ResumeTrial("b", 1)]
    assert h.decide() == []  # one paused trial, one resume
    h.start("b")
    h.report("b", 2, 0.25)  # still below the rung's cutoff, but pausing it would only idle the atoms
    assert h.decide() == []
    h.commit(StopRequested(h.now, "b", "resize", 2, h.state.pool.choose(1)))  # grown onto the idle atoms
    h.commit(Exited(h.now, "b", "checkpointed", 2))
    h.start("b", atoms=2)
    h.report("b", 3, 0.26)  # the exemption survives the resize
    assert h.decide() == []


def test_a_trial_paused_in_this_decision_is_not_also_shrunk():
    h = Harness(atoms=4, deadline=1000.0, kind="hypersched", r=1, R=500, eta=2, resize_cooldown=0,
                allocation="top_job", speculative=True)
    h.trials_left = 0
    h.start("a", atoms=2)
    h.start("b")
    h.start("c")
    h.report("b", 1, 0.9)
    h.report("c", 1, 0.8)
    h.report("a", 1, 0.1)  # a falls below the cutoff and holds two atoms
    h.trials_left = 3  # exploration wants room
    decisions = h.decide()
    assert decisions == [PauseTrial("a", "rung 1")]  # no "make room" shrink of the trial already leaving


def test_profile_startup_estimate_is_the_prior_until_startups_are_measured():
    h = Harness(atoms=2, kind="hypersched", startup_estimate=42.0)
    assert h.scheduler.startup_estimate == 42.0
    h.start("a", startup=3.0)
    assert h.scheduler.startup_estimate == 3.0


def test_nothing_starts_when_its_startup_would_outlast_the_deadline():
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", entrance="none")
    h.start("a", startup=5.0)
    h.now = 94.0
    assert h.decide() == [StartTrial(1)]  # 6 s left > 5 s startup
    h.now = 95.5
    assert h.decide() == []


def test_each_policy_names_the_steps_where_it_may_pause_a_trial_on_its_report():
    from hpcsched.schedulers import make_scheduler
    from hpcsched.spec import SchedulerSpec

    asha = make_scheduler(SchedulerSpec(kind="asha", r=2, R=32, eta=2), "max").decision_steps()
    assert asha.steps == (2, 4, 8, 16) and 32 not in asha and 3 not in asha
    speculative = make_scheduler(SchedulerSpec(kind="hypersched", r=2, R=32, eta=2, speculative=True),
                                 "max").decision_steps()
    assert speculative.every_step and 3 in speculative
    rungs_only = make_scheduler(SchedulerSpec(kind="hypersched", r=2, R=32, eta=2), "max").decision_steps()
    assert rungs_only.steps == (2, 4, 8, 16) and not rungs_only.every_step  # the default
    assert make_scheduler(SchedulerSpec(kind="random", r=32, R=32), "max").decision_steps().steps == ()
    assert make_scheduler(SchedulerSpec(kind="one_epoch", r=1, R=20), "max").decision_steps().steps == (1,)


def test_a_rung_passed_while_stopping_for_a_resize_is_not_judged_late():
    # rung-exact pauses: a trial's report at rung 1 that came in while it was stopping to be
    # resized still records its rung score, so the relaunched trial is not paused at step 2
    def decisions_after_relaunch(report_while_stopping: bool):
        h = Harness(atoms=4, deadline=1000.0, kind="hypersched", r=1, R=16, eta=4, allocation="none")
        for name, score in [("x", 0.9), ("y", 0.8), ("z", 0.7)]:
            h.start(name)
            h.report(name, 1, score)
        h.decide()
        h.start("a")
        h.commit(StopRequested(h.now, "a", "resize", 1))
        if report_while_stopping:
            h.report("a", 1, 0.1)  # below the rung-1 cutoff, but the trial is leaving anyway
        h.commit(Exited(h.now, "a", "checkpointed", 1 if report_while_stopping else 0))
        h.start("a")
        h.report("a", 2 if report_while_stopping else 1, 0.1)
        return h.decide()

    assert not any(isinstance(d, PauseTrial) and d.trial_id == "a" for d in decisions_after_relaunch(True))
    assert PauseTrial("a", "rung 1") in decisions_after_relaunch(False)  # judged at its own step


def test_growth_pays_only_until_the_trial_reaches_R():
    # 1 s a step, 20 s startup, sqrt belief, 1000 s left: growing 1 -> 8 atoms (2.83x) pays for a trial
    # with 200 steps to go (200 s on one atom: 2.83*(200-20) = 509 > 1.1*200) but not for one with 20
    # (after R its atom is free anyway: 2.83*(20-20) = 0), though the deadline is far; the atoms are
    # then not held back for growth (they would idle): backfill starts trials on them
    for step, grows in [(300, True), (480, False)]:
        h = Harness(atoms=8, deadline=1000.0, kind="hypersched", r=100, R=500, eta=4, resize_cooldown=1,
                    allocation="top_job", scaling=named_scaling("sqrt"))
        h.start("a", startup=20.0)
        h.commit(EntranceClosed(0.0, "test"))
        h.report("a", step, 0.9, t=1.0)
        h.decide()
        h.report("a", step + 1, 0.9, t=2.0)
        assert h.decide() == ([ResizeTrial("a", 8, "grow 1->8 (top_job)")] if grows else [StartTrial(1)] * 7), step
