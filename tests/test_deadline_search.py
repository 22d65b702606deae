"""The mechanisms that make HyperSched deadline-aware on real curves, on hand-built situations:
rung trust, the finish plan, the deadline entrance, what happens after it closes, and the baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcsched.records import Exited, StopIntent, StopRequested
from hpcsched.scaling import named_scaling
from hpcsched.schedulers.decisions import CloseEntrance, PauseTrial, ResumeTrial, StartTrial, StopTrial
from hpcsched.schedulers.finish import Candidate, FinishPlan, finish_time, plan_finish
from hpcsched.schedulers.hypersched import TRUST_FULL
from hpcsched.schedulers.trust import RungTrust, corrected_for_range, normal_scores, spearman
from hpcsched.scores import ExitOutcome
from tests.harness import Harness

# ---------------------------------------------------------------- rung trust


def test_spearman_matches_the_rank_correlation():
    rng = np.random.default_rng(1)
    x = rng.normal(size=50)
    assert spearman(x, 3 * x + 1) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    y = rng.normal(size=50)
    ranks = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    assert spearman(x, y) == pytest.approx(np.corrcoef(ranks(x), ranks(y))[0, 1])
    assert spearman(x[:2], y[:2]) == 0.0  # too few pairs to say anything


def test_trust_learns_informative_and_uninformative_links_and_chains_them():
    rng = np.random.default_rng(0)
    trust = RungTrust(levels=2)
    assert trust.trust(0) == 1.0  # the prior: successive halving as is
    for _ in range(60):
        p = rng.uniform()
        trust.add_pair(1, p, p + rng.normal(0, 0.01))  # top rung -> R: informative
        trust.add_pair(0, rng.uniform(), rng.uniform())  # lowest rung -> next: noise
    assert trust.link(1) > 0.9
    assert trust.link(0) < 0.35
    assert trust.trust(0) == pytest.approx(trust.link(0) * trust.link(1))


def test_a_few_noisy_top_of_rung_pairs_keep_the_trust_many_lower_it():
    # pairs from trials that passed a rung's cutoff (its top quarter) whose next score is noise:
    # the range correction multiplies the sampling error, so a handful says nothing, hundreds do
    rng = np.random.default_rng(4)
    trust = RungTrust(levels=1)
    for k in range(1, 201):
        trust.add_pair(0, rng.uniform(0.75, 1.0), rng.uniform())
        if k == 8:  # still above the trust from which the rung pauses as successive halving does
            assert trust.link(0) > TRUST_FULL
    assert trust.link(0) < 0.4
    assert trust.pairs(0) == 200


def test_range_correction_restores_a_correlation_seen_on_the_top_quarter():
    rng = np.random.default_rng(2)
    x = rng.normal(size=20000)
    y = 0.8 * x + 0.6 * rng.normal(size=20000)
    top = x > np.quantile(x, 0.75)
    pct = np.argsort(np.argsort(x)) / (len(x) - 1)
    seen = spearman(pct[top], y[top])
    assert seen < 0.6
    assert corrected_for_range(seen, float(normal_scores(pct[top]).std())) == pytest.approx(spearman(x, y), abs=0.05)
    assert corrected_for_range(-0.2, 0.1) == 0.0


def test_an_untrusted_rung_pauses_nobody_a_trusted_one_pauses_as_successive_halving():
    def pauses(links_informative: bool) -> bool:
        h = Harness(atoms=16, deadline=1e6, kind="hypersched", r=1, R=16, eta=4, allocation="none")
        rng = np.random.default_rng(3)
        for _ in range(40):  # pairs for both links (rung 1 -> 4, rung 4 -> R)
            p = rng.uniform()
            for level in (0, 1):
                h.scheduler.trust.add_pair(level, p, p if links_informative else rng.uniform())
        for i, score in enumerate([0.9, 0.8, 0.7, 0.05]):
            h.start(f"t{i}")
            h.report(f"t{i}", 1, score)
        h.start("weak")  # below successive halving's cutoff (0.825), above the very worst
        h.report("weak", 1, 0.3)
        return PauseTrial("weak", "rung 1") in h.decide()

    assert pauses(links_informative=True)
    assert not pauses(links_informative=False)


# ---------------------------------------------------------------- the finish plan


def test_finish_time_counts_a_startup_only_for_a_relaunch():
    linear = named_scaling("linear")
    assert finish_time(Candidate("a", 4, 1), 1, 10, 2.0, linear, startup=5.0) == 12.0
    assert finish_time(Candidate("a", 4, 1), 2, 10, 2.0, linear, startup=5.0) == 11.0
    assert finish_time(Candidate(None, 0, 0), 1, 10, 2.0, linear, startup=5.0) == 25.0


def test_finish_time_counts_the_stop_that_frees_a_started_trials_seat():
    linear = named_scaling("linear")
    # resizing: its own stop, then a startup; paused: the stop of the trial it displaces, then a startup
    assert finish_time(Candidate("a", 4, 1), 2, 10, 2.0, linear, startup=5.0, stop=1.5) == 12.5
    assert finish_time(Candidate("a", 4, 0), 1, 10, 2.0, linear, startup=5.0, stop=1.5) == 18.5
    # already on its atoms: nothing to stop; a new trial displaces nobody
    assert finish_time(Candidate("a", 4, 1), 1, 10, 2.0, linear, startup=5.0, stop=1.5) == 12.0
    assert finish_time(Candidate(None, 0, 0), 1, 10, 2.0, linear, startup=5.0, stop=1.5) == 25.0


def test_pace_times_a_trial_by_the_median_of_its_own_last_steps_as_on_one_atom():
    from hpcsched.scaling import named_scaling
    from hpcsched.schedulers.pace import OWN_STEP_TIMES, Pace

    pace = Pace(0.5, named_scaling("linear"))
    assert pace.step_time("a") is None and pace.startup() is None and pace.stop() is None
    pace.add_report("a", 10.0, 2, 1.0)  # 1 s on 2 atoms under linear scaling: 2 s on one
    assert pace.own_step_time("a") == 2.0 and pace.run_step_time() is None  # the run's: one-atom steps only
    pace.add_report("b", 30.0, 1, 3.0)
    assert pace.step_time(None) == 3.0 and pace.step_time("a") == 2.0 and pace.longest_run == 30.0
    for _ in range(OWN_STEP_TIMES):
        pace.add_report("a", 40.0, 1, 5.0)
    assert pace.own_step_time("a") == 5.0  # the oldest measurement left the window
    pace.forget("a")
    assert pace.step_time("a") == pace.run_step_time()
    pace.add_stop(-1.0)  # a clock step backwards counts as an instant stop, not a negative one
    assert pace.stop() == 0.0


def test_finish_time_uses_a_candidates_own_step_time_where_measured():
    linear = named_scaling("linear")
    assert finish_time(Candidate("a", 4, 1, step_time=3.0), 1, 10, 2.0, linear, startup=5.0) == 18.0
    assert finish_time(Candidate("a", 4, 0, step_time=3.0), 2, 10, 2.0, linear, startup=5.0) == 14.0


def test_the_plan_times_each_candidate_by_its_own_steps():
    # configurations differ in cost: a takes a second a step, b three; both are at step 4 of 10
    h = Harness(atoms=2, deadline=30.0, kind="hypersched", r=5, R=10, eta=4, allocation="none")
    h.start("a")
    h.start("b")
    for trial, step, t in (("a", 1, 1), ("a", 2, 2), ("b", 1, 3), ("a", 3, 3), ("a", 4, 4),
                           ("b", 2, 6), ("b", 3, 9), ("b", 4, 12)):
        h.report(trial, step, 0.5 + step / 100, t=float(t))
    plan = h.scheduler.finish_plan(h.situation())
    assert plan is not None and set(plan.ids) == {"a", "b"}
    assert plan.need == pytest.approx(18.0)  # b's 6 steps at its own 3 s, not at the run's median
    assert plan.fits  # 18 s left


def test_plan_takes_the_most_finalists_that_reach_R_in_time():
    sqrt = named_scaling("sqrt")
    ranked = [Candidate(f"t{i}", 2, 1) for i in range(8)]
    # 8 atoms, R = 10, 1 s per step: on 1 atom 8 s, on 2 atoms 8/1.4 + 1 s, on 4 atoms 8/2 + 1 s
    plan = plan_finish(ranked, total=8, cap=8, grid=1, R=10, step_time=1.0, scaling=sqrt, startup=1.0, time_left=9.0)
    assert plan.fits and plan.atoms_each == 1 and len(plan.finalists) == 8 and plan.need == 8.0
    plan = plan_finish(ranked, total=8, cap=8, grid=1, R=10, step_time=1.0, scaling=sqrt, startup=1.0, time_left=7.0)
    assert plan.fits and plan.atoms_each == 2 and plan.ids == ("t0", "t1", "t2", "t3")
    plan = plan_finish(ranked, total=8, cap=8, grid=1, R=10, step_time=1.0, scaling=sqrt, startup=1.0, time_left=2.0)
    assert not plan.fits  # fidelity-limited: not even one trial on every atom reaches R


def test_plan_fills_missing_candidates_with_fresh_trials_and_share_cuts_finalists():
    none = named_scaling("none")
    plan = plan_finish([Candidate("a", 9, 1)], total=4, cap=1, grid=1, R=10, step_time=1.0, scaling=none,
                       startup=0.0, time_left=5.0)
    assert not plan.fits and plan.ids == ("a",) and len(plan.finalists) == 4  # fresh trials need 10 s
    plan = plan_finish([Candidate("a", 9, 1)], total=4, cap=1, grid=1, R=10, step_time=1.0, scaling=none,
                       startup=0.0, time_left=5.0, share=0.25)
    assert plan.fits and plan.ids == ("a",) and plan.need == 1.0


# ---------------------------------------------------------------- the deadline entrance and after it


def test_deadline_entrance_closes_at_once_when_no_trial_can_reach_R():
    h = Harness(atoms=2, deadline=30.0, kind="hypersched", r=2, R=50, eta=4, allocation="none")
    h.start("a")
    h.start("b")
    assert not any(isinstance(d, CloseEntrance) for d in h.decide())  # no step time measured yet
    h.report("a", 1, 0.5, t=1.0)
    h.report("b", 1, 0.4, t=1.0)
    decisions = h.decide()
    closes = [d for d in decisions if isinstance(d, CloseEntrance)]
    assert closes and "fidelity-limited" in closes[0].reason


def test_deadline_entrance_closes_when_the_best_candidates_need_the_time_left():
    # one step per second on one atom, 2 atoms that never grow, R = 20: with one trial running the
    # second finalist is a fresh trial needing 20 s, so the entrance closes with one step of slack
    # left, at 21 s before the deadline, and not a step earlier
    h = Harness(atoms=2, deadline=40.0, kind="hypersched", r=100, R=20, eta=4, allocation="none")
    h.start("a")
    closed_at = None
    for k in range(1, 20):
        h.report("a", k, 0.5, t=float(k))
        if any(isinstance(d, CloseEntrance) for d in h.decide()):
            closed_at = k
            break
    assert closed_at == 19


def test_the_deadline_entrance_names_the_moment_it_closes_between_reports():
    # as above: the close rule turns at 19 s, while the trial's next report would come at 20 s; the
    # scheduler names that moment, so a simulated loop wakes then, as a real one polling does
    h = Harness(atoms=2, deadline=40.0, kind="hypersched", r=100, R=20, eta=4, allocation="none")
    h.start("a")
    assert h.scheduler.next_decision_time(h.situation()) == math.inf  # no step time measured yet
    for k in range(1, 4):
        h.report("a", k, 0.5, t=float(k))
        assert not any(isinstance(d, CloseEntrance) for d in h.decide())
    due = h.scheduler.next_decision_time(h.situation())
    assert due == pytest.approx(19.0, abs=1e-3)
    h.now = due - 0.01
    assert not any(isinstance(d, CloseEntrance) for d in h.decide())
    h.now = due
    assert any(isinstance(d, CloseEntrance) for d in h.decide())
    assert h.scheduler.next_decision_time(h.situation()) == math.inf  # closed: nothing timed is left


def test_one_epoch_names_its_switch_from_screening_to_training():
    h = Harness(atoms=1, deadline=100.0, kind="one_epoch", r=1, R=10)
    h.start("a")
    h.report("a", 1, 0.5, t=2.0)
    h.decide()
    # max(D - (R - r) * T_a, D / 2) = max(100 - 9 * 2, 50) = 82
    assert h.scheduler.next_decision_time(h.situation()) == pytest.approx(82.0)


def test_after_close_finalists_are_not_paused_at_rungs_and_paused_finalists_swap_in():
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=1, R=8, eta=4, allocation="none",
                rung_trust="fixed", speculative=True)
    for name in ("a", "b", "c"):
        if name == "c":
            h.pause("a")  # a reached rung 4 with the best score, then was paused
            h.start("c")
        else:
            h.start(name)
        for step in range(1, 5 if name == "a" else 2):
            h.report(name, step, {"a": 0.9, "b": 0.5, "c": 0.6}[name] + step / 100, t=float(step))
    h.now = 96.0  # a (step 4) needs 4 s, b (step 1) 7 s: no 2-finalist plan fits, the entrance closes
    decisions = h.decide()
    assert any(isinstance(d, CloseEntrance) for d in decisions)
    assert h.scheduler.closed
    # the finalists are a (highest rung) and c (best at rung 1); a is paused; c's rung-1 verdict from
    # before the close is withdrawn (pausing a finalist would only relaunch it), so b, the live
    # non-finalist, makes room for a
    assert PauseTrial("b", "make room for finalist a") in decisions
    assert not any(isinstance(d, PauseTrial) and d.trial_id == "c" for d in decisions)
    assert not any(isinstance(d, ResumeTrial) for d in decisions)  # no atom is free until b exits


def test_after_close_a_finalist_below_the_cutoff_keeps_training():
    h = Harness(atoms=2, deadline=9.0, kind="hypersched", r=1, R=8, eta=4, allocation="none",
                rung_trust="fixed")
    h.start("a")
    h.start("b")
    h.report("a", 1, 0.9, t=1.0)
    h.report("b", 1, 0.1, t=1.0)
    (close,) = [d for d in h.decide() if isinstance(d, CloseEntrance)]  # 8 s left: both need 7 s, a step of slack
    assert "to train the best 2 (a, b) to R=8" in close.reason  # the log says which trials it plans to finish
    for k in range(2, 6):
        h.report("b", k, 0.1 + k / 100, t=float(k))
        assert not any(isinstance(d, PauseTrial) for d in h.decide())


def test_after_close_no_new_trial_starts_once_it_could_not_beat_the_best():
    def decisions_with(time_left: float):
        h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=1, R=16, eta=4, allocation="none")
        h.start("a")
        h.start("b")
        h.report("b", 1, 0.3, t=1.0)
        for step in range(1, 7):  # a: rung 1 at 0.55, rung 4 at 0.70, best 0.80 at step 6
            h.report("a", step, 0.5 + step * 0.05, t=float(step))
        h.pause("b")  # b was paused at rung 1, below a
        h.now = 100.0 - time_left
        return h.decide()

    # 10.5 s left: a new trial reaches step 10, rung 4 at most, where nobody matched 0.80
    late = decisions_with(10.5)
    assert any(isinstance(d, CloseEntrance) for d in late)
    assert StartTrial(1) not in late
    assert ResumeTrial("b", 1) in late  # the free atom trains the best paused candidate further
    # with R = 10, 10.5 s left is enough to train a new trial fully: it may start
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=1, R=10, eta=4, allocation="none")
    h.start("a")
    for step in range(1, 7):
        h.report("a", step, 0.5 + step * 0.05, t=float(step))
    h.now = 89.5
    assert not h.scheduler._exploring_futile(h.situation())
    h.now = 95.5  # 4.5 s left: step 4 at most, where a recorded 0.70 < 0.80
    assert h.scheduler._exploring_futile(h.situation())


def test_paper_configuration_keeps_the_adaptive_entrance():
    # R = 50 steps of 1 s cannot fit in 29 s: the deadline entrance closes at the first measured
    # step; the paper's adaptive rule stays open while time_left >= min(R*T_a, eta*T') = 4 s
    def closes(**fields) -> bool:
        h = Harness(atoms=2, deadline=30.0, kind="hypersched", r=2, R=50, eta=4, allocation="none", **fields)
        h.start("a")
        h.report("a", 1, 0.5, t=1.0)
        return any(isinstance(d, CloseEntrance) for d in h.decide())

    assert closes()
    assert not closes(entrance="adaptive", after_close="paper", rung_trust="fixed", retrospective="all",
                      backfill=False)


# ---------------------------------------------------------------- baselines


def test_random_search_trains_every_trial_to_R_first_in_first_out():
    h = Harness(atoms=2, deadline=100.0, kind="random", R=3, atoms_per_trial=1)
    assert h.decide() == [StartTrial(1), StartTrial(1)]
    h.start("a")
    h.start("b")
    h.report("a", 1, 0.1)
    assert h.decide() == []  # nothing paused, nothing free
    h.report("a", 3, 0.2)
    assert h.decide() == [StopTrial("a", "max_steps")]


def test_one_epoch_screens_at_r_then_trains_the_best_screened_to_R():
    h = Harness(atoms=1, deadline=20.0, kind="one_epoch", r=1, R=5, atoms_per_trial=1)
    assert h.decide() == [StartTrial(1)]
    for i, score in enumerate([0.3, 0.9, 0.5]):
        name = f"t{i}"
        h.start(name)
        h.report(name, 1, score, t=float(i + 1))
        assert PauseTrial(name, "screened at step 1") in h.decide()
        h.commit(StopRequested(h.now, name, "pause"))
        h.commit(Exited(h.now, name, "checkpointed", 1))
    h.now = 16.0  # switch at max(20 - 4 * 1, 10) = 16 s
    assert h.decide() == [ResumeTrial("t1", 1)]



def test_one_epoch_pauses_a_trial_still_screening_at_the_switch_and_ranks_it_with_the_others():
    h = Harness(atoms=2, deadline=20.0, kind="one_epoch", r=1, R=5, atoms_per_trial=1)
    h.start("a")
    h.start("b")
    h.report("a", 1, 0.3, t=1.0)
    assert PauseTrial("a", "screened at step 1") in h.decide()
    h.commit(StopRequested(h.now, "a", "pause"))
    h.commit(Exited(h.now, "a", "checkpointed", 1))
    h.now = 16.0  # the switch (max(20 - 4 * 1, 10)); b is still in its first step
    assert h.decide() == [ResumeTrial("a", 1)]
    h.start("a")
    h.report("b", 1, 0.9, t=16.5)
    assert PauseTrial("b", "screened at step 1") in h.decide()  # not trained on as if it had been chosen
    h.commit(StopRequested(h.now, "b", "pause"))
    h.commit(Exited(h.now, "b", "checkpointed", 1))
    assert h.decide() == [ResumeTrial("b", 1)]  # the best screened, on the atom it left

# ---------------------------------------------------------------- "could it still win?", promotion order, swaps


def test_gain_bounds_sum_the_largest_gains_up_to_R_and_cover_only_scores_a_gain_was_seen_from():
    from hpcsched.schedulers.gains import GainBounds

    gains = GainBounds(2)
    assert gains.bound(0) is None and not gains.beyond_reach(0, -100.0, 1.0)  # no evidence: no filter
    gains.note(0, 0.5, 0.1)
    assert gains.bound(0) is None  # nobody seen from the top rung to R yet
    gains.note(1, 0.6, 0.2)
    gains.note(0, 0.3, 0.05)  # a smaller gain from lower down: the largest stays
    assert gains.bound(1) == pytest.approx(0.2) and gains.bound(0) == pytest.approx(0.3)
    assert gains.beyond_reach(0, 0.55, 0.9) and not gains.beyond_reach(0, 0.65, 0.9)
    assert gains.covers(0, 0.3) and not gains.covers(0, 0.29) and not gains.covers(1, 0.59)


def test_live_trials_follow_launches_stop_requests_and_exits():
    from hpcsched.schedulers.live import LiveTrials

    live = LiveTrials()
    live.launched("a", 2, None)
    live.launched("b", 1, 0.4)
    assert live.atoms == {"a": 2, "b": 1} and live.total_atoms == 3 and live.grown == {"a"}
    assert live.ranking.best() == "b"  # a has no score yet
    live.scored("a", 0.7, 1)
    assert live.ranking.best() == "a" and live.since_launch["a"] == 1
    live.stop_requested("a", 10.0, resize=True, shrink=True)  # a relaunch at a smaller size frees nothing
    assert "a" not in live.atoms and live.total_atoms == 1 and live.shrinking == {"a"} and live.freeing == {}
    live.reported_at("a", 12.0)  # the step in progress when asked was trained: its stop counts from then
    assert live.exited("a") == 12.0 and live.shrinking == set() and live.stopping == {}
    live.launched("a", 1, 0.7)
    live.stop_requested("b", 20.0, resize=False, shrink=False)  # a pause frees b's atom when it exits
    assert live.freeing == {"b": 1} and live.stopping == {"b": 20.0} and live.atoms == {"a": 1}
    live.stop_requested("b", 25.0, resize=False, shrink=False)  # asked again: the first request counts
    assert live.freeing == {"b": 1} and live.exited("b") == 20.0 and live.freeing == {} and live.exited("c") is None
    assert live.grown == set() and live.total_atoms == 1


def test_candidates_stand_by_the_highest_rung_reached_then_the_score_recorded_there():
    from hpcsched.schedulers.candidates import NO_LEVEL, Candidates

    recorded: list[dict[str, float]] = [{}, {}]  # what rungs 0 and 1 recorded, by trial
    book = Candidates(2, lambda level: recorded[level])
    assert book.track("a", 1, 0.2) == [] and book.level("a") == NO_LEVEL  # below the first rung: last score
    book.track("b", 1, 0.3)
    assert list(book.best_first()) == ["b", "a"]
    recorded[0]["a"] = 0.25
    assert book.track("a", 2, 0.25) == [0] and book.level("a") == 0
    recorded[0]["b"] = 0.9
    recorded[1]["b"] = 0.95  # b jumped both rungs in one report (steps skipped)
    assert book.track("b", 4, 0.95) == [0, 1] and book.level("b") == 1 and book.steps("b") == 4
    book.track("c", 1, 0.99)  # the best score, but no rung yet
    assert list(book.best_first()) == ["b", "a", "c"]
    assert book.standing("b") > book.standing("a") > book.standing("c")
    recorded[0]["d"] = 0.5
    book.track("d", 3, 0.1)  # same rung as a, a better score recorded there (whatever it reports since)
    assert book.standing("d") > book.standing("a") and book.track("a", 3, 0.1) == []  # a stays filed at 0.25
    assert book.standing("d") > book.standing("a")
    book.note_score("a", 0.25)
    book.note_score("a", 0.1)
    assert book.best_score("a") == 0.25 and book.best_score("x") == -math.inf
    book.drop("a")
    assert "a" not in book.best_first() and book.level("a") == NO_LEVEL and book.steps("a") == 0
    assert book.best_score("a") == -math.inf and book.standing("a") == (NO_LEVEL, -math.inf)


def test_a_trial_that_could_not_beat_the_best_even_with_the_largest_gain_seen_is_paused():
    # rungs at 1 and 2 below R = 4; half kept at each (rung_trust fixed, eta 2)
    h = Harness(atoms=2, deadline=1000.0, kind="hypersched", r=1, R=4, eta=2, allocation="none",
                rung_trust="fixed")
    h.trials_left = 0
    assert h.scheduler.gains.bound(0) is None  # nothing completed yet: no bound, no filter
    # a: +0.1 from rung 1 to 2, +0.2 from 2 to R; e, from further behind: +0.05, +0.1
    for name, scores in (("a", (0.6, 0.7, 0.8, 0.9)), ("e", (0.3, 0.35, 0.4, 0.45))):
        h.start(name)
        for step, score in enumerate(scores, start=1):
            h.report(name, step, score, t=h.now + 1.0)
        assert h.decide() == [StopTrial(name, "max_steps")]
        h.commit(StopRequested(h.now, name, StopIntent.STOP))
        h.commit(Exited(h.now, name, ExitOutcome.FINISHED, 4))
    assert h.scheduler.gains.bound(1) == pytest.approx(0.2) and h.scheduler.gains.bound(0) == pytest.approx(0.3)

    def arrive(name: str, score: float) -> list:
        h.start(name)
        h.report(name, 1, score, t=h.now + 1.0)
        decisions = h.decide()
        if PauseTrial(name, "rung 1") in decisions:
            h.pause(name)
        return decisions

    assert PauseTrial("f1", "rung 1") in arrive("f1", 0.1)  # below half of rung 1
    assert PauseTrial("f2", "rung 1") in arrive("f2", 0.2)
    decisions = arrive("b", 0.58)  # second of five at rung 1, so kept by rank, but 0.58 + 0.3 < 0.9
    assert PauseTrial("b", "rung 1") in decisions
    assert h.scheduler.bracket.best_promotable() is None  # nor promoted later
    assert PauseTrial("c", "rung 1") not in arrive("c", 0.61)  # 0.61 + 0.3 could still reach 0.9
    for i, score in enumerate((0.05, 0.15, 0.12, 0.08)):
        assert PauseTrial(f"g{i}", "rung 1") in arrive(f"g{i}", score)
    # x: fifth of eleven at rung 1, kept by rank; 0.25 + 0.3 < 0.9, but nobody was measured from a
    # score that low there (e from 0.3 is the lowest): a late bloomer may gain more, so no pause
    assert 0.25 + h.scheduler.gains.bound(0) < 0.9
    assert PauseTrial("x", "rung 1") not in arrive("x", 0.25)


def test_promotion_goes_to_the_paused_trial_that_stands_highest_in_its_own_rung():
    from hpcsched.schedulers.rungs import TopFractionBracket

    def bracket(by_standing: bool) -> TopFractionBracket:
        b = TopFractionBracket(1, 16, 4, by_standing=by_standing)  # rungs at 1 and 4
        high, low = b.rungs  # highest first
        for i, score in enumerate((0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05)):
            high.record(f"h{i}", score)
        b.pause_at("h2", high)  # third of 12 at rung 4: inside the top quarter
        for i, score in enumerate((0.9, 0.5, 0.4, 0.3)):
            low.record(f"l{i}", score)
        b.pause_at("l0", low)  # the best at rung 1
        return b

    assert bracket(by_standing=False).best_promotable() == "h2"  # ASHA: the highest rung first
    assert bracket(by_standing=True).best_promotable() == "l0"  # standing 0 of 4 beats 2 of 12


def _swap_scenario(time_left: float, speculative: bool = True):
    """a reached rung 8 (one step a second, 0.98 there) and was paused; b, c, d run below the first
    rung; after the close the plan's one finalist is a, and no atom is free."""
    h = Harness(atoms=3, deadline=100.0, kind="hypersched", r=2, R=20, eta=4, allocation="none",
                speculative=speculative)
    h.trials_left = 0
    for name in ("a", "b", "c"):
        h.start(name)
    for step in range(1, 9):
        h.report("a", step, 0.9 + step / 100, t=float(step))
    # speculative: a passes (nobody to compare with); ASHA's rungs: alone, it is not in rung 8's top quarter
    assert h.decide() == ([] if speculative else [PauseTrial("a", "rung 8")])
    h.pause("a")
    h.start("d")
    for name, score in (("b", 0.5), ("c", 0.4), ("d", 0.3)):
        h.report(name, 1, score, t=9.0)
    assert h.decide() == []
    h.scheduler.closed = True
    h.scheduler.finish_plan = lambda situation: FinishPlan(1, (Candidate("a", 8, 0),), 12.0, time_left >= 12.0)
    h.now = 100.0 - time_left
    return h


def test_a_paused_finalist_takes_one_live_trials_place_and_waits_for_it():
    h = _swap_scenario(time_left=15.0)  # a needs 12 s to reach R
    assert h.decide() == [PauseTrial("d", "make room for finalist a")]  # the lowest-ranked live trial
    h.commit(StopRequested(h.now, "d", StopIntent.PAUSE, reason="make room for finalist a"))
    h.now += 0.5
    assert h.decide() == []  # d is still stopping: nobody else is paused for a
    h.commit(Exited(h.now, "d", ExitOutcome.CHECKPOINTED, 1))
    assert ResumeTrial("a", 1) in h.decide()


def test_a_paused_finalist_takes_the_atom_of_a_trial_leaving_anyway_instead_of_pausing_another():
    h = _swap_scenario(time_left=15.0)
    h.commit(StopRequested(h.now, "b", StopIntent.PAUSE, reason="rung 2"))
    assert h.decide() == []  # b's atom comes free: nobody is paused for a
    h.commit(Exited(h.now, "b", ExitOutcome.CHECKPOINTED, 1))
    assert ResumeTrial("a", 1) in h.decide()


def test_a_paused_finalist_resumes_on_the_plans_allocation_when_the_atoms_are_free():
    h = _swap_scenario(time_left=15.0)
    for name in ("b", "c"):
        h.pause(name)
    h.scheduler.finish_plan = lambda situation: FinishPlan(2, (Candidate("a", 8, 0),), 7.0, True)
    assert ResumeTrial("a", 2) in h.decide()  # relaunched bigger at once, no resize later


def test_no_trial_is_paused_for_a_finalist_whose_rung_score_it_beats_if_it_reaches_R_itself():
    # b, c, d pass rung 2 (0.5, 0.4, 0.3 there: d ranks lowest), then d reports 0.99 at step 3, above
    # a's 0.98 at rung 8, at a second a step: 17 s to R. With 20 s left it would pass that rung ahead of
    # a and reach R itself: the next lowest-ranked trial makes room instead. With 15 s left, d would
    # not reach R: it makes room for a, which does (the run then has a model trained to R).
    for time_left, victim in ((20.0, "c"), (15.0, "d")):
        h = _swap_scenario(time_left=time_left, speculative=False)  # rung verdicts at rungs only
        for name, score in zip("bcd", (0.5, 0.4, 0.3)):
            h.report(name, 2, score, t=10.0)
        h.decide()  # rung verdicts (and a seat) that the test does not carry out
        h.report("d", 3, 0.99, t=11.0)
        h.now = 100.0 - time_left
        assert h.decide() == [PauseTrial(victim, "make room for finalist a")], time_left


def test_no_swap_for_a_finalist_that_cannot_reach_R_in_the_time_left():
    h = _swap_scenario(time_left=10.0)  # a cannot reach R: a swap would trade one partial run for another
    assert h.decide() == []


def _endgame(allocation: str, h_reports: bool = True) -> Harness:
    """a completed R (gains +0.1 rung 1 -> 2, +0.2 rung 2 -> R); b and c were paused at rung 1; f
    (the finalist, at step 3 with 0.99, three seconds a step) and h (0.65 at rung 1: it could still
    win when it passed there) run on one atom each; the entrance is closed, 2.5 s are left."""
    h = Harness(atoms=2, deadline=1000.0, kind="hypersched", r=1, R=4, eta=2, allocation=allocation,
                rung_trust="fixed", scaling=named_scaling("sqrt"), resize_cooldown=1)
    h.trials_left = 0
    h.start("a")
    for step, score in enumerate((0.6, 0.7, 0.8, 0.9), start=1):
        h.report("a", step, score, t=float(step))
    h.decide()
    h.commit(StopRequested(h.now, "a", StopIntent.STOP))
    h.commit(Exited(h.now, "a", ExitOutcome.FINISHED, 4))
    for name, score in (("b", 0.1), ("c", 0.2)):
        h.start(name)
        h.report(name, 1, score, t=h.now + 1)
        assert PauseTrial(name, "rung 1") in h.decide()
        h.pause(name)
    h.start("f")
    h.start("h")
    h.report("f", 1, 0.85, t=h.now + 1)
    if h_reports:
        h.report("h", 1, 0.65)  # 0.65 + 0.3 >= 0.9: it may still win, and it ranks second of five
    assert h.decide() == []
    h.report("f", 2, 0.9, t=h.now + 3)
    h.report("f", 3, 0.99, t=h.now + 3)  # now h cannot: 0.65 + 0.3 < 0.99
    assert h.decide() == []
    h.scheduler.closed = True
    h.scheduler.finish_plan = lambda situation: FinishPlan(1, (Candidate("f", 3, 1),), 1.0, True)
    h.now = 997.5
    return h


def test_after_close_a_trial_that_can_neither_finish_nor_win_gives_its_atom_to_a_finalist_that_grows():
    h = _endgame("uniform")
    # h cannot reach R, and 0.65 + 0.3 < 0.99; f needs 3 s on one atom, 3 / 1.4 s on two, and
    # 1.4 x 2.5 s of work > 1.1 x 2.5
    assert h.decide() == [PauseTrial("h", "atoms to finalist f")]
    h.commit(StopRequested(h.now, "h", StopIntent.PAUSE, reason="atoms to finalist f"))
    assert h.decide() == []  # one such pause at a time; the freed atom waits for f's growth


def test_of_the_live_trials_that_can_neither_finish_nor_win_the_one_standing_lowest_yields():
    # q passed rung 2 (level 1), second there; s passed only rung 1 (level 0), first there: s stands lower
    h = Harness(atoms=3, deadline=1000.0, kind="hypersched", r=1, R=4, eta=2, allocation="none",
                rung_trust="fixed")
    for name in ("p", "q", "s"):
        h.start(name)
    for name, scores in (("p", (0.9, 0.95)), ("q", (0.8, 0.5)), ("s", (0.85,))):
        for step, score in enumerate(scores, start=1):
            h.report(name, step, score)
    scheduler = h.scheduler
    assert scheduler.candidates.level("q") == 1 and scheduler.candidates.level("s") == 0
    scheduler._hopeless = lambda trial_id, atoms, situation: trial_id in ("q", "s")
    assert scheduler._hopeless_live(h.situation(), finalists=set(), leaving=set()) == "s"


def test_after_close_no_atom_goes_to_a_paused_trial_that_can_neither_finish_nor_win():
    h = _endgame("none")
    assert h.decide() == []  # no growth to give an atom to: h trains on
    h.pause("h")
    assert h.decide() == []  # h, b and c could not reach R or beat 0.99: the atom is not handed to them


def test_after_close_a_finalist_that_reaches_R_as_it_runs_takes_no_atom_for_growth():
    h = _endgame("uniform", h_reports=False)
    h.now = 996.5  # 3.5 s left: f needs 3 s on its one atom, a restart could only cost it R; h
    assert h.decide() == []  # (4 steps from R, best rung within reach 2) could yield, but need not


def test_after_close_a_trial_below_the_first_rung_that_cannot_win_yields_as_a_new_trial_would():
    h = _endgame("uniform", h_reports=False)
    # h has no rung score; in the 2.5 s left it reaches rung 2 at best, where nobody matched 0.99
    assert h.decide() == [PauseTrial("h", "atoms to finalist f")]


def test_a_resize_costs_the_measured_stop_and_a_startup():
    h = Harness(atoms=2, kind="hypersched", r=2, R=10, eta=2, scaling=named_scaling("sqrt"))
    h.start("a", startup=2.0)
    h.report("a", 1, 0.5, t=5.0)
    h.commit(StopRequested(6.0, "a", StopIntent.PAUSE))
    h.report("a", 2, 0.6, t=7.0)  # the step in progress was trained, not lost
    h.commit(Exited(7.5, "a", ExitOutcome.CHECKPOINTED, 2))
    assert h.scheduler.resize_overhead == pytest.approx(0.5 + 2.0)


def test_no_atom_is_held_back_for_a_growth_that_no_longer_pays():
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=2, R=50, eta=2, scaling=named_scaling("sqrt"))
    h.start("a", startup=3.0)
    h.report("a", 1, 0.5, t=4.0)
    assert h.scheduler._growth_demand(h.situation()) == 1  # 1.4 x (96 - 3) > 1.1 x 96
    h.now = 88.0  # 12 s left: 1.4 x 9 < 1.1 x 12, so the atom is spare, not kept for a's growth
    assert h.scheduler._growth_demand(h.situation()) == 0


def test_no_atom_is_held_back_for_a_growth_that_the_resize_cooldown_defers_past_paying():
    def demand(cooldown: int, now: float) -> int:
        h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=2, R=50, eta=2, scaling=named_scaling("sqrt"),
                    resize_cooldown=cooldown)
        h.start("a", startup=3.0)
        h.report("a", 1, 0.5, t=13.0)  # 10 s a step after its startup
        h.now = now
        return h.scheduler._growth_demand(h.situation())

    # with 87 s left, a may grow after 4 more reports (40 s): 1.4 x (47 - 3) > 1.1 x 47
    assert demand(cooldown=5, now=13.0) == 1
    # with 50 s left it would grow only in the last 10 s: 1.4 x (10 - 3) < 1.1 x 10; the atom is spare
    assert demand(cooldown=5, now=50.0) == 0
    assert demand(cooldown=1, now=50.0) == 1  # past its cooldown: 1.4 x (50 - 3) > 1.1 x 50


def test_no_trial_starts_that_could_not_report_a_step_before_the_deadline():
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=2, R=50, eta=2, entrance="none")
    h.start("a", startup=2.0)
    for step in range(1, 4):
        h.report("a", step, 0.5, t=2.0 + step)
    h.now = 96.5  # 3.5 s left: a startup (2 s) and a step (1 s) fit
    assert StartTrial(1) in h.decide()
    h.now = 97.5  # 2.5 s left: it would start, but not report
    assert not any(isinstance(d, StartTrial) for d in h.decide())


def _rescue(time_left: float, g_top: float = 0.86, cooldown: int = 1) -> Harness:
    """f and g run on one atom each, a step a second; f reached rung 8 (0.88 there, its best), g,
    started later, only rung 2 (above f's 0.82 there: each is judged on the highest rung it passed,
    and nobody is paused), ``g_top`` at its step 3; nobody has completed R (no gain is known, so
    nobody is hopeless). The entrance closed with one finalist, f, planned on both atoms;
    ``time_left`` is left."""
    h = Harness(atoms=2, deadline=100.0, kind="hypersched", r=2, R=20, eta=2, allocation="uniform",
                scaling=named_scaling("sqrt"), resize_cooldown=cooldown, speculative=True, retrospective="current")
    h.trials_left = 0
    h.start("f")
    h.start("g")
    for step in range(1, 9):
        h.report("f", step, 0.8 + step / 100, t=float(step))
        if step > 5:  # g started later: f has passed rung 4 when g reaches rung 2
            h.report("g", step - 5, g_top - (8 - step) / 100)
        assert h.decide() == []
    h.scheduler.closed = True
    h.scheduler.finish_plan = lambda situation: FinishPlan(2, (Candidate("f", 8, 1, 1.0),), 12 / 1.4, True)
    h.now = 100.0 - time_left
    return h


def test_after_close_a_partial_run_below_the_finalist_gives_it_the_atoms_it_needs_to_reach_R():
    # f needs 12 s on its one atom, 12 / 1.4 = 8.6 s on two: with 10 s left only growing trains it to
    # R. g cannot reach R (17 steps) and ranks below f; exploring is not futile (f set rung 8's best)
    h = _rescue(time_left=10.0)
    assert h.decide() == [PauseTrial("g", "atoms to finalist f")]


def test_after_close_no_partial_run_is_paused_for_a_finalist_that_reaches_R_without_it_or_not_at_all():
    assert _rescue(time_left=15.0).decide() == []  # f reaches R on its one atom
    assert _rescue(time_left=8.0).decide() == []  # f misses R even on two: g trains on


def test_after_close_a_partial_run_as_good_as_the_finalist_with_less_training_is_not_paused_for_it():
    assert _rescue(time_left=10.0, g_top=0.88).decide() == []  # 0.88 at step 3, as f at step 8


def test_after_close_no_partial_run_is_paused_for_a_finalist_that_may_not_grow_yet():
    # f has reported 8 times since its launch; with a cooldown of 9 it may not grow: g's atom would idle
    assert _rescue(time_left=10.0, cooldown=9).decide() == []
    assert _rescue(time_left=10.0, cooldown=8).decide() == [PauseTrial("g", "atoms to finalist f")]
