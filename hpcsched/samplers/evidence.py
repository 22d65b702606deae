"""What a model-based sampler learns from: the step it fits at and each trial's score there (BOHB's rule).

A model on the early rungs alone learns what wins early, which on many curves is not what wins at R;
so the model is fitted on one budget, the highest step that at least ``min_trials`` trials have
reached (Falkner et al., 2018), with each of those trials' last score up to it. Where even that step's
ranks mislead early in a run, ``sampler.fit_from`` (a share of R) sets the lowest step a model may be
fitted at: until enough trials reached it, proposals stay random.
"""

from __future__ import annotations

from typing import Mapping


def fit_step(scores: Mapping[str, Mapping[int, float]], min_trials: int, lowest: float = 0.0) -> int | None:
    """The highest step that ``min_trials`` trials have reached (``scores``: trial -> step -> score), or
    None when fewer reached one, or none reached ``lowest``."""
    reached = sorted((max(steps) for steps in scores.values() if steps), reverse=True)
    step = reached[min_trials - 1] if len(reached) >= min_trials else None
    return step if step is not None and step >= lowest else None


def score_at(steps: Mapping[int, float], step: int) -> float | None:
    """A trial's last score up to ``step``, if it reached ``step`` (None otherwise)."""
    if not steps or max(steps) < step:
        return None
    at = [s for s in steps if s <= step]
    return steps[max(at)] if at else None
