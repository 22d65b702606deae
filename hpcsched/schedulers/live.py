"""The trials that hold atoms, as a policy sees them from the journal's records.

A trial is *live* from its launch until it is asked to stop (to pause, to stop, or to relaunch at
another size); from that request until it exits it is *stopping*: its atoms are not yet free, and
the time from the request (or from its last report after it: the step in progress was trained) to
the exit is what a stop costs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Container

from hpcsched.schedulers.sorted_scores import Ranking, Score


class LiveTrials:
    """Live trials with the atoms each holds (``atoms``; ``total_atoms`` in all), ranked by the policy's
    key (a score, or a tuple such as HyperSched's standing), and ranked among those holding as many
    atoms (``by_size``; ``settled_single``: those on one atom that reported since their launch, and of
    those ``yieldable``: the ones not awaiting atoms that others free for them, see ``give``), with
    the reports each made since its launch; those holding more than one atom (``grown``) and those
    asked to shrink (``shrinking``); the trials asked to stop that have not exited (``stopping``: when
    asked, or last reported since), and of those asked to pause or stop (not to resize) the atoms they
    will free (``freeing``)."""

    def __init__(self) -> None:
        self.atoms: dict[str, int] = {}
        self.total_atoms = 0
        self.ranking = Ranking()
        self.by_size: dict[int, Ranking] = {}
        self.settled_single = Ranking()
        self.yieldable = Ranking()
        self.yielding: dict[str, str] = {}  # trial asked to pause to give its atom -> the leader it gives it to
        self.awaited: Counter[str] = Counter()  # leader -> atoms the yielding trials will give it
        self.freed: Counter[str] = Counter()  # leader -> atoms its yielders freed (for the policy to give it)
        self.since_launch: dict[str, int] = {}
        self.grown: set[str] = set()
        self.shrinking: set[str] = set()
        self.stopping: dict[str, float] = {}
        self.freeing: dict[str, int] = {}

    def launched(self, trial_id: str, atoms: int, score: Score | None) -> None:
        """``trial_id`` was launched on ``atoms`` atoms (``score``: its ranking key; None if none)."""
        self.forget(trial_id)
        self.atoms[trial_id] = atoms
        self.total_atoms += atoms
        self.since_launch[trial_id] = 0
        if atoms > 1:
            self.grown.add(trial_id)
        else:
            self.grown.discard(trial_id)
        self.shrinking.discard(trial_id)
        key = score if score is not None else -math.inf
        self.ranking.set(trial_id, key)
        self.by_size.setdefault(atoms, Ranking()).set(trial_id, key)

    def give(self, pairs: list[tuple[str, str]]) -> None:
        """Each (yielding trial, leader) pair: the trial, asked to pause, gives its atom to the leader."""
        for trial_id, leader in pairs:
            self.yielding[trial_id] = leader
            self.awaited[leader] += 1
            self.yieldable.discard(leader)

    def yielded(self, trial_id: str) -> None:
        """``trial_id`` exited: if it gave its atom to a leader, that atom is ``freed`` for the leader."""
        leader = self.yielding.pop(trial_id, None)
        if leader is not None:
            self.freed[leader] += 1
            self.awaited[leader] -= 1
            if self.awaited[leader] <= 0:
                del self.awaited[leader]
                if leader in self.settled_single:
                    self.yieldable.set(leader, self.settled_single.score(leader))

    def scored(self, trial_id: str, score: Score, reports_since_launch: int) -> None:
        """A live trial reported: ``score`` is its ranking key now."""
        if trial_id in self.yieldable and self.yieldable.score(trial_id) == score:
            self.since_launch[trial_id] = reports_since_launch
            return  # (where it stands in every ranking already: the common case, at every report)
        self.ranking.set(trial_id, score)
        if trial_id in self.atoms:
            self.by_size[self.atoms[trial_id]].set(trial_id, score)
            if self.atoms[trial_id] == 1 and reports_since_launch > 0:
                self.settled_single.set(trial_id, score)
                if trial_id not in self.awaited:
                    self.yieldable.set(trial_id, score)
        self.since_launch[trial_id] = reports_since_launch

    def reported_at(self, trial_id: str, t: float) -> None:
        """Any trial reported at time ``t``: for one asked to stop, the step in progress when it was
        asked was trained, not lost, so its stop counts from then."""
        if trial_id in self.stopping:
            self.stopping[trial_id] = max(self.stopping[trial_id], t)

    def stop_requested(self, trial_id: str, t: float, resize: bool, shrink: bool) -> None:
        """``trial_id`` was asked at ``t`` to stop: to relaunch at another size (``resize``; ``shrink``
        when smaller), or to pause or stop (its atoms come free when it exits)."""
        if not resize:  # asked again while stopping: the atoms it held when first asked
            self.freeing.setdefault(trial_id, self.atoms.get(trial_id, 0))
        self.forget(trial_id)
        self.stopping.setdefault(trial_id, t)
        if shrink:
            self.shrinking.add(trial_id)

    def exited(self, trial_id: str) -> float | None:
        """``trial_id``'s process exited; return when it was asked to stop (None: it was not)."""
        self.forget(trial_id)
        self.freeing.pop(trial_id, None)
        self.shrinking.discard(trial_id)
        return self.stopping.pop(trial_id, None)

    def forget(self, trial_id: str) -> None:
        """``trial_id`` is no longer live (it may still be stopping)."""
        atoms = self.atoms.pop(trial_id, 0)
        self.total_atoms -= atoms
        self.settled_single.discard(trial_id)
        self.yieldable.discard(trial_id)
        same = self.by_size.get(atoms)
        if same is not None:
            same.discard(trial_id)
            if not same:
                del self.by_size[atoms]
        self.since_launch.pop(trial_id, None)
        self.grown.discard(trial_id)
        self.ranking.discard(trial_id)

    def best_below(self, cap: int, exclude: Container[str], planned: dict[str, int],
                   fewest_first: bool) -> tuple[str, int] | None:
        """The best-ranked live trial holding fewer than ``cap`` atoms, none of ``exclude``, with its atoms
        (``planned``: sizes already promised, counted instead of the held ones); ``fewest_first``: among
        those holding the fewest atoms."""
        if not planned and fewest_first:  # (the common case, asked at every decision: no size promised)
            for size in sorted(self.by_size):
                if size >= cap:
                    break
                held = self.by_size[size].first(exclude)
                if held is not None:
                    return held, size
            return None
        if not fewest_first:
            return next(((t, planned.get(t, self.atoms[t])) for t, _ in self.ranking.best_first()
                         if t not in exclude and planned.get(t, self.atoms[t]) < cap), None)
        for size in sorted(set(self.by_size) | set(planned.values())):
            if size >= cap:
                break
            same = self.by_size.get(size, Ranking())
            unplanned = (t for t, _ in same.best_first() if t not in exclude and t not in planned)
            ranked = [t for t in [next(unplanned, None), *(t for t, n in planned.items() if n == size)]
                      if t is not None and t not in exclude]
            if ranked:
                return min(ranked, key=self.ranking.rank), size
        return None
