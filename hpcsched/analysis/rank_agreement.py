"""How well a run's early scores ranked its trials by the end: the evidence for choosing ``r``.

    table = early_ranking(run.scores, R=30, mode="max")
    # step, scored, paired, rank_corr, best_rank: one row per step 1, 2, 4, ... below R

For each step, over the trials that reported both at that step and at R, the Spearman rank
correlation of their scores; and where the best trial by R stood at that step among every trial
that reported there (1 = first). A step whose ranking agrees with the end is a good first rung.
Under ASHA or HyperSched the trials that reached R are the ones the rungs let through, so a step
that misleads can look better here than it is; a random-search run (``scheduler.kind: random``)
trains every trial to R and shows the ranking unselected.
"""

from __future__ import annotations

import pandas as pd

from hpcsched.core.mode import Mode

COLUMNS = ("step", "scored", "paired", "rank_corr", "best_rank")
MIN_PAIRS = 3  # fewer trials at both steps say nothing about a ranking


def early_steps(R: int) -> list[int]:
    """1, 2, 4, ... below R: where a first rung could sit."""
    steps, step = [], 1
    while step < R:
        steps.append(step)
        step *= 2
    return steps


def early_ranking(scores: pd.DataFrame, R: int, mode: str) -> pd.DataFrame:
    """One row per step of ``early_steps(R)`` that some trial reported at (``scores``: trial, step,
    score, one row per report, as ``Run.scores``); empty when fewer than ``MIN_PAIRS`` trials reached
    R. ``rank_corr`` is NaN where fewer than ``MIN_PAIRS`` trials reported at both steps."""
    sign = Mode(mode).sign
    by_step = (scores.assign(value=scores["score"] * sign)
               .drop_duplicates(["trial", "step"], keep="last")
               .pivot(index="trial", columns="step", values="value"))
    if R not in by_step or by_step[R].notna().sum() < MIN_PAIRS:
        return pd.DataFrame(columns=list(COLUMNS))
    final = by_step[R].dropna()
    best = str(final.idxmax())  # a trial id
    rows = []
    for step in early_steps(R):
        if step not in by_step:
            continue
        at = by_step[step].dropna()
        both = at.index.intersection(final.index)
        corr = (float(at[both].corr(final[both], method="spearman")) if len(both) >= MIN_PAIRS
                else float("nan"))
        best_rank = int(at.rank(ascending=False, method="min")[best]) if best in at.index else None
        rows.append((step, len(at), len(both), corr, best_rank))
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"best_rank": "Int64"})
