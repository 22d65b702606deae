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
