"""How much each rung should keep: idealised successive halving on every trace, at every fixed keep fraction.

    .venv/bin/python tools/bench_keep.py [--draws 200] [--seed 0] [--curves DIR] [--out docs/results/keep.md]

A scheduler that cuts at rungs r·eta^k (r = 1, eta = 4: steps 1, 4, 16, ...) has one lever per rung: the
share of its trials that go on. ASHA keeps 1/eta everywhere; HyperSched's rung trust (schedulers/kept.py) learns a share
between 1/eta and 1/2 from the run's own curves. This asks, for every trace under the curves folder
and the one bench rule's budgets (tools/bench_rule.py: deadlines 2M, 4M, 8M on 8 atoms, that is 16,
32 and 64 median full trainings), which fixed share would have been right, with nothing else in the
way: synchronous successive halving (no deadline, no asynchrony, no startup) on n configurations drawn
at random from the trace's pool, each rung keeping the share q of its trials by their scores there, n
the most whose expected cost fits the budget (a rung's cost: the median over curves of the time to its
step over the time to the curve's last step). q = 1 is random search: n trials trained to the end.
Regret: the pool's best final score minus the best final score among the trials that survive, mean
over ``--draws`` draws. "x / best": the geometric mean over cells of a share's regret over the best
share's in the cell (regrets floored at 0.001 x |the pool's best|). Beside each trace's best shares, the
rank correlations of its rungs over the whole pool: the most a run could estimate from its own curves.

It is an upper bound on what a keep fraction can do, not a scheduler: the figures say whether one
share fits every trace, or whether a run must find its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from bench_quality import x_over_best as quality_x_over_best  # noqa: E402
from bench_rule import ATOMS, DEADLINE_FACTORS, ETA, FIRST_RUNG, TraceRule, rules  # noqa: E402
from results_page import publish  # noqa: E402

from hpcsched.core.mode import Mode  # noqa: E402
from hpcsched.schedulers.rungs import milestones  # noqa: E402
from hpcsched.workloads.trace import load_trace  # noqa: E402

OUT = REPO / "docs" / "results" / "keep.md"
CURVES = REPO.parent / "shared" / "data" / "curves"
KEEPS = (1 / 4, 1 / 3, 1 / 2, 3 / 4, 1.0)


@dataclass(frozen=True)
class Pool:
    """A trace's configurations as successive halving sees them (scores normalised: higher is better)."""

    marks: tuple[int, ...]  # the rungs' steps
    at_rungs: np.ndarray  # (configurations, rungs): the score at each rung's step (a curve's last if it ended)
    finals: np.ndarray  # the score at each curve's last step
    fractions: tuple[float, ...]  # per rung: the median over curves of the time to its step over the whole curve's


def pool(rule: TraceRule) -> Pool:
    """The trace of ``rule`` as a pool of configurations, at the rungs r = 1, eta = 4 below R."""
    sign = Mode(rule.mode).sign
    marks = milestones(FIRST_RUNG, rule.R, ETA)
    curves = list(load_trace(rule.path, rule.step_time).values())
    at_rungs = np.empty((len(curves), len(marks)))
    shares = np.empty((len(curves), len(marks)))
    for row, curve in enumerate(curves):
        where = np.clip(np.searchsorted(curve.steps, marks, side="right") - 1, 0, len(curve.steps) - 1)
        at_rungs[row] = sign * curve.scores[where]
        shares[row] = curve.work[where] / curve.work[-1]
    finals = np.array([sign * curve.scores[-1] for curve in curves])
    return Pool(marks, at_rungs, finals, tuple(float(f) for f in np.median(shares, axis=0)))


def agreement(p: Pool) -> str:
    """Spearman's rank correlation over the whole pool of each rung with the next (the last with the end),
    and of the first rung with the end: what a run could at best estimate from its own curves."""
    columns = pd.DataFrame(np.column_stack([p.at_rungs, p.finals]), columns=[*map(str, p.marks), "end"])
    ranked = columns.rank()
    pairs = [*zip(columns.columns[:-1], columns.columns[1:]), (columns.columns[0], "end")]
    return ", ".join(f"{a}→{b} {ranked[a].corr(ranked[b]):.2f}" for a, b in pairs)


def cost(fractions: tuple[float, ...], keep: float) -> float:
    """Expected cost of one configuration, in full trainings, when each rung keeps ``keep``."""
    total, reached, previous = 0.0, 1.0, 0.0
    for fraction in (*fractions, 1.0):
        total += reached * (fraction - previous)
        reached *= keep
        previous = fraction
    return total


def halving_regret(p: Pool, keep: float, budget: float, rng: np.random.Generator) -> float:
    """One draw: regret of synchronous successive halving keeping ``keep`` at each rung within ``budget``."""
    n = max(1, min(len(p.finals), int(budget / cost(p.fractions, keep))))
    chosen = rng.choice(len(p.finals), n, replace=False)
    for rung in range(p.at_rungs.shape[1]):
        kept = max(1, round(len(chosen) * keep))
        chosen = chosen[np.argsort(-p.at_rungs[chosen, rung], kind="stable")[:kept]]
    return float(p.finals.max() - p.finals[chosen].max())


def trace_cells(rule: TraceRule, draws: int, seed: int) -> pd.DataFrame:
    """One row per (deadline factor, keep): mean regret over ``draws`` draws."""
    p = pool(rule)
    shared = {"trace": rule.name, "family": rule.family, "oracle": float(p.finals.max()),
              "rung_costs": p.fractions, "agreement": agreement(p)}
    rows = []
    for factor in DEADLINE_FACTORS:
        rng = np.random.default_rng([seed, factor])
        for keep in KEEPS:
            regret = np.mean([halving_regret(p, keep, factor * ATOMS, rng) for _ in range(draws)])
            rows.append({**shared, "factor": factor, "keep": keep, "regret": float(regret)})
    return pd.DataFrame(rows)


def x_over_best(frame: pd.DataFrame) -> pd.Series:
    """Per keep: bench_quality's "x / best" over the frame's cells (the pool's best final as the oracle)."""
    table = frame.pivot(index=["trace", "factor"], columns="keep", values="regret")
    keeps = list(table.columns)
    table.columns = [f"regret {keep}" for keep in keeps]
    table["oracle"] = frame.groupby(["trace", "factor"])["oracle"].first()
    ratios = quality_x_over_best(table, tuple(str(keep) for keep in keeps))
    return pd.Series({keep: ratios[str(keep)] for keep in keeps})


def _keep_name(keep: float) -> str:
    return "1 (random search)" if keep == 1.0 else {1 / 4: "1/4", 1 / 3: "1/3", 1 / 2: "1/2", 3 / 4: "3/4"}[keep]


def render(frame: pd.DataFrame, draws: int, seed: int, seconds: float) -> str:
    names = [_keep_name(k) for k in KEEPS]
    lines = ["# How much each rung should keep", "",
             f"Generated by `python tools/bench_keep.py --draws {draws} --seed {seed}` ({seconds:.0f} s). "
             + __doc__.split("\n\n", 2)[2].split("\n\n")[0].replace("\n", " "), "",
             "| family | " + " | ".join(f"keep {n}: x / best" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for family, part in [("all", frame), *frame.groupby("family")]:
        ratios = x_over_best(part)
        lines.append(f"| {family} | " + " | ".join(f"{ratios[k]:.2f}" for k in KEEPS) + " |")
    best = frame.loc[frame.groupby(["trace", "factor"])["regret"].idxmin()]
    counts = best["keep"].value_counts()
    lines += ["", "Cells in which each share is the best: " + ", ".join(
        f"{_keep_name(k)} {int(counts.get(k, 0))}" for k in KEEPS) + f" of {len(best)}.", "",
              "Per trace, the best share at each budget beside how its rungs rank the trials (Spearman's "
              "correlation over the whole pool, each rung with the next and the first with the end):", "",
              "| trace | best share 2M / 4M / 8M | rank correlations |", "|---|---|---|"]
    for trace, part in best.groupby("trace", sort=True):
        shares = " / ".join(_keep_name(k).split(" ")[0] for k in part.sort_values("factor")["keep"])
        lines.append(f"| {trace} | {shares} | {part['agreement'].iloc[0]} |")
    lines += ["",
        "Per cell, mean regret (the best share in bold; rung costs: the median share of a full training "
        "that reaching each rung's step costs):", "",
        "| trace | budget | rung costs | " + " | ".join(f"keep {n}" for n in names) + " |",
        "|---|---|---|" + "---|" * len(names)]
    for (trace, factor), part in frame.groupby(["trace", "factor"], sort=True):
        regrets = part.set_index("keep")["regret"]
        shown = [f"**{regrets[k]:.4g}**" if regrets[k] == regrets.min() else f"{regrets[k]:.4g}" for k in KEEPS]
        costs = ", ".join(f"{c:.2f}" for c in part["rung_costs"].iloc[0])
        lines.append(f"| {trace} | {factor}M ({factor * ATOMS} trainings) | {costs} | " + " | ".join(shown) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=200, help="random draws of the pool per cell (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    parser.add_argument("--curves", type=Path, default=CURVES, help=f"folder of the traces (default {CURVES})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown file to write (default {OUT})")
    args = parser.parse_args(argv)
    if args.draws < 1:
        parser.error(f"--draws must be at least 1, got {args.draws}")
    if not args.curves.is_dir():
        print(f"no curves folder at {args.curves}: nothing to replay")
        return 0
    started = time.perf_counter()
    frame = pd.concat([trace_cells(rule, args.draws, args.seed) for rule in rules(args.curves)], ignore_index=True)
    publish(render(frame, args.draws, args.seed, time.perf_counter() - started), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
