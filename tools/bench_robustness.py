"""Search quality off the quality bench's settings: the shared traces under other R, r, atoms,
scaling and deadlines, as a user with another cluster or another training budget would run them.

    .venv/bin/python tools/bench_robustness.py [--seeds 10] [--jobs 2] [--curves DIR]
        [--out docs/results/robustness.md] [--only TRACE ...]

tools/bench_trace_settings.py fixes one setting per trace (8 atoms, the published R and r). A scheduler that
wins there only because its rules happen to suit that setting would lose here. For every trace of
tools/bench_trace_settings.py's settings (its mode and R), every combination of
- R: the setting's, and half of it;
- r: 1 and 3 (eta = 4);
- atoms: 4 and 16;
- scaling: none without startup, and linear with a 30 s startup (HyperSched may grow trials);
- deadline: 0.5, 1.5 and 4 times R steps on one atom (30 s per step): no trial can reach R,
  a few waves can, many can;
replayed with ASHA, random search and HyperSched (defaults), seeds 0 .. N-1. Per cell it writes the
mean regret to the oracle of each and HyperSched's ratio to the better of ASHA and random search;
per trace, the cells where HyperSched is at least as good as both and the geometric mean ratio.
A trace file that is absent is skipped with a note.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from bench_trace_settings import (BASELINES, BLIND_NOTE, CURVES, SETTINGS, STEP_TIME, Setting, experiment_raw,  # noqa: E402
                           picked_blind)
from results_page import publish  # noqa: E402

from hpcsched.loop.simulate import simulate_experiment  # noqa: E402
from hpcsched.spec import parse_experiment  # noqa: E402

OUT = REPO / "docs" / "results" / "robustness.md"
VARIANTS = ("asha", "random", "hypersched")
R_FACTORS = (1.0, 0.5)
SMALLEST_RUNG = (1, 3)
ATOMS = (4, 16)
SCALINGS = (("none", 0.0), ("linear", 30.0))  # (scaling, startup seconds)
DEADLINE_FACTORS = (0.5, 1.5, 4.0)  # times R steps on one atom
FLOOR = 1e-4  # regrets below this count as this much in ratios (a zero regret would divide by zero)
KEY = ["trace", "R", "r", "atoms", "scaling", "deadline"]  # one cell of the tables


@dataclass(frozen=True)
class Cell:
    """One off-bench configuration of a trace: all deadlines of it run as one experiment."""

    trace: str
    mode: str
    R: int
    r: int
    atoms: int
    scaling: str
    startup: float

    @property
    def deadlines(self) -> list[int]:
        return [int(f * self.R * STEP_TIME) for f in DEADLINE_FACTORS]


def trace_names() -> list[str]:
    """The traces of the grid, by name (lstm-ptb for lstm-ptb.csv)."""
    return list(dict.fromkeys(Path(setting.trace).stem for setting in SETTINGS))


def cells(only: list[str] | None = None) -> list[Cell]:
    """The grid, one base per trace (the first quality-bench setting that replays it)."""
    bases: dict[str, Setting] = {}
    for setting in SETTINGS:
        bases.setdefault(setting.trace, setting)
    grid = []
    for trace, base in bases.items():
        if only and Path(trace).stem not in only:
            continue
        for factor, r, atoms, (scaling, startup) in itertools.product(R_FACTORS, SMALLEST_RUNG, ATOMS, SCALINGS):
            grid.append(Cell(trace, base.mode, max(r + 1, round(base.R * factor)), r, atoms, scaling, startup))
    return grid


def experiment_for(cell: Cell, curves: Path) -> dict:
    setting = Setting(Path(cell.trace).stem, cell.trace, cell.mode, cell.R, cell.r, cell.scaling, cell.startup, "")
    raw = experiment_raw(setting, curves)
    raw["resources"]["atoms"] = cell.atoms
    raw["deadline"] = cell.deadlines[0]
    raw["matrix"] = {"deadline": cell.deadlines}
    raw["variants"] = [v for v in raw["variants"] if v["name"] in VARIANTS]
    return raw


def run_cell(cell: Cell, curves: Path, seeds: int, jobs: int) -> pd.DataFrame:
    frame = simulate_experiment(parse_experiment(experiment_for(cell, curves)), seeds=list(range(seeds)), jobs=jobs,
                                event_log=False)
    for name, value in (("trace", Path(cell.trace).stem), ("R", cell.R), ("r", cell.r), ("atoms", cell.atoms),
                        ("scaling", cell.scaling)):
        frame[name] = value
    return frame


def cell_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: mean regret per variant, HyperSched's ratio to the better baseline, and a win flag."""
    table = frame.groupby(KEY + ["variant"])["regret"].mean().unstack("variant")[list(VARIANTS)]
    better = table[list(BASELINES)].min(axis=1)
    table["ratio"] = table["hypersched"].clip(lower=FLOOR) / better.clip(lower=FLOOR)
    table["wins"] = table["hypersched"] <= better
    return table


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per trace and overall: cells, HyperSched's wins, and the geometric mean of each variant's regret
    over the best of the three (1 = always the best)."""
    best = table[list(VARIANTS)].min(axis=1).clip(lower=FLOOR)
    rows = {}
    groups = [(trace, part) for trace, part in table.groupby(level="trace")] + [("all", table)]
    for name, part in groups:
        row = {"cells": len(part), "HyperSched >= both": int(part["wins"].sum()),
               "geo. mean ratio": float(np.exp(np.log(part["ratio"]).mean()))}
        for v in VARIANTS:
            row[f"{v} / best"] = float(np.exp(np.log(part[v].clip(lower=FLOOR) / best.loc[part.index]).mean()))
        rows[name] = row
    return pd.DataFrame(rows).T


def render(table: pd.DataFrame, seeds: int, seconds: float) -> str:
    lines = ["# Search quality off the bench's settings", "",
             f"Generated by `python tools/bench_robustness.py --seeds {seeds}` ({seconds:.0f} s). The shared traces "
             "replayed in the simulator under other settings than tools/bench_trace_settings.py's: R (the bench's "
             "and half), r (1, 3; eta = 4), atoms (4, 16), scaling (none without startup; linear with a 30 s "
             "startup) and deadlines of 0.5, 1.5 and 4 times R steps on one atom (30 s a step). "
             "Regret = |oracle - best score|, "
             f"mean over seeds 0..{seeds - 1}; ratio = HyperSched's regret / that of the better of ASHA and random "
             "search; `x / best`: the geometric mean over the cells of a variant's regret over the best of the "
             "three (1: always the best).", "", "| trace | cells | HyperSched >= both | geo. mean ratio | "
             + " | ".join(f"{v} / best" for v in VARIANTS) + " |", "|---|---|---|---|" + "---|" * len(VARIANTS)]
    for name, row in summary(table).iterrows():
        lines.append(f"| {name} | {int(row['cells'])} | {int(row['HyperSched >= both'])} | "
                     f"{row['geo. mean ratio']:.2f} | " + " | ".join(f"{row[f'{v} / best']:.2f}" for v in VARIANTS)
                     + " |")
    lines += ["", "| trace | R | r | atoms | scaling | T (s) | regret ASHA | regret random | regret HyperSched "
              "| ratio | HyperSched >= both |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    blind = 0
    for key, row in table.iterrows():
        digits = 2 if row[list(VARIANTS)].max() >= 1 else 4
        where = dict(zip(KEY, key))
        startup = dict(SCALINGS)[where["scaling"]]
        mark = " †" if picked_blind(where["R"], where["scaling"], startup, where["deadline"]) else ""
        blind += bool(mark)
        lines.append("| " + " | ".join(str(k) for k in key) + mark + " | "
                     + " | ".join(f"{row[v]:.{digits}f}" for v in VARIANTS)
                     + f" | {row['ratio']:.2f} | {'yes' if row['wins'] else '**no**'} |")
    if blind:
        lines += ["", f"{BLIND_NOTE} {blind} of {len(table)} cells."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 per cell (default 10)")
    parser.add_argument("--jobs", type=int, default=2, help="simulation processes (default 2)")
    parser.add_argument("--curves", type=Path, default=CURVES, help=f"folder of the shared traces (default {CURVES})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown file to write (default {OUT})")
    parser.add_argument("--only", nargs="*", default=None, help="trace names to run, e.g. lstm-ptb (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(trace_names()))
    if unknown:
        parser.error(f"--only: no trace named {', '.join(unknown)} (traces: {', '.join(trace_names())})")
    started = time.perf_counter()
    frames, absent = [], set()
    for cell in cells(args.only):
        if not (args.curves / cell.trace).is_file():
            if cell.trace not in absent:
                print(f"skipping {cell.trace}: {args.curves / cell.trace} is absent")
                absent.add(cell.trace)
            continue
        frames.append(run_cell(cell, args.curves, args.seeds, args.jobs))
    if not frames:
        print("no trace found; nothing written")
        return 0
    publish(render(cell_table(pd.concat(frames, ignore_index=True)), args.seeds, time.perf_counter() - started),
            args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
