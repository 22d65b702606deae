"""The lowest rung's cut checked by its runner-ups (schedulers/runner_ups.py), on hand-built rungs."""

import pytest

from hpcsched.core.scaling import named_scaling
from hpcsched.schedulers.decisions import ResumeTrial
from hpcsched.schedulers.kept import KeptFractions
from hpcsched.schedulers.pace import Pace
from hpcsched.schedulers.rungs import Rung, TopFractionBracket
from hpcsched.schedulers.runner_ups import RunnerUps
from tests.harness import Harness


def _pace(step_times: dict[str, float]) -> Pace:
    pace = Pace(0.9, named_scaling("linear"))
    pace.quick_wanted = True  # (as runner-ups still to be chosen ask)
    for trial_id, seconds in step_times.items():
        pace.add_report(trial_id, 1, seconds, seconds, 1, seconds)
    return pace


def _bracket(step_times: dict[str, float]) -> TopFractionBracket:
    """Rungs at steps 1, 4 and 16 (R = 64) keeping a quarter, the lowest rung's cut checked by 4 runner-ups."""
    bracket = TopFractionBracket(1, 64, 4, quantile=lambda level: 0.75)
    bracket.runner_ups = RunnerUps(4, 2, 16, _pace(step_times), keep=lambda level: 0.25)
    return bracket


def test_the_lowest_rung_sends_its_first_eta_runner_ups_on_unjudged_to_the_top_rung():
    names = [f"t{i}" for i in range(8)] + ["up", "low", "slow", "u2", "u3", "u4", "late"]
    bracket = _bracket({name: 10.0 for name in names} | {"slow": 30.0})
    for i in range(8):
        bracket.evaluate(f"t{i}", 1, 1.0 - i / 10)  # t0 best ... t7 worst
    lowest = bracket.rungs[-1]
    # 9 recorded: two go on (a quarter), the next two (ranks 2-3) are runner-ups
    assert bracket.evaluate("up", 1, 0.75) is None and "up" in bracket.runner_ups.trials
    assert bracket.evaluate("low", 1, 0.05) is lowest  # rank 9 of 10: below twice the kept share
    assert bracket.evaluate("slow", 1, 0.75) is lowest  # steps slower than the run's median: too dear to check
    assert bracket.evaluate("up", 4, -1.0) is None  # unjudged above the lowest rung ...
    for i in range(3):
        bracket.evaluate(f"t{i}", 16, 1.0 - i / 10)
    assert bracket.evaluate("up", 16, -1.0) is bracket.rungs[0]  # ... but judged at the top rung
    for name in ("u2", "u3", "u4"):
        assert bracket.evaluate(name, 1, 0.75) is None
    assert set(bracket.runner_ups.trials) == {"up", "u2", "u3", "u4"}
    assert bracket.evaluate("late", 1, 0.75) is lowest  # the fifth is paused as ASHA would


def _kept_with_runner_up(name: str) -> tuple[KeptFractions, list[Rung]]:
    """Rungs at steps 1, 4 and 16 (the check rung), 20 trials at the first, ``name`` a runner-up."""
    rungs: list[Rung] = []
    kept = KeptFractions(3, 4, lambda level: rungs[level])
    rungs.extend(Rung(m, 4, level, kept.tally) for level, m in enumerate((1, 4, 16)))
    kept.runner_ups = RunnerUps(4, 2, 16, _pace({}), keep=lambda level: 0.25)
    kept.runner_ups.trials[name] = None
    for i in range(20):
        rungs[0].record(f"t{i}", 1.0 - i / 100)
    return kept, rungs


def test_while_a_runner_up_leads_the_check_rung_the_rungs_below_keep_down_to_where_it_stood():
    kept, rungs = _kept_with_runner_up("c")
    rungs[0].record("c", 1.0 - 6.5 / 100)  # 8th of 21
    for i in range(5):
        rungs[1].record(f"t{i}", 1.0 - i / 100)
    rungs[1].record("c", 0.0)  # last of 6
    rungs[2].record("t0", 0.5)
    assert kept.keep(0) == 0.25  # not at the check rung yet
    rungs[2].record("c", 0.9)  # leads the check rung
    assert kept.keep(0) == pytest.approx(8 / 21)
    assert kept.keep(1) == pytest.approx(0.5)  # where it stood (6 of 6), at most a half
    assert kept.keep(2) == 0.25  # the check (and top) rung keeps its own share
    rungs[2].record("t1", 0.95)  # a trial that passed the cuts leads again
    assert kept.keep(0) == 0.25 and kept.keep(1) == 0.25


def test_a_lead_over_no_one_is_no_evidence():
    kept, rungs = _kept_with_runner_up("c")
    rungs[0].record("c", 0.8)
    rungs[1].record("c", 0.8)
    rungs[2].record("c", 0.8)  # alone at the check rung
    assert kept.keep(0) == 0.25


def test_hypersched_promotes_the_trials_a_leading_runner_up_shows_were_cut_too_early():
    h = Harness(atoms=16, deadline=1e6, r=1, R=64, eta=4)
    for i in range(12):  # trial i ranks i-th at step 1 (none in the best half when it arrives): each pauses
        h.start(f"t{i}")
        h.report(f"t{i}", 1, 1.0 - i / 100, t=h.now + 10.0)
        h.pause(f"t{i}")
    runner_ups = h.scheduler.bracket.runner_ups
    assert runner_ups is not None and not runner_ups.trials
    runner_ups.trials["t5"] = None  # say t5 had gone on as a runner-up, and reaches the top rung with t0
    for name, score in (("t0", 0.2), ("t5", 0.9)):
        h.scheduler.bracket.evaluate(name, 4, score)
        h.scheduler.bracket.evaluate(name, 16, score)
    assert h.scheduler.kept.keep(0) == pytest.approx(0.5)  # it leads: rung 1 keeps down to where it stood
    promoted = {d.trial_id for d in h.decide() if isinstance(d, ResumeTrial)}
    assert {"t3", "t4"} <= promoted and not promoted & {f"t{i}" for i in range(6, 12)}


def test_runner_ups_are_off_with_fixed_rungs_or_when_switched_off():
    assert Harness(rung_trust="fixed").scheduler.bracket.runner_ups is None
    assert Harness(runner_ups=False).scheduler.bracket.runner_ups is None
    assert Harness(speculative=True).scheduler.kept.runner_ups is None
    assert Harness().scheduler.bracket.runner_ups is not None


@pytest.mark.parametrize("R, check_step", [(60, 16), (20, 4), (165, 16), (5, 0)])
def test_the_check_rung_is_two_above_the_lowest_or_the_highest_below_it_half_way_to_R(R, check_step):
    scheduler = Harness(r=1, R=R, eta=4).scheduler
    runner_ups = scheduler.kept.runner_ups
    assert runner_ups is not None
    if check_step:
        assert scheduler._rung(runner_ups.check).milestone == check_step and runner_ups.budget == 4
    else:  # (rungs 1 and 4 below R = 5: no rung above the lowest is half-way to R)
        assert runner_ups.check == 0 and runner_ups.budget == 0


def test_trials_set_aside_count_neither_in_a_rung_nor_above_a_score():
    rung = Rung(4, 4, 1)
    for i in range(8):
        rung.record(f"t{i}", 1.0 - i / 10)  # t0 best
    for name in ("a", "b"):
        rung.record(name, 2.0)  # above every other trial at this rung
    # over all 10, a quarter keeps 2: only a and b; with them aside, t0 and t1 of the 8 others
    assert not rung.in_top_fraction(1.0, 0.25)
    assert rung.in_top_fraction(1.0, 0.25, aside=("a", "b")) and rung.in_top_fraction(0.9, 0.25, aside=("a", "b"))
    assert not rung.in_top_fraction(0.8, 0.25, aside=("a", "b", "never-recorded"))


def test_runner_ups_passing_a_rung_take_no_place_of_the_trials_that_passed_the_cuts():
    names = [f"t{i}" for i in range(8)] + ["u1", "u2"]
    bracket = _bracket({name: 10.0 for name in names})
    assert bracket.runner_ups is not None
    for i in range(8):
        bracket.evaluate(f"t{i}", 1, 1.0 - i / 10)  # t0 best ... t7 worst
    for name in ("u1", "u2"):
        assert bracket.evaluate(name, 1, 0.75) is None and name in bracket.runner_ups.trials
    rung4 = bracket.rungs[-2]
    for name in ("u1", "u2"):
        assert bracket.evaluate(name, 4, 2.0) is None  # runner-ups that rank above every trial at step 4
    for i in range(7):
        bracket.evaluate(f"t{i}", 4, 1.0 - i / 10)
    # of the 7 trials that are no runner-ups, floor(7 / 4) = 1 goes on: t0; ASHA over all 9 would keep
    # 2 and so only the runner-ups
    assert not bracket.rungs[-2].in_top_fraction(1.0, 0.25)
    assert bracket._continues(rung4, 1.0) and not bracket._continues(rung4, 0.9)
    assert bracket.evaluate("t7", 4, 0.95) is None  # t7 (second of 8 others: floor(8 / 4) = 2) goes on
    assert bracket.evaluate("late", 4, 0.3) is rung4


def test_runner_ups_are_chosen_while_those_chosen_take_less_than_one_eta_squared_of_the_atom_time():
    names = [f"t{i}" for i in range(8)] + ["up", "u2", "u3"]
    bracket = _bracket({name: 10.0 for name in names})  # every step 10 s; a runner-up steps 1 -> 16: 150 s
    assert bracket.runner_ups is not None
    bracket.runner_ups._pace.run_atoms = (8, 16 * 150.0 * 1.5 / 8)  # 1/16 of the atom-time: 1.5 runner-ups' steps
    for i in range(8):
        bracket.evaluate(f"t{i}", 1, 1.0 - i / 10)
    assert bracket.evaluate("up", 1, 0.75) is None and bracket.evaluate("u2", 1, 0.75) is None
    assert bracket.evaluate("u3", 1, 0.75) is bracket.rungs[-1]  # two chosen take more than 1/16 already
    assert list(bracket.runner_ups.trials) == ["up", "u2"]


def test_no_more_runner_ups_than_half_the_run_s_atoms():
    names = [f"t{i}" for i in range(8)] + ["up", "u2", "u3"]
    bracket = _bracket({name: 10.0 for name in names})
    assert bracket.runner_ups is not None
    bracket.runner_ups._pace.run_atoms = (4, 1e9)  # time for many, atoms for two
    for i in range(8):
        bracket.evaluate(f"t{i}", 1, 1.0 - i / 10)
    assert bracket.evaluate("up", 1, 0.75) is None and bracket.evaluate("u2", 1, 0.75) is None
    assert bracket.evaluate("u3", 1, 0.75) is bracket.rungs[-1]
