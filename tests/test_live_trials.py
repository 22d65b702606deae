"""LiveTrials' bookkeeping: the rankings by size that HyperSched's growth and yields read."""

from hpcsched.schedulers.live import LiveTrials
from hpcsched.schedulers.sorted_scores import Ranking


def _live() -> LiveTrials:
    live = LiveTrials()
    for trial_id, atoms, score in (("a", 1, 0.9), ("b", 2, 0.95), ("c", 1, 0.5), ("d", 1, 0.7)):
        live.launched(trial_id, atoms, None)
        live.scored(trial_id, score, reports_since_launch=1 if trial_id != "d" else 0)
    return live


def test_best_below_takes_the_fewest_atoms_first_then_the_best() -> None:
    live = _live()
    assert live.best_below(cap=8, exclude=set(), planned={}, fewest_first=True) == ("a", 1)
    assert live.best_below(cap=8, exclude={"a"}, planned={}, fewest_first=True) == ("d", 1)
    assert live.best_below(cap=1, exclude=set(), planned={}, fewest_first=True) is None  # none holds under 1
    live.forget("a"), live.forget("c"), live.forget("d")  # only "b" is left, on 2 atoms
    assert live.best_below(cap=8, exclude=set(), planned={}, fewest_first=True) == ("b", 2)
    assert live.best_below(cap=8, exclude={"b"}, planned={}, fewest_first=True) is None
    live = _live()
    # a promised growth counts: "a" is planned at 2 atoms, "b" stands higher among those on 2
    assert live.best_below(cap=8, exclude=set(), planned={"a": 2, "d": 2, "c": 2}, fewest_first=True) == ("b", 2)
    assert live.best_below(cap=2, exclude=set(), planned={"a": 2, "d": 2, "c": 2}, fewest_first=True) is None
    # top_job: the best-standing below the cap, whatever it holds
    assert live.best_below(cap=8, exclude=set(), planned={}, fewest_first=False) == ("b", 2)
    assert live.best_below(cap=2, exclude=set(), planned={}, fewest_first=False) == ("a", 1)


def test_settled_single_holds_one_atom_trials_that_reported_since_launch() -> None:
    live = _live()
    assert [t for t, _ in live.settled_single.worst_first()] == ["c", "a"]  # "d" has not reported
    live.launched("a", 2, 0.9)  # relaunched bigger: no longer on one atom, nor counted twice
    assert [t for t, _ in live.settled_single.worst_first()] == ["c"]
    assert sorted(live.by_size) == [1, 2] and [t for t, _ in live.by_size[2].best_first()] == ["b", "a"]
    assert live.total_atoms == 2 + 1 + 1 + 2
    live.stop_requested("b", 5.0, resize=False, shrink=False)
    assert [t for t, _ in live.by_size[2].best_first()] == ["a"]
    live.exited("a")
    assert 2 not in live.by_size and live.total_atoms == 2


def test_ranking_keeps_scores_and_order() -> None:
    ranking = Ranking()
    ranking.set("x", (1.0, 0.5))
    ranking.set("y", (1.0, 0.7))
    ranking.set("z", (0.0, 0.9))
    assert list(ranking.best_first()) == [("y", (1.0, 0.7)), ("x", (1.0, 0.5)), ("z", (0.0, 0.9))]
    ranking.set("z", (2.0, 0.1))
    assert ranking.best() == "z" and next(ranking.worst_first())[0] == "x" and ranking.rank("y") == 1
    ranking.discard("z")
    assert [t for t, _ in ranking.worst_first()] == ["x", "y"] and "z" not in ranking


def test_a_leader_awaiting_atoms_is_no_victim_until_its_yielders_exit() -> None:
    live = _live()
    assert [t for t, _ in live.yieldable.worst_first()] == ["c", "a"]
    live.stop_requested("c", 1.0, resize=False, shrink=False)
    live.give([("c", "a")])  # "c" pauses to give its atom to "a"
    assert list(live.yieldable.worst_first()) == [] and live.awaited == {"a": 1}
    live.scored("a", 0.95, reports_since_launch=2)  # reporting while it waits does not file it again
    assert list(live.yieldable.worst_first()) == []
    live.exited("c")
    live.yielded("c")
    assert live.freed == {"a": 1} and not live.awaited and not live.yielding
    assert [t for t, _ in live.yieldable.worst_first()] == ["a"]  # at its new score
    assert live.yieldable.score("a") == 0.95
    live.yielded("d")  # a trial that gave nothing: nothing changes
    assert live.freed == {"a": 1}


def test_a_ranking_built_late_orders_what_was_set_and_discarded_before() -> None:
    """Updates before the first question only file scores; the order built then, and kept after, is
    the one a ranking sorted at every update would have (ties by insertion order)."""
    lazy, eager = Ranking(), Ranking()
    eager.best()  # (built now: every update after this moves an item in the sorted order)
    for ranking in (lazy, eager):
        for item, score in (("a", 0.5), ("b", 0.9), ("c", 0.5), ("d", 0.1)):
            ranking.set(item, score)
        ranking.set("b", 0.2)
        ranking.discard("d")
    assert len(lazy) == 3 and "d" not in lazy
    assert list(lazy.best_first()) == list(eager.best_first()) == [("a", 0.5), ("c", 0.5), ("b", 0.2)]
    lazy.set("e", 0.7)  # (after the first question: kept in order)
    lazy.discard("a")
    assert [t for t, _ in lazy.best_first()] == ["e", "c", "b"] and lazy.rank("b") == 2
    assert lazy.first() == "e" and lazy.first({"e", "c"}) == "b" and lazy.first({"e", "c", "b"}) is None
