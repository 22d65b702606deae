from hpcsched.schedulers.decisions import PauseTrial, ResumeTrial, StartTrial, StopTrial
from tests.harness import Harness


def test_fills_free_atoms_with_new_trials_up_to_the_limit():
    h = Harness(atoms=4, kind="asha", r=1, R=9, eta=3)
    assert h.decide() == [StartTrial(1)] * 4
    h.trials_left = 2
    assert h.decide() == [StartTrial(1)] * 2


def test_pause_unless_top_fraction_then_promote_before_starting_new():
    h = Harness(atoms=4, kind="asha", r=1, R=9, eta=2)
    for name in "abcd":
        h.start(name)
    h.report("a", 1, 0.5)  # alone at rung 1: top floor(1/2) = 0 trials continue
    assert h.decide() == [PauseTrial("a", "rung 1")]
    h.pause("a")
    h.report("b", 1, 0.9)  # two recorded, b is the top 1: continues
    h.report("c", 1, 0.1)  # three recorded, c is third: paused
    decisions = h.decide()
    assert PauseTrial("c", "rung 1") in decisions
    assert not any(isinstance(d, PauseTrial) and d.trial_id == "b" for d in decisions)
    # the atom a freed: a (0.5, rank 2 of 3) is not in the top 1, so a new trial starts
    assert decisions[-1] == StartTrial(1)
    h.pause("c")
    h.start("e")
    h.report("d", 1, 0.05)  # four recorded: top 2 are b and a -> a becomes promotable
    # d pauses; the one free atom goes to the promotion of a, not to a new trial
    assert h.decide() == [PauseTrial("d", "rung 1"), ResumeTrial("a", 1)]


def test_stop_at_R():
    h = Harness(atoms=1, kind="asha", r=1, R=3, eta=3)
    h.start("a")
    h.report("a", 3, 0.7)
    assert h.decide() == [StopTrial("a", "max_steps")]
