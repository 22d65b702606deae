"""Load the output of ``hpcsched simulate SPEC --out DIR``: the summary and the per-run journals.

    DIR/summary.csv                                   one row per run (matrix columns, variant, seed, ...)
    DIR/events/<cell>/<variant>/seed-<k>.jsonl        one journal per run (absent with --no-events)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from hpcsched.core.errors import RunDirError

from hpcsched.analysis.loaders import Run
from hpcsched.rundir.sim_layout import EVENTS, SEED_FILE as _SEED_FILE, SUMMARY as SUMMARY_NAME, safe_name


def is_simulation(path: str | Path) -> bool:
    """True for a directory holding a simulator summary.csv."""
    return (Path(path) / SUMMARY_NAME).is_file()




@dataclass(frozen=True)
class Simulation:
    """A simulator output directory.

    ``summary``: summary.csv plus a ``cell`` column (the cell's directory name under events/).
    ``matrix_keys``: the summary's matrix-axis columns (those before ``variant``).
    ``runs``: one row per journal on disk: cell, variant, seed, journal (Path); variant is the
    summary's variant name where one matches the directory.
    """

    path: Path
    summary: pd.DataFrame
    matrix_keys: tuple[str, ...]
    runs: pd.DataFrame

    @property
    def cells(self) -> list[str]:
        """Cell names in summary order (then any found only on disk)."""
        return list(dict.fromkeys([*self.summary["cell"], *self.runs["cell"]]))

    @property
    def variants(self) -> list[str]:
        names = list(self.summary["variant"]) if "variant" in self.summary else []
        return list(dict.fromkeys([*names, *self.runs["variant"]]))

    def select(self, cells: Iterable[str] | None = None, variants: Iterable[str] | None = None,
               seeds: Iterable[int] | None = None) -> pd.DataFrame:
        """Rows of ``runs`` matching the filters (None: all)."""
        runs = self.runs
        if cells is not None:
            runs = runs[runs["cell"].isin(list(cells))]
        if variants is not None:
            runs = runs[runs["variant"].isin(list(variants))]
        if seeds is not None:
            runs = runs[runs["seed"].isin(list(seeds))]
        return runs

    def cell_name(self, cell: str) -> str:
        """``cell`` as one of ``cells``: its name (``atoms=8,deadline=60``) or the matrix keys written out
        (``resources.atoms=8,deadline=60``, spaces allowed). RunDirError listing the cells otherwise."""
        cells = self.cells
        short = safe_name(",".join(f"{k.strip().split('.')[-1]}={v.strip()}"
                                   for k, _, v in (part.partition("=") for part in cell.split(","))))
        for name in (cell, short):
            if name in cells:
                return name
        raise RunDirError(f"cell: {cell!r} is not a cell of {self.path}; cells: {', '.join(cells) or 'none'}")

    def run(self, cell: str | None = None, variant: str | None = None, seed: int | None = None,
            mode: str | None = None) -> Run:
        """The journal of one run (the first matching, in cell, variant, seed order) as a Run. ``cell``
        as ``cell_name`` reads it. RunDirError naming what there is when nothing matches."""
        if self.runs.empty:
            raise RunDirError(f"{self.path}: no event logs (the simulation ran with --no-events; run it without)")
        cell = None if cell is None else self.cell_name(cell)
        runs = self.select(None if cell is None else [cell], None if variant is None else [variant],
                           None if seed is None else [seed])
        if runs.empty:
            raise RunDirError(f"{self.path}: no event log for cell={cell} variant={variant} seed={seed}; variants: "
                              f"{', '.join(map(str, self.variants))}; seeds: "
                              f"{', '.join(str(s) for s in sorted(set(self.runs['seed'])))}")
        return Run(runs.iloc[0]["journal"], mode)

    def frame(self, name: str, cells: Iterable[str] | None = None, variants: Iterable[str] | None = None,
              seeds: Iterable[int] | None = None, mode: str | None = None) -> pd.DataFrame:
        """One Run frame (trials, scores, allocations, events, usage, best_so_far) of every selected
        run, with cell, variant and seed columns first (the events' own variant and seed columns
        become run_variant and run_seed)."""
        if name not in ("trials", "scores", "allocations", "events", "usage", "best_so_far"):
            raise ValueError(f"unknown frame {name!r}: trials, scores, allocations, events, usage, best_so_far")
        parts = []
        for row in self.select(cells, variants, seeds).itertuples(index=False):
            part = getattr(Run(row.journal, mode), name).rename(  # a new frame: the Run's stays as it is
                columns={"cell": "run_cell", "variant": "run_variant", "seed": "run_seed"})
            part.insert(0, "seed", row.seed)
            part.insert(0, "variant", row.variant)
            part.insert(0, "cell", row.cell)
            parts.append(part)
        if not parts:
            return pd.DataFrame(columns=["cell", "variant", "seed"])
        return pd.concat(parts, ignore_index=True)

    def means(self) -> pd.DataFrame:
        """Mean and sd over seeds per matrix cell and variant (see ``means_table``)."""
        return means_table(self.summary, self.matrix_keys)


def means_table(summary: pd.DataFrame, matrix_keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per matrix cell and variant: seeds, best_score mean/sd, regret mean/sd, oracle_score mean,
    and the means of trials_started, resizes, pauses, promotions (those present)."""
    keys = [k for k in matrix_keys if k in summary.columns] + ["variant"]
    specs: dict[str, tuple[str, str]] = {"seeds": ("seed", "count")}
    for column in ("best_score", "regret"):
        if column in summary:
            specs[f"{column}_mean"] = (column, "mean")
            specs[f"{column}_sd"] = (column, "std")
    for column in ("oracle_score", "trials_started", "resizes", "pauses", "promotions"):
        if column in summary:
            specs[column] = (column, "mean")
    if summary.empty:
        return pd.DataFrame(columns=keys + list(specs))
    return summary.groupby(keys, sort=False, dropna=False).agg(**specs).reset_index()


def load_simulation(path: str | Path) -> Simulation:
    """A simulator output directory; RunDirError naming the path when it is not one."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path}: no such directory")
    summary_path = path / SUMMARY_NAME
    if not summary_path.is_file():
        raise RunDirError(f"{path}: not a simulator output directory (no {SUMMARY_NAME})")
    try:
        summary = pd.read_csv(summary_path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise RunDirError(f"{summary_path}: cannot read the summary: {exc}") from None
    if "variant" not in summary.columns or "seed" not in summary.columns:
        raise RunDirError(f"{summary_path}: not a simulator summary (no variant and seed columns)")
    matrix_keys = tuple(summary.columns[: list(summary.columns).index("variant")])
    runs = _journals(path / EVENTS)
    summary = summary.copy()
    summary.insert(0, "cell", [_cell_name(row, matrix_keys, set(runs["cell"]))
                               for row in summary[list(matrix_keys)].itertuples(index=False)])
    by_dir = {safe_name(str(v)): str(v) for v in summary["variant"].unique()}
    runs["variant"] = runs["variant"].map(lambda d: by_dir.get(d, d))
    return Simulation(path, summary, matrix_keys, runs)


def _journals(events: Path) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    if events.is_dir():
        for cell in sorted(p for p in events.iterdir() if p.is_dir()):
            for variant in sorted(p for p in cell.iterdir() if p.is_dir()):
                for journal in variant.iterdir():
                    match = _SEED_FILE.match(journal.name)
                    if match and journal.is_file():
                        rows.append({"cell": cell.name, "variant": variant.name, "seed": int(match.group(1)),
                                     "journal": journal})
    frame = pd.DataFrame(rows, columns=["cell", "variant", "seed", "journal"])
    return frame.sort_values(["cell", "variant", "seed"], kind="stable").reset_index(drop=True)


def _cell_name(values: tuple, keys: tuple[str, ...], on_disk: set[str]) -> str:
    """The events/ directory name of a summary row's cell (Cell.label, made safe)."""
    if not keys:
        return "base"

    def label(show) -> str:
        return safe_name(",".join(f"{k.split('.')[-1]}={show(v)}" for k, v in zip(keys, values)))

    plain = label(str)
    if plain in on_disk:
        return plain
    # CSV reading turns 1 into 1.0 in a column that also holds 1.5: try whole floats as ints
    whole = label(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
    return whole if whole in on_disk else plain
