import numpy as np
import pytest

from hpcsched.schedulers.rungs import Rung, SpeculativeBracket, TopFractionBracket, milestones


def test_milestones():
    assert milestones(5, 500, 4) == (5, 20, 80, 320)
    assert milestones(2, 50, 4) == (2, 8, 32)
    assert milestones(1, 9, 3) == (1, 3)
    assert milestones(10, 10, 4) == ()


def test_cutoff_is_numpy_percentile():
    rng = np.random.default_rng(0)
    rung = Rung(5, eta=4)
    scores = rng.normal(size=37)
    for i, s in enumerate(scores):
        rung.record(f"t{i}", float(s))
        if i >= 1:
            assert rung.cutoff() == pytest.approx(np.percentile(scores[: i + 1], 75))
    first, is_first = rung.record("t0", 99.0)
    assert first == scores[0] and not is_first  # only the first arrival is recorded


def test_asha_rung_pauses_first_arrival_and_keeps_top_fraction():
    b = TopFractionBracket(1, 100, 4)
    assert b.evaluate("a", 1, 0.5) is not None  # alone: the top floor(1/4) = 0 trials continue, so it pauses
    for i, s in enumerate([0.1, 0.2, 0.3]):
        b.evaluate(f"x{i}", 1, s)
    assert b.evaluate("best", 1, 0.9) is None  # 5 recorded: top 1 continues
    assert b.evaluate("worse", 1, 0.05) is not None


def test_speculative_first_arrival_continues_then_retrospective_pause():
    b = SpeculativeBracket(1, 100, 4)
    assert b.evaluate("a", 1, 0.5) is None  # first arrival: nobody to compare with
    assert b.evaluate("b", 1, 0.4) is None  # cutoff needs two recorded scores before it
    assert b.evaluate("c", 1, 0.3) is not None  # 0.3 < 75th percentile of {0.5, 0.4}
    assert b.evaluate("a", 2, 0.55) is None  # a's recorded 0.5 still clears the cutoff
    for i in range(6):
        b.evaluate(f"strong{i}", 1, 0.8 + i / 100)
    rung = b.evaluate("a", 3, 0.6)  # the cutoff rose above a's recorded 0.5: retrospective pause
    assert rung is not None and rung.milestone == 1


def test_speculative_promotion_when_cutoff_drops():
    b = SpeculativeBracket(1, 100, 4)
    for name, s in [("a", 0.9), ("b", 0.8), ("c", 0.5)]:
        b.evaluate(name, 1, s)
    rung = b.evaluate("d", 1, 0.6)
    assert rung is not None
    b.pause_at("d", rung)
    assert b.best_promotable() is None
    for i in range(10):
        b.evaluate(f"weak{i}", 1, 0.1)  # cutoff drops below 0.6
    assert b.best_promotable() == "d"
    b.unpause("d")
    assert b.best_promotable() is None


def test_promotion_prefers_higher_rungs_then_better_scores():
    b = TopFractionBracket(1, 100, 2)
    # rung 1: four trials, paused ones ranked
    for name, s in [("p", 0.9), ("q", 0.2), ("r", 0.3), ("s", 0.1)]:
        b.evaluate(name, 1, s)
    low = b.rungs[-1]
    for name in ("q", "r", "p"):
        b.pause_at(name, low)
    assert b.best_promotable() == "p"  # best of rung 1 and in the top half
    b.evaluate("p", 2, 0.95)
    b.evaluate("x", 1, 0.0)
    b.evaluate("x", 2, 0.99)
    b.evaluate("y", 1, 0.0)
    b.evaluate("y", 2, 0.97)
    b.evaluate("z", 1, 0.0)
    b.evaluate("z", 2, 0.96)
    b.unpause("p")
    b.pause_at("y", b.rungs[-2])
    assert b.best_promotable() == "y"  # rung 2 before rung 1



def test_a_report_between_milestones_records_nothing_and_the_next_milestone_records_once():
    bracket = TopFractionBracket(r=1, R=16, eta=4)
    for trial_id, score in (("a", 0.9), ("b", 0.5)):
        bracket.evaluate(trial_id, 1, score)
    rung4 = next(rung for rung in bracket.rungs if rung.milestone == 4)
    assert bracket.evaluate("a", 2, 0.1) is None and bracket.evaluate("a", 3, 0.1) is None
    assert "a" not in rung4.recorded
    bracket.evaluate("a", 5, 0.95)  # (step 4 skipped: judged at its next report)
    assert rung4.recorded["a"] == 0.95
    bracket.evaluate("a", 6, 0.2)
    assert rung4.recorded["a"] == 0.95 and len(rung4) == 1


def test_the_lowest_rung_judges_every_trial_among_the_random_draws_once_enough_are_there():
    """A sampler's model proposals (``from_model``) that start fast raise the bar over all trials; the lowest
    rung sets them aside once 2 eta random draws are recorded there, so a trial is judged among those."""
    bracket = TopFractionBracket(1, 16, 4)  # rungs at 1 and 4, a quarter kept
    lowest = bracket.rungs[-1]
    for i in range(9):
        bracket.from_model.add(f"m{i}")
    for i in range(8):
        bracket.evaluate(f"m{i}", 1, 0.9 + i / 100)  # the model's proposals, all high at step 1
    for i in range(6):
        bracket.evaluate(f"d{i}", 1, 0.1 * i)  # random draws: 0.0 ... 0.5
    # 7 draws with "late", fewer than 2 eta: judged over all 15, where a quarter keeps 0.97, 0.96 and 0.95
    assert bracket.evaluate("late", 1, 0.65) is lowest
    assert bracket.evaluate("m8", 1, 0.93) is lowest
    bracket.pause_at("late", lowest)
    bracket.pause_at("m8", lowest)
    # the 8th draw: from now on every trial is judged among the draws alone (a quarter of 8 keeps 2)
    assert bracket.evaluate("d6", 1, 0.6) is None  # second to "late"
    assert bracket.evaluate("m9", 1, 0.62) is None  # the model's, below "late" alone among the draws
    assert bracket.evaluate("d7", 1, 0.55) is lowest  # 0.65 and 0.6 lead the 9 draws
    assert bracket.best_promotable() == "m8"  # the best paused, now among the draws' top quarter
    bracket.unpause("m8")
    assert bracket.best_promotable() == "late"
    rung4 = bracket.rungs[-2]
    for i in range(3, 8):  # above the lowest rung the model's proposals count as any trial does
        bracket.evaluate(f"m{i}", 4, 1.0 + i)
    assert bracket.evaluate("d6", 4, 0.7) is rung4
