"""HyperSched's rules, each on a hand-built situation (schedulers/hypersched.py, kept.py, entrance.py)."""

import math

import numpy as np
import pytest

from hpcsched.core.records import EntranceClosed, Exited
from hpcsched.core.scaling import named_scaling
from hpcsched.schedulers.decisions import CloseEntrance, PauseTrial, ResizeTrial, ResumeTrial, StartTrial, StopTrial
from hpcsched.schedulers.entrance import BestByStep, Entrance, Moment
from hpcsched.schedulers.kept import (
    NORMAL,
    SETTLED_ROWS,
    KeptFractions,
    doubt_bound,
    kept_fraction,
    latest_rows,
    population_covariance,
)
from hpcsched.schedulers.rungs import Rung, Tally
from tests.harness import Harness


def _closes(h) -> bool:
    return any(isinstance(d, CloseEntrance) for d in h.decide())


def _explored(h, scores: dict[str, float], step: int = 1) -> None:
    """Start the trials named in ``scores`` and let each report its score at ``step``."""
    for name in scores:
        h.start(name)
    for name, score in scores.items():
        h.report(name, step, score)


# ---------------------------------------------------------------- exploring: ASHA's rungs


def test_below_the_kept_fraction_a_trial_pauses_for_a_new_trial_and_the_best_is_promoted():
    h = Harness(atoms=4, deadline=1000.0, r=1, R=16, eta=4, rung_trust="fixed")
    _explored(h, {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.3})
    decisions = h.decide()
    # judged on arrival, each was below the best quarter of the scores recorded so far (a alone: none is
    # kept of one), and a new trial may take its atom
    assert decisions == [PauseTrial(t, "rung 1") for t in "abcd"]
    for t in "abcd":
        h.pause(t)
    decisions = h.decide()
    assert decisions[0] == ResumeTrial("a", 1)  # a is the best quarter of four: promoted first
    assert decisions[1:] == [StartTrial(1)] * 3


def test_a_rung_pauses_a_trial_only_when_something_better_takes_its_atom():
    h = Harness(atoms=2, deadline=1000.0, r=1, R=16, eta=4, rung_trust="fixed")
    h.trials_left = 0  # no new trial may start
    _explored(h, {"a": 0.9, "b": 0.1})
    # both are below the kept fraction of two scores, but nothing would take their atoms: they train on
    assert h.decide() == []
    h.trials_left = 1
    h.report("a", 4, 0.95)
    h.report("b", 4, 0.2)
    assert PauseTrial("b", "rung 4") in h.decide()  # a new trial may start: b's atom goes to it


def test_a_trial_that_trained_less_than_a_startup_is_not_paused_at_a_rung():
    # launches take 5 s, steps 0.15 s: a pause at rung 1 would trade 0.15 s of evidence for a 5 s relaunch
    h = Harness(atoms=2, deadline=1000.0, r=1, R=256, eta=4, rung_trust="fixed")
    h.start("a", startup=5.0)
    h.start("b", startup=5.0)
    h.report("a", 1, 0.9, t=5.15)
    h.report("b", 1, 0.1, t=5.15)
    assert h.decide() == []  # b is below the kept fraction, yet trains on
    for step in range(2, 65):
        h.report("a", step, 0.9, t=5.0 + 0.15 * step)
        h.report("b", step, 0.1, t=5.0 + 0.15 * step)
    assert PauseTrial("b", "rung 64") in h.decide()  # 9.6 s of training since its launch: now it may


def test_a_trial_reaching_R_stops():
    h = Harness(atoms=1, deadline=1000.0, r=1, R=4, eta=4)
    h.trials_left = 0
    h.start("a")
    h.report("a", 4, 0.5)
    assert StopTrial("a", "max_steps") in h.decide()


def test_nothing_is_launched_that_could_not_report_a_step_before_the_deadline():
    h = Harness(atoms=2, deadline=100.0, r=1, R=50, eta=4)
    h.start("a", startup=5.0)
    h.report("a", 1, 0.5, t=15.0)  # a startup of 5 s and a 10 s step
    h.now = 84.0  # 16 s left: a new trial would report at 15 s
    assert StartTrial(1) in h.decide()
    h.now = 86.0  # 14 s left
    assert not any(isinstance(d, (StartTrial, ResumeTrial)) for d in h.decide())


# ---------------------------------------------------------------- no atom idles


def test_with_nothing_left_to_explore_a_free_atom_resumes_the_best_paused_trial():
    h = Harness(atoms=3, deadline=1000.0, r=1, R=16, eta=4, rung_trust="fixed", scaling=named_scaling("none"))
    _explored(h, {"a": 0.9, "b": 0.5, "c": 0.4})
    for t in "abc":
        h.pause(t)
    h.trials_left = 0  # the pool is used up, and none of the three is in the kept quarter of three
    assert h.decide() == [ResumeTrial("a", 1), ResumeTrial("b", 1), ResumeTrial("c", 1)]


def test_with_nothing_left_to_explore_a_free_atom_grows_a_live_trial_whose_growth_pays():
    h = Harness(atoms=4, deadline=1000.0, r=100, R=200, eta=4, scaling=named_scaling("linear"), resize_cooldown=2)
    h.trials_left = 0
    h.start("a")
    for step in (1, 2):
        h.report("a", step, 0.5, t=10.0 * step)
    # no new trial may start and a's growth pays: the entrance closes, a grows
    assert h.decide() == [CloseEntrance("no new trial is left to start; the leaders grow instead"),
                          ResizeTrial("a", 4, "grow 1->4 (uniform)")]
    flat = Harness(atoms=4, deadline=1000.0, r=100, R=200, eta=4, scaling=named_scaling("none"), resize_cooldown=2)
    flat.trials_left = 0
    flat.start("a")
    for step in (1, 2):
        flat.report("a", step, 0.5, t=10.0 * step)
    assert flat.decide() == []  # more atoms would not speed it up: nothing to do with them


# ---------------------------------------------------------------- the entrance


def _moment(now=50.0, best=0.9, step_time=1.0, startup=2.0, deadline=100.0):
    return Moment(now=now, started_at=0.0, deadline=deadline, best=best, step_time=step_time, startup=startup,
                  rate_one=1.0, longest_run=now)


def test_deadline_entrance_closes_once_a_new_trial_cannot_reach_the_step_the_best_was_first_matched_at():
    by_step = BestByStep()
    for step, score in [(1, 0.3), (10, 0.6), (40, 0.85), (45, 0.9)]:
        by_step.add(step, score)
    entrance = Entrance("deadline", R=100, eta=4, by_step=by_step)
    assert by_step.first_reaching(0.9) == 45 and by_step.first_reaching(0.95) is None
    # 45 steps of 1 s and a 2 s startup: 47 s needed
    assert entrance.close_reason(_moment(now=52.0), can_speed_up=lambda: True) is None  # 48 s left
    reason = entrance.close_reason(_moment(now=54.0), can_speed_up=lambda: True)  # 46 s left
    assert reason is not None and "before step 45" in reason
    assert entrance.close_reason(_moment(now=54.0), can_speed_up=lambda: False) is None  # growing would not pay
    assert entrance.next_time(_moment(now=10.0)) == pytest.approx(100.0 - 47.0)
    # curves that level off early: a trial matched the best at step 5, a newcomer still reaches it
    early = BestByStep()
    early.add(5, 0.9)
    early.add(45, 0.9)
    assert Entrance("deadline", 100, 4, early).close_reason(_moment(now=90.0), can_speed_up=lambda: True) is None


def test_adaptive_entrance_is_the_papers_rule_and_fractions_and_none():
    adaptive = Entrance("adaptive", R=20, eta=4, by_step=BestByStep())
    # T_a = 1, T' = 11: min(R*T_a = 20, eta*T' = 44) = 20
    assert adaptive.close_reason(Moment(11.0, 0.0, 32.0, 0.5, 1.0, 0.0, 1.0, 11.0), lambda: True) is None  # 21 s left
    assert adaptive.close_reason(Moment(13.0, 0.0, 32.0, 0.5, 1.0, 0.0, 1.0, 13.0), lambda: True) is not None  # 19 s
    half = Entrance(0.5, R=20, eta=4, by_step=BestByStep())
    assert half.close_reason(_moment(now=49.9), lambda: True) is None
    assert half.close_reason(_moment(now=50.0), lambda: True)
    assert Entrance("none", 20, 4, BestByStep()).close_reason(_moment(now=99.0), lambda: True) is None


def _leader_at_step_30(R: int, paused_above: bool = False) -> Harness:
    """Two atoms, 29 s left: a (1 s a step) first reported the run's best at step 30, so a trial started now
    could not reach that step; b holds the other atom. ``paused_above``: a paused trial p stands above a."""
    h = Harness(atoms=2, deadline=100.0, r=1, R=R, eta=4, scaling=named_scaling("linear"), resize_cooldown=1)
    h.now = 40.0
    if paused_above:  # p reached rung 16 with a better score there than a's (0.2 > 0.16), and was paused
        h.start("p")
        for step in range(1, 17):
            h.report("p", step, 0.0125 * step, t=h.now + 0.1)
        h.pause("p")
    h.start("a")
    for step in range(1, 31):
        h.report("a", step, 0.01 * step, t=40.0 + step)  # the best (0.3) first came at step 30
    h.start("b")  # b took the other atom
    h.report("b", 1, 0.05, t=70.5)
    h.now = 71.0
    return h


def test_the_entrance_closes_in_a_run_when_exploring_cannot_win_and_a_leader_grows_further():
    h = _leader_at_step_30(R=100)  # a needs 70 s to reach R: more atoms take it further by the deadline
    decisions = h.decide()
    assert decisions == [CloseEntrance(decisions[0].reason), PauseTrial("b", "atoms to a")]
    # no rung pauses after the close: the lowest-standing live trial yields its atom to a's growth


def test_the_entrance_stays_open_while_growth_would_not_take_a_leader_further():
    # a reaches R = 40 on its own atom by the deadline (10 s): growing it would not raise the score it ends
    # with, and exploring goes on
    assert not _closes(_leader_at_step_30(R=40))
    # a paused trial stands above a: a is no leader, and its growth does not close the entrance
    assert not _closes(_leader_at_step_30(R=100, paused_above=True))


def test_next_decision_time_is_when_the_entrance_would_close():
    h = Harness(atoms=2, deadline=100.0, r=1, R=40, eta=4, scaling=named_scaling("linear"))
    h.start("a")
    for step in range(1, 11):
        h.report("a", step, 0.01 * step, t=float(step))
    assert h.scheduler.next_decision_time(h.situation()) == pytest.approx(100.0 - 10.0, abs=1e-3)


# ---------------------------------------------------------------- after the close


def _closed(allocation="uniform", atoms=4):
    h = Harness(atoms=atoms, deadline=1000.0, r=100, R=500, eta=4, scaling=named_scaling("linear"),
                allocation=allocation, resize_cooldown=2)
    for name in "abcd"[:atoms]:
        h.start(name)
    h.commit(EntranceClosed(0.0, "test"))
    for step in (1, 2):
        for name, score in zip("abcd", (0.9, 0.7, 0.5, 0.1)):
            h.report(name, step, score, t=10.0 * step)
    return h


def test_after_the_close_the_lowest_standing_trials_yield_their_atoms_to_the_leaders():
    # uniform: each leader in turn gets one atom; a victim always stands below its leader
    h = _closed("uniform")
    assert h.decide() == [PauseTrial("d", "atoms to a"), PauseTrial("c", "atoms to b")]
    h.ask_to_pause("d")
    h.ask_to_pause("c")
    assert h.decide() == []  # still stopping: the leaders wait for those atoms
    h.commit_exit("d")
    assert h.decide() == [ResizeTrial("a", 2, "grow 1->2 (uniform)")]
    h.resize("a", 2)
    h.commit_exit("c")
    assert h.decide() == [ResizeTrial("b", 2, "grow 1->2 (uniform)")]


def test_top_job_gives_the_best_as_many_atoms_as_its_growth_pays_for():
    h = _closed("top_job")
    assert h.decide() == [PauseTrial("d", "atoms to a"), PauseTrial("c", "atoms to a"),
                          PauseTrial("b", "atoms to a")]  # linear speed-up: all four atoms pay
    for t in "dcb":
        h.ask_to_pause(t)
    assert h.decide() == []
    for t in "dcb":
        h.commit_exit(t)
    assert h.decide() == [ResizeTrial("a", 4, "grow 1->4 (top_job)")]


def test_allocation_none_never_grows_or_yields():
    h = _closed("none")
    assert h.decide() == []


# ---------------------------------------------------------------- kept fractions


def _rungs(levels: int, eta: float = 4, tally: Tally | None = None) -> list[Rung]:
    return [Rung(m, eta, level, tally) for level, m in enumerate((1, 4, 16, 64)[:levels])]


def _arrive(rungs: list[Rung], level: int, scores: dict[str, float]) -> None:
    for trial_id, score in scores.items():
        rungs[level].record(trial_id, score)


def test_a_rung_keeps_successive_halvings_share_where_it_ranks_well_and_half_where_it_tells_nothing():
    assert kept_fraction(1.0, 400, 4) == 0.25
    assert kept_fraction(0.0, 400, 4) == pytest.approx(0.5) and kept_fraction(-0.4, 400, 4) == pytest.approx(0.5)
    # rho 0.5 among 100 trials: z = 2.326, x* = z (1 - sqrt(0.75)) / 0.5 = 0.623, 1 - Phi(x*) = 0.2665
    assert kept_fraction(0.5, 100, 4) == pytest.approx(0.2665, abs=1e-3)
    shares = [kept_fraction(rho, 400, 4) for rho in (0.1, 0.2, 0.3, 0.4)]
    assert shares == sorted(shares, reverse=True) and shares[-1] < shares[0]  # the better it ranks, the fewer
    assert kept_fraction(0.2, 1000, 4) < kept_fraction(0.2, 50, 4)  # the more trials, the harder to be the best


def test_a_correlation_from_few_rows_is_read_at_its_upper_bound_and_from_enough_as_estimated():
    # rho 0.1 from 14 rows: Fisher z 0.100 + 2 / sqrt(11) = 0.703, tanh 0.606
    assert doubt_bound(0.1, 14) == pytest.approx(0.606, abs=1e-3)
    assert doubt_bound(-0.999, 5) < doubt_bound(-0.5, 5) < doubt_bound(0.0, 5) < 1.0  # order kept
    assert doubt_bound(0.1, SETTLED_ROWS) == 0.1 and doubt_bound(-0.3, 400) == -0.3
    assert kept_fraction(doubt_bound(0.1, 14), 400, 4) == 0.25  # the noisy low estimate keeps 1/eta ...
    assert kept_fraction(0.1, 400, 4) > 0.4  # ... which, read as it is, keeps nearly half


def test_a_rung_keeps_more_than_one_in_eta_only_once_enough_trials_show_it_ranks_poorly():
    rng = np.random.default_rng(3)
    rungs: list[Rung] = []
    kept = KeptFractions(2, 4, lambda level: rungs[level])
    rungs.extend(_rungs(2, tally=kept.tally))
    _arrive(rungs, 0, {f"t{i}": float(rng.standard_normal()) for i in range(240)})
    _arrive(rungs, 1, {f"t{i}": float(rng.standard_normal()) for i in range(14)})  # unrelated to rung 0
    assert kept.keep(0) == 0.25  # 14 rows: too few to undo successive halving
    _arrive(rungs, 1, {f"t{i}": float(rng.standard_normal()) for i in range(14, 60)})
    assert kept.keep(0) > 0.4  # 60 rows that still say nothing: the rung keeps nearly half


def test_the_population_correlation_is_recovered_from_a_run_that_chose_who_went_on():
    rng = np.random.default_rng(0)
    n = 4000
    x0 = rng.standard_normal(n)
    x1 = 0.8 * x0 + 0.6 * rng.standard_normal(n)
    final = 0.5 * x1 + math.sqrt(0.75) * rng.standard_normal(n)  # corr(x0, final) = 0.4
    went_on = x0 >= np.quantile(x0, 0.75)  # successive halving: the best quarter reach the next rung ...
    ended = went_on & (x1 >= np.quantile(x1[went_on], 0.75))  # ... and the best quarter of those the end
    rows = [np.zeros((0, 1)), np.column_stack([x0[went_on], x1[went_on]]),
            np.column_stack([x0[ended], x1[ended], final[ended]])]
    cov = population_covariance(rows)
    assert cov[0, 2] / math.sqrt(cov[0, 0] * cov[2, 2]) == pytest.approx(0.4, abs=0.15)
    assert np.corrcoef(x0[ended], final[ended])[0, 1] < 0.25  # what the trials that ended show by themselves
    # too few rows for a variable: the covariance stops before it
    assert population_covariance([rows[0], rows[1][:5]]).shape == (1, 1)


def test_the_rows_hold_each_trial_s_normal_scores_at_the_columns_it_reached():
    low, high, final = Rung(1, 4, 3), Rung(4, 4, 3), Rung(0, 4, 3)
    for trial_id, score in (("a", 0.1), ("b", 0.5), ("c", 0.5), ("d", 0.9)):  # "b" and "c" tie
        low.record(trial_id, score)
    high.record("d", 0.3), high.record("b", 0.7), high.record("x", 0.2)  # "x" skipped the first column
    final.record("b", 0.4)
    rows = latest_rows([low, high, final])
    # a normal score: Phi^-1 of the share of the column below the score (ties share their rank)
    assert rows[1].tolist() == [[NORMAL.inv_cdf(1 - 1.5 / 4), NORMAL.inv_cdf(1 - 0.5 / 3)],  # "b", latest first
                                [NORMAL.inv_cdf(1 - 0.5 / 4), NORMAL.inv_cdf(1 - 1.5 / 3)]]  # "d"
    assert rows[2].tolist() == [[NORMAL.inv_cdf(1 - 1.5 / 4), NORMAL.inv_cdf(1 - 0.5 / 3), NORMAL.inv_cdf(0.5)]]


def test_kept_fractions_follow_the_final_scores_once_trials_end():
    rungs: list[Rung] = []
    kept = KeptFractions(3, 4, lambda level: rungs[level])
    rungs.extend(_rungs(3, tally=kept.tally))
    _arrive(rungs, 0, {f"t{i}": 1.0 - i / 100 for i in range(64)})  # trial i ranks i-th at rung 0
    assert kept.keep(0) == 0.25 and kept.keep(2) == 0.25  # nothing later yet; the top rung keeps 1/eta
    _arrive(rungs, 1, {f"t{i}": 0.5 - i / 100 for i in range(32)})  # the best half go on, in the same order
    _arrive(rungs, 2, {f"t{i}": 0.5 - i / 100 for i in range(16)})
    assert kept.keep(0) == pytest.approx(0.25) and kept.keep(1) == pytest.approx(0.25)
    for i in range(16):  # but they end in the reverse order: the rungs' order told nothing of the end
        kept.finished(f"t{i}", 0.2 + i / 100)
    assert kept.keep(0) == pytest.approx(0.5) and kept.keep(1) == pytest.approx(0.5)
    assert kept.quantile(0) == pytest.approx(0.5)


def test_a_learned_kept_fraction_promotes_trials_just_below_the_cut():
    h = Harness(atoms=1, deadline=10_000.0, r=1, R=64, eta=4)
    scheduler = h.scheduler
    for i in range(16):
        scheduler.bracket.evaluate(f"t{i}", 1, 1.0 - i / 100)
    assert scheduler.kept.keep(0) == 0.25
    assert not scheduler.bracket.rungs[-1].in_top_fraction(1.0 - 5 / 100, scheduler.kept.keep(0))
    for i in range(12):  # at rung 4 they rank in reverse of rung 1
        scheduler.bracket.evaluate(f"t{i}", 4, 0.1 + i / 100)
    assert scheduler.kept.keep(0) == pytest.approx(0.5)
    assert scheduler.bracket.rungs[-1].in_top_fraction(1.0 - 5 / 100, scheduler.kept.keep(0))  # t5 now goes on


def test_hypersched_tells_the_kept_fractions_the_score_each_trial_ended_with():
    h = Harness(atoms=2, deadline=1000.0, r=1, R=8, eta=4)
    h.start("a")
    h.start("b")
    h.report("a", 8, 0.7)  # trained to R
    h.report("b", 3, 0.4)
    h.commit(Exited(h.now, "b", "finished", 3))  # its curve ended at step 3
    h.start("c")
    h.report("c", 2, 0.9)
    h.pause("c")  # paused: it has not ended
    assert h.scheduler.kept.finals.recorded == {"a": 0.7, "b": 0.4}


# ---------------------------------------------------------------- the overhead-aware test


def test_resize_test_on_both_sides_of_the_inequality():
    from hpcsched.schedulers.allocation import allowed_size, worth_resizing

    linear = named_scaling("linear")
    # H' (T - T_o) > (1 + m) H T with H = 1, H' = 2, T = 100, m = 0.1: T_o < 45
    assert worth_resizing(linear, 1, 2, time_left=100, overhead=44.9, margin=0.1)
    assert not worth_resizing(linear, 1, 2, time_left=100, overhead=45.0, margin=0.1)
    assert not worth_resizing(linear, 1, 2, time_left=10, overhead=10, margin=0.0)
    assert worth_resizing(linear, 4, 2, time_left=1, overhead=100, margin=0.1)  # shrinking always passes
    assert not worth_resizing(named_scaling("none"), 1, 8, time_left=100, overhead=0, margin=0.0)
    sqrt = named_scaling("sqrt")
    assert worth_resizing(sqrt, 1, 4, time_left=100, overhead=10, margin=0.1)  # 2*90 > 110
    assert not worth_resizing(sqrt, 1, 2, time_left=100, overhead=25, margin=0.1)  # 1.4*75 = 105 < 110
    assert [allowed_size(a, 4) for a in (1, 3, 4, 6, 9)] == [1, 3, 4, 4, 8]


def test_growth_pays_only_until_the_trial_reaches_R_and_keeps_the_allocation_grid():
    # 1 s a step, 20 s startup, sqrt belief, 1000 s left: growing 1 -> 8 atoms (2.83x) pays for a trial
    # with 200 steps to go but not for one with 20 (after R its atoms are free anyway)
    for step, grows in [(300, True), (480, False)]:
        h = Harness(atoms=8, deadline=1000.0, r=100, R=500, eta=4, resize_cooldown=1, allocation="top_job",
                    scaling=named_scaling("sqrt"))
        h.trials_left = 0
        h.start("a", startup=20.0)
        h.report("a", step, 0.9, t=21.0)
        h.report("a", step + 1, 0.9, t=22.0)
        decisions = [d for d in h.decide() if not isinstance(d, CloseEntrance)]
        assert decisions == ([ResizeTrial("a", 8, "grow 1->8 (top_job)")] if grows else []), step
    grid = Harness(atoms=7, deadline=1000.0, r=100, R=500, eta=4, resize_cooldown=1, allocation="top_job",
                   allocation_grid=4, scaling=named_scaling("linear"))
    grid.trials_left = 0
    grid.start("a")
    grid.report("a", 1, 0.9, t=1.0)
    assert grid.decide()[-1] == ResizeTrial("a", 4, "grow 1->4 (top_job)")  # 7 rounded down to a multiple of 4


def test_a_resize_costs_the_measured_stop_and_a_startup():
    from hpcsched.core.records import Exited, StopRequested

    h = Harness(atoms=2, r=2, R=10, eta=2, scaling=named_scaling("sqrt"))
    h.start("a", startup=2.0)
    h.report("a", 1, 0.5, t=5.0)
    h.commit(StopRequested(6.0, "a", "pause"))
    h.report("a", 2, 0.6, t=7.0)  # the step in progress was trained, not lost
    h.commit(Exited(7.5, "a", "checkpointed", 2))
    assert h.scheduler.resize_overhead == pytest.approx(0.5 + 2.0)
    assert Harness(overhead_aware=False).scheduler.resize_overhead == 0.0


def test_a_rung_passed_while_stopping_for_a_resize_is_not_judged_late():
    from hpcsched.core.records import Exited, StopRequested

    def decisions_after_relaunch(report_while_stopping: bool):
        h = Harness(atoms=4, deadline=1000.0, r=1, R=16, eta=4, allocation="none", rung_trust="fixed")
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


def test_the_entrance_closes_once_no_new_trial_may_start_and_growing_pays():
    entrance = Entrance("deadline", R=100, eta=4, by_step=BestByStep())
    left = Moment(10.0, 0.0, 100.0, 0.5, 1.0, 0.0, 1.0, 10.0, trials_left=0)
    reason = entrance.close_reason(left, can_speed_up=lambda: True)
    assert reason == "no new trial is left to start; the leaders grow instead"
    assert entrance.close_reason(left, can_speed_up=lambda: False) is None


def test_best_by_step_keeps_the_first_step_of_the_best_as_reports_come():
    by_step = BestByStep()
    rng = np.random.default_rng(3)
    reports: list[tuple[int, float]] = []
    for step, score in zip(rng.integers(1, 30, 200), rng.choice([0.1, 0.5, 0.7, 0.9], 200)):
        by_step.add(int(step), float(score))
        reports.append((int(step), float(score)))
        best = max(s for _, s in reports)
        first = min(t for t, s in reports if s == best)
        assert by_step.best == best and by_step.best_first_at == first == by_step.first_reaching(best)
        assert by_step.first_reaching(0.5) == min((t for t, s in reports if s >= 0.5), default=None)
    by_step.add(0, by_step.best)  # a tie at an earlier step
    assert by_step.best_first_at == 0 == by_step.first_reaching(by_step.best)
