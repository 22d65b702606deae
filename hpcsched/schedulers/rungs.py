"""Rung bookkeeping shared by ASHA and HyperSched, with per-report cost independent of trial count.

Scores are normalised so that higher is better. Each rung keeps its recorded scores sorted
(cutoffs and ranks by bisection) and an index of the trials paused there, best first.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Callable, Collection, Iterable

if TYPE_CHECKING:
    from hpcsched.schedulers.runner_ups import RunnerUps


def milestones(r: int, R: int, eta: float) -> tuple[int, ...]:
    """Rung milestones r, r*eta, r*eta^2, ... below R (a trial reaching R is complete)."""
    out: list[int] = []
    k = 0
    while True:
        m = int(math.ceil(r * eta**k - 1e-9))
        if m >= R:
            return tuple(out)
        if not out or m > out[-1]:
            out.append(m)
        k += 1


class Tally:
    """How many scores a group of rungs recorded in all (read in O(1), not summed per question)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Rung:
    """Scores recorded at one milestone and the trials paused there (``tally``: counts its records too)."""

    def __init__(self, milestone: int, eta: float, level: int = 0, tally: Tally | None = None):
        self.milestone = milestone
        self.eta = eta
        self.level = level  # 0 for the lowest rung
        self.tally = tally
        self.recorded: dict[str, float] = {}
        self._sorted: list[float] = []
        self._paused: list[tuple[float, int, str]] = []  # (-score, seq, trial), best first
        self._paused_key: dict[str, tuple[float, int, str]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._sorted)

    def record(self, trial_id: str, score: float) -> tuple[float, bool]:
        """Record ``score`` for the trial's first arrival; return (recorded score, first arrival?)."""
        previous = self.recorded.get(trial_id)
        if previous is not None:
            return previous, False
        self.recorded[trial_id] = score
        bisect.insort(self._sorted, score)
        if self.tally is not None:
            self.tally.count += 1
        return score, True

    def cutoff(self, min_count: int = 2, quantile: float | None = None) -> float | None:
        """The ``quantile`` (default 1 - 1/eta) of recorded scores (linear interpolation), None below min_count."""
        n = len(self._sorted)
        if n < min_count or n == 0:
            return None
        q = (1.0 - 1.0 / self.eta) if quantile is None else quantile
        pos = q * (n - 1)
        lo = int(pos)
        hi = min(lo + 1, n - 1)
        s = self._sorted
        return s[lo] + (pos - lo) * (s[hi] - s[lo])

    def rescore(self, values: dict[str, float]) -> None:
        """Replace the recorded values of ``values``' trials; cutoffs, ranks and the paused order follow."""
        self.recorded.update(values)
        self._sorted = sorted(self.recorded.values())
        paused = [trial_id for _, _, trial_id in self._paused]
        self._paused, self._paused_key = [], {}
        for trial_id in paused:
            self.add_paused(trial_id)

    def best(self) -> float:
        """The best recorded score (-inf when none)."""
        return self._sorted[-1] if self._sorted else -math.inf

    @property
    def sorted_scores(self) -> list[float]:
        """The recorded scores, ascending (do not mutate)."""
        return self._sorted

    def rank(self, score: float) -> int:
        """How many recorded scores are strictly better than ``score``."""
        return len(self._sorted) - bisect.bisect_right(self._sorted, score)

    def in_top_fraction(self, score: float, keep: float | None = None, aside: Iterable[str] = ()) -> bool:
        """ASHA's test: among the best floor(n * keep) recorded scores (keep defaults to 1 / eta); the
        trials ``aside`` (those recorded here) count neither in n nor above ``score``."""
        keep = 1.0 / self.eta if keep is None else keep
        set_aside = [value for value in map(self.recorded.get, aside) if value is not None]
        above = sum(value > score for value in set_aside)
        return self.rank(score) - above < int((len(self._sorted) - len(set_aside)) * keep + 1e-9)

    # paused trials
    def add_paused(self, trial_id: str) -> None:
        if trial_id in self._paused_key:
            return
        key = (-self.recorded[trial_id], self._seq, trial_id)
        self._seq += 1
        bisect.insort(self._paused, key)
        self._paused_key[trial_id] = key

    def remove_paused(self, trial_id: str) -> bool:
        key = self._paused_key.pop(trial_id, None)
        if key is None:
            return False
        del self._paused[bisect.bisect_left(self._paused, key)]
        return True

    def first_paused(self) -> tuple[str, float] | None:
        """The best paused trial with its recorded score (None: none paused here)."""
        if not self._paused:
            return None
        neg, _, trial_id = self._paused[0]
        return trial_id, -neg

    def paused_best_first(self):
        """Paused trials with their recorded score, best first (a generator; do not mutate while iterating)."""
        for neg, _, trial_id in self._paused:
            yield trial_id, -neg


class Bracket:
    """The rungs of one successive-halving bracket, highest milestone first. ``value(trial, level, score)``
    (optional) gives what a rung records for a report's score (default: the score)."""

    def __init__(self, r: int, R: int, eta: float, tally: Tally | None = None):
        marks = milestones(r, R, eta)
        self.rungs = tuple(Rung(m, eta, level, tally) for level, m in reversed(list(enumerate(marks))))
        self.paused_at: dict[str, Rung] = {}
        self.value: Callable[[str, int, float], float] | None = None
        self.from_model: set[str] = set()  # trials whose configuration a sampler's model proposed (journal)

    def _record(self, rung: Rung, trial_id: str, score: float) -> float:
        """Record the trial's first arrival at ``rung``; return what the rung holds for it."""
        if trial_id not in rung.recorded and self.value is not None:
            score = self.value(trial_id, rung.level, score)
        return rung.record(trial_id, score)[0]

    def passed(self, step: int):
        """Rungs whose milestone is <= step, highest first."""
        for rung in self.rungs:
            if step >= rung.milestone:
                yield rung

    def pause_at(self, trial_id: str, rung: Rung) -> None:
        self.unpause(trial_id)
        rung.add_paused(trial_id)
        self.paused_at[trial_id] = rung

    def unpause(self, trial_id: str) -> None:
        rung = self.paused_at.pop(trial_id, None)
        if rung is not None:
            rung.remove_paused(trial_id)


    def best_paused(self) -> str | None:
        """The best paused trial of the highest rung that has one, promotable or not."""
        for rung in self.rungs:
            first = rung.first_paused()
            if first is not None:
                return first[0]
        return None


class SpeculativeBracket(Bracket):
    """HyperSched's rungs: a first arrival continues (speculative); a trial whose recorded score
    at a passed rung falls below that rung's cutoff is paused (retrospective).

    ``quantile(level)`` gives each rung's cutoff quantile (default 1 - 1/eta, the paper's);
    ``current_only`` compares a trial on the highest rung it passed instead of on every rung.
    """

    def __init__(self, r: int, R: int, eta: float, quantile: Callable[[int], float] | None = None,
                 current_only: bool = False, tally: Tally | None = None):
        super().__init__(r, R, eta, tally)
        self.quantile = quantile or (lambda level: 1.0 - 1.0 / eta)
        self.current_only = current_only

    def _cutoff(self, rung: Rung) -> float | None:
        return rung.cutoff(quantile=self.quantile(rung.level))

    def evaluate(self, trial_id: str, step: int, score: float) -> Rung | None:
        """Record the report; return the rung that says pause, or None to continue."""
        failed = None
        for rung in self.passed(step):
            cut = self._cutoff(rung)  # before a first arrival is recorded, as the authors' code does
            recorded = self._record(rung, trial_id, score)
            if failed is None and cut is not None and recorded < cut:
                failed = rung
            if self.current_only:
                for lower in self.passed(rung.milestone - 1):  # record the rungs it jumped over
                    self._record(lower, trial_id, score)
                break
        return failed

    def first_failed(self, trial_id: str) -> Rung | None:
        """The highest rung where the trial's recorded score is now below the cutoff
        (with ``current_only``, only its highest recorded rung counts)."""
        for rung in self.rungs:
            recorded = rung.recorded.get(trial_id)
            if recorded is not None:
                cut = self._cutoff(rung)
                if cut is not None and recorded < cut:
                    return rung
                if self.current_only:
                    return None
        return None

    def best_promotable(self) -> str | None:
        """Best paused trial whose recorded scores clear every cutoff now, highest rung first.

        A candidate that now fails a lower rung is re-filed as paused there, so each trial
        moves down at most once per rung.
        """
        for rung in self.rungs:
            while (first := rung.first_paused()) is not None:
                trial_id, score = first
                cut = self._cutoff(rung)
                if cut is None or score < cut:
                    break
                failed = self.first_failed(trial_id)
                if failed is None:
                    return trial_id
                if failed is rung:  # pragma: no cover - cutoff checked above
                    break
                self.pause_at(trial_id, failed)
        return None


class TopFractionBracket(Bracket):
    """ASHA's rungs (promotion variant): at a rung a trial continues only if it is among the
    best floor(n / eta) recorded there; a first arrival with too few peers is paused.

    ``quantile(level)`` (optional) sets the fraction paused at each rung: a trial continues when
    among the best floor(n * (1 - quantile)); the default quantile 1 - 1/eta is ASHA's.

    The test assumes that the trials arriving at the lowest rung are drawn alike. A sampler's model
    proposes configurations it fitted on the early steps, so its proposals raise the lowest rung's bar and
    cut the trials that start slowly and end best (lcbench-167181: gpei below random sampling). So once
    2 eta random draws are recorded there, the lowest rung judges every trial among the random draws alone
    (``from_model`` set aside); with random sampling nothing changes.
    """

    def __init__(self, r: int, R: int, eta: float, quantile: Callable[[int], float] | None = None,
                 tally: Tally | None = None):
        super().__init__(r, R, eta, tally)
        self.quantile = quantile
        self.runner_ups: RunnerUps | None = None  # the lowest rung's runner-ups, sent on unjudged (runner_ups.py)
        self._recorded_below: dict[str, float] = {}  # trial -> the next milestone above a report that had
        # every rung it passed recorded (until it reports there, evaluating records nothing)

    def _keep(self, rung: Rung) -> float | None:
        return None if self.quantile is None else 1.0 - self.quantile(rung.level)

    def _continues(self, rung: Rung, score: float) -> bool:
        return rung.in_top_fraction(score, self._keep(rung), self._aside(rung))

    def _aside(self, rung: Rung) -> Collection[str]:
        """The trials ``rung``'s test sets aside: at the lowest, the model's proposals (once 2 eta random
        draws are recorded there); above it, the runner-ups passing through, which take no place of the
        trials that passed the cuts."""
        if rung.level:
            return self.runner_ups.trials if self.runner_ups is not None else ()
        drawn = len(rung) - sum(trial_id in rung.recorded for trial_id in self.from_model)
        return self.from_model if drawn >= 2 * rung.eta else ()

    def evaluate(self, trial_id: str, step: int, score: float) -> Rung | None:
        """Record the report at the highest rung the trial passed without a score there; return that
        rung if the trial is paused there (one that skipped a rung's step is judged at its next report)."""
        if step < self._recorded_below.get(trial_id, 0):
            return None  # (every rung it passed has its score: the same rungs as at its last report)
        for rung in self.passed(step):
            if trial_id in rung.recorded:
                continue
            value = self._record(rung, trial_id, score)
            if self._continues(rung, value) or (self.runner_ups is not None and
                                                self.runner_ups.goes_on(rung, trial_id, value)):
                return None
            return rung
        self._recorded_below[trial_id] = next((rung.milestone for rung in reversed(self.rungs)
                                               if rung.milestone > step), math.inf)
        return None

    def best_promotable(self) -> str | None:
        """The paused trial to promote: the best of the highest rung whose best paused trial is now
        among its rung's top fraction."""
        for rung in self.rungs:
            first = rung.first_paused()
            if first is not None and self._continues(rung, first[1]):
                return first[0]
        return None
