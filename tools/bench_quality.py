"""Search quality on every shared trace under one bench rule: ASHA, random search, one-epoch and HyperSched.

    .venv/bin/python tools/bench_quality.py [--seeds 40] [--jobs 2] [--curves DIR] [--out docs/results/quality.md]
        [--only PATTERN ...] [--configurations NAME ...]

Every trace under the curves folder (../shared/data/curves, recursively) is replayed in the simulator
with the settings tools/bench_rule.py derives from the trace alone (R = the longest curve, r = 1,
eta = 4, 8 atoms, deadlines 2M / 4M / 8M, two systems), seeds 0 .. N-1 (each seed visits the curves
in another order; every variant of a seed replays the same order). Per cell it writes the mean best
score and regret to the oracle (DESIGN.md §8) of each variant, HyperSched's regret paired by seed
against the better of ASHA and random search (mean difference ± standard error, the verdict: worse or
better beyond 2 standard errors, else par), the ratio of the regrets, and the atoms' idle time. Per
family and overall: "x / best", the geometric mean over cells of a variant's regret over the best
of ASHA, random search and HyperSched (regrets floored at 0.001 x |oracle|; 1 = always the best),
and the verdict counts. ``--configurations`` adds named HyperSched configurations (CONFIGURATIONS),
each summarised as if it were the default: what a rule earns on the whole bench.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from bench_rule import DEADLINE_FACTORS, SYSTEMS, System, TraceRule, experiment_raw, rules  # noqa: E402
from results_page import commit, publish  # noqa: E402

from hpcsched.loop.simulate import simulate_experiment  # noqa: E402
from hpcsched.spec import parse_experiment  # noqa: E402

CURVES = REPO.parent / "shared" / "data" / "curves"
OUT = REPO / "docs" / "results" / "quality.md"
VARIANTS = ("asha", "random", "one_epoch", "hypersched")
BASELINES = ("asha", "random")
THREE = ("asha", "random", "hypersched")  # "x / best" is over the best of these
FLOOR = 1e-3  # regrets below this share of |oracle| count as equal (ties at the oracle)
SIGNIFICANT = 2.0  # a paired difference beyond this many standard errors is a verdict
RATIO_LIMIT = 1.5  # a cell whose regret ratio is above this is named in the summary
KEY = ["family", "trace", "system", "factor"]
# Named HyperSched configurations (scheduler fields) replayed beside the default with --configurations:
# each without one of its rules, and the paper's rules.
CONFIGURATIONS: dict[str, dict] = {
    "fixed-rungs": {"rung_trust": "fixed"},  # successive halving's 1/eta at every rung
    "score-rungs": {"rung_value": "score"},  # rungs rank by the score, not by the curve's forecast
    "no-runner-ups": {"runner_ups": False},  # the first rung's cut unchecked by runner-ups
    "no-resize": {"allocation": "none"},  # nothing grows (and so the deadline entrance never closes)
    "no-entrance": {"entrance": "none"},  # explores to the deadline
    "paper": {"speculative": True, "entrance": "adaptive", "rung_trust": "fixed", "rung_value": "score"},
}


def variants(configurations: list[str]) -> list[dict]:
    """The spec's variants: the four of every table, then the named configurations."""
    return ([{"name": "asha", "scheduler": {"kind": "asha"}},
             {"name": "random", "scheduler": {"kind": "random"}},
             {"name": "one_epoch", "scheduler": {"kind": "one_epoch"}},
             {"name": "hypersched"}]
            + [{"name": f"hypersched-{name}", "scheduler": CONFIGURATIONS[name]} for name in configurations])


def replay(rule: TraceRule, system: System, seeds: int, jobs: int, configurations: list[str]) -> pd.DataFrame:
    """Every deadline and variant of one trace under one system, seeds 0..N-1, with the cell's keys."""
    return simulate_cells(experiment_raw(rule, system, variants(configurations)), rule, system, seeds, jobs)


def simulate_cells(raw: dict, rule: TraceRule, system: System, seeds: int, jobs: int) -> pd.DataFrame:
    """The runs of the spec mapping ``raw`` (one trace under one system), seeds 0..N-1, each row with its
    cell's keys (KEY: family, trace, system, deadline factor)."""
    frame = simulate_experiment(parse_experiment(raw), seeds=list(range(seeds)), jobs=jobs, event_log=False)
    frame.insert(0, "factor", frame["deadline"].map(dict(zip(rule.deadlines, DEADLINE_FACTORS))))
    for position, (name, value) in enumerate((("family", rule.family), ("trace", rule.name),
                                              ("system", system.name))):
        frame.insert(position, name, value)
    return frame


def replay_every(chosen: list[TraceRule], one: Callable[[TraceRule, System], pd.DataFrame]) -> pd.DataFrame:
    """``one(rule, system)`` for every chosen trace under every system, a progress line per trace."""
    started = time.perf_counter()
    frames = []
    for rule in chosen:
        for system in SYSTEMS:
            frames.append(one(rule, system))
        print(f"{rule.name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    return pd.concat(frames, ignore_index=True)


def paired(frame: pd.DataFrame, ours: str, theirs: pd.Series) -> pd.DataFrame:
    """Per cell: ``ours``'s regret minus that of the cell's baseline named by ``theirs`` (paired by
    seed; positive: ours is worse), its mean and standard error."""
    per_seed = frame.pivot_table(index=KEY + ["seed"], columns="variant", values="regret")
    baseline = theirs.reindex(per_seed.index.droplevel("seed")).to_numpy()
    picked = np.array([per_seed[b].iloc[i] for i, b in enumerate(baseline)])
    gap = pd.Series(per_seed[ours].to_numpy() - picked, index=per_seed.index).groupby(KEY)
    return pd.DataFrame({"mean": gap.mean(), "se": gap.sem(ddof=1).fillna(0.0)})


class Verdict(StrEnum):
    """Ours against a baseline or a peer: the one spelling of every quality table's verdicts."""

    WORSE = "worse"
    PAR = "par"
    BETTER = "better"
    NONE = "no verdict"  # a side was measured on one seed (no standard error)

    @property
    def shown(self) -> str:
        """As a table cell: a verdict either way in bold."""
        return f"**{self}**" if self in (Verdict.WORSE, Verdict.BETTER) else str(self)


JUDGED = (Verdict.WORSE, Verdict.PAR, Verdict.BETTER)  # the counts every summary gives, in this order


def tally(verdicts: Iterable[Verdict]) -> dict[Verdict, int]:
    """How many of ``verdicts`` are each verdict (every one of them, zeros included)."""
    listed = list(verdicts)
    return {v: listed.count(v) for v in Verdict}


def verdict(mean: float, se: float) -> Verdict:
    """Worse / better beyond SIGNIFICANT standard errors of a paired regret difference, else par."""
    if mean > SIGNIFICANT * se and mean > 0:
        return Verdict.WORSE
    if mean < -SIGNIFICANT * se and mean < 0:
        return Verdict.BETTER
    return Verdict.PAR


def cell_table(frame: pd.DataFrame, ours: str = "hypersched") -> pd.DataFrame:
    """One row per cell: the oracle, each variant's mean best score, regret and idle time, and
    ``ours`` against the better of ASHA and random search (paired difference, verdict, ratio)."""
    means = frame.groupby(KEY + ["variant"])[["best_score", "regret", "idle_steps"]].mean().unstack("variant")
    table = pd.DataFrame(index=means.index)
    table["deadline"] = frame.groupby(KEY)["deadline"].first()
    table["oracle"] = frame.groupby(KEY)["oracle_score"].mean()
    floor = FLOOR * table["oracle"].abs()
    names = [v for v in means["regret"].columns if v in VARIANTS or v.startswith("hypersched")]
    for v in names:
        table[f"best {v}"] = means["best_score"][v]
        table[f"regret {v}"] = means["regret"][v]
        table[f"idle {v}"] = means["idle_steps"][v]
    table["idle max"] = frame[frame["variant"] == ours].groupby(KEY)["idle_steps"].max()
    better = table[[f"regret {b}" for b in BASELINES]].idxmin(axis=1).str.removeprefix("regret ")
    table["baseline"] = better
    gap = paired(frame, ours, better)
    table["gap"], table["gap se"] = gap["mean"], gap["se"]
    table["verdict"] = [verdict(m, s) for m, s in zip(table["gap"], table["gap se"])]
    chosen = pd.Series([table.loc[i, f"regret {b}"] for i, b in zip(table.index, better)], index=table.index)
    table["ratio"] = table[f"regret {ours}"].clip(lower=floor) / chosen.clip(lower=floor)
    return table


def x_over_best(table: pd.DataFrame, names: tuple[str, ...]) -> dict[str, float]:
    """The geometric mean over the table's cells of each variant's regret over the best of ``names``."""
    floor = FLOOR * table["oracle"].abs()
    regrets = pd.DataFrame({v: table[f"regret {v}"].clip(lower=floor) for v in names})
    best = regrets.min(axis=1)
    return {v: float(np.exp(np.log(regrets[v] / best).mean())) for v in names}


def families(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The table's cells per family, then all of them."""
    return [(name, part) for name, part in table.groupby(level="family")] + [("all", table)]


def summary(table: pd.DataFrame, ours: str = "hypersched") -> pd.DataFrame:
    """Per family and overall: cells, x / best of ASHA, random search and ``ours``, its verdict
    counts, cells with a regret ratio above RATIO_LIMIT and the most idle run."""
    rows = {}
    for name, part in families(table):
        ratios = x_over_best(part, ("asha", "random", ours))
        counts = tally(part["verdict"])
        rows[name] = {"cells": len(part), "asha / best": ratios["asha"], "random / best": ratios["random"],
                      "x / best": ratios[ours], **{str(v): counts[v] for v in JUDGED},
                      f"ratio > {RATIO_LIMIT}": int((part["ratio"] > RATIO_LIMIT).sum()),
                      "idle max": float(part["idle max"].max())}
    return pd.DataFrame(rows).T


def _score(value: float, oracle: float) -> str:
    return f"{value:.2f}" if abs(oracle) >= 10 else f"{value:.4f}"


def render(frame: pd.DataFrame, seeds: int, seconds: float, configurations: list[str]) -> str:
    table = cell_table(frame)
    total = summary(table)
    lines = ["# Search quality under one bench rule", "",
             f"Generated by `python tools/bench_quality.py --seeds {seeds}"
             + (f" --configurations {' '.join(configurations)}" if configurations else "")
             + f"` ({seconds:.0f} s) on commit {commit()}. Every trace under "
             "the shared curves folder replayed in the simulator with settings derived from the trace alone "
             "(tools/bench_rule.py, DESIGN.md §8): R = the longest curve's last step, r = 1, eta = 4, 8 atoms; a "
             "step takes the trace's `time`, else 30 s on one atom; M = the median time to a curve's last step on "
             "one atom; deadlines 2M, 4M, 8M; systems `plain` (no scaling, no startup) and `sqrt` (sqrt scaling, "
             "a startup of one median step; the scheduler believes the truth). Seeds 0.."
             f"{seeds - 1}; every variant of a seed replays the same curves in the same order.", "",
             "Regret = |oracle - best score|, the oracle being the best a single trial alone on all atoms could "
             "reach by the deadline. `x / best` = the geometric mean over cells of a variant's mean regret over "
             "the best of ASHA, random search and HyperSched (regrets floored at 0.001 x |oracle|; 1 = always the "
             "best). Verdicts: HyperSched's regret paired by seed against the better of ASHA and random search in "
             f"the cell, worse / better beyond {SIGNIFICANT:g} standard errors, else par. `idle`: the most idle run's "
             "atom-time with no trial on it, while a trial started then could still report a step, in median "
             "steps per atom.", "",
             f"| family | cells | ASHA / best | random / best | HyperSched / best | {' | '.join(JUDGED)} "
             f"| ratio > {RATIO_LIMIT} | idle (max) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in total.iterrows():
        lines.append(f"| {name} | {int(row['cells'])} | {row['asha / best']:.2f} | {row['random / best']:.2f} | "
                     f"**{row['x / best']:.2f}** | " + "".join(f"{int(row[v])} | " for v in JUDGED) +
                     f"{int(row[f'ratio > {RATIO_LIMIT}'])} | {row['idle max']:.2f} |")
    if configurations:
        lines += ["", "Named HyperSched configurations, each summarised as if it were the default (x / best over the "
                  "best of ASHA, random search and that configuration; verdicts against the better baseline): "
                  + "; ".join(f"`{name}`: {CONFIGURATIONS[name]}" for name in configurations) + ".", "",
                  f"| configuration | family | x / best | {' | '.join(JUDGED)} | ratio > {RATIO_LIMIT} |",
                  "|---|---|---|---|---|---|---|"]
        for label in ["hypersched"] + [f"hypersched-{name}" for name in configurations]:
            for name, row in summary(cell_table(frame, label), label).iterrows():
                lines.append(f"| {label} | {name} | {row['x / best']:.2f} | "
                             + "".join(f"{int(row[v])} | " for v in JUDGED) + f"{int(row[f'ratio > {RATIO_LIMIT}'])} |")
    lines += ["", "Per cell (mean over seeds; perplexity traces are minimised; gap = HyperSched's regret minus the "
              "better baseline's, paired by seed, ± standard error):", "",
              "| trace | system | T | oracle | ASHA | random | one-epoch | HyperSched | regret ASHA | regret random "
              "| regret one-epoch | regret HyperSched | gap ± se | verdict | ratio | idle |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, row in table.iterrows():
        _, trace, system, factor = key
        oracle = row["oracle"]
        cells = [trace, system, f"{factor}M = {row['deadline']:.0f} s", _score(oracle, oracle)]
        cells += [_score(row[f"best {v}"], oracle) for v in VARIANTS]
        cells += [_score(row[f"regret {v}"], oracle) for v in VARIANTS]
        gap = f"{_score(row['gap'], oracle)} ± {_score(row['gap se'], oracle)} ({row['baseline']})"
        cells += [gap, Verdict(row["verdict"]).shown, f"{row['ratio']:.2f}", f"{row['idle max']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def selected(all_rules: list[TraceRule], only: list[str] | None) -> list[TraceRule]:
    """The rules whose trace name matches one of ``only``'s patterns (all without it)."""
    if not only:
        return all_rules
    return [rule for rule in all_rules if any(fnmatch.fnmatch(rule.name, pattern) for pattern in only)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds 0..N-1 per cell (default 40)")
    parser.add_argument("--jobs", type=int, default=2, help="simulation processes (default 2)")
    parser.add_argument("--curves", type=Path, default=CURVES, help=f"folder of the traces (default {CURVES})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown file to write (default {OUT})")
    parser.add_argument("--only", nargs="*", default=None,
                        help="trace name patterns to run, e.g. 'lcbench/*' nmt-ted-ru-en (default: all)")
    parser.add_argument("--configurations", nargs="*", default=[], choices=sorted(CONFIGURATIONS),
                        help="named HyperSched configurations to replay beside the default")
    args = parser.parse_args(argv)
    if not args.curves.is_dir():
        print(f"no curves folder at {args.curves}; nothing written")
        return 0
    chosen = selected(rules(args.curves), args.only)
    if args.only and not chosen:
        parser.error(f"--only: no trace matches {' '.join(args.only)} under {args.curves}")
    if not chosen:
        print(f"no trace under {args.curves}; nothing written")
        return 0
    started = time.perf_counter()
    frame = replay_every(chosen, lambda rule, system: replay(rule, system, args.seeds, args.jobs,
                                                             args.configurations))
    publish(render(frame, args.seeds, time.perf_counter() - started, args.configurations), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
