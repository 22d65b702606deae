"""Load a run (a run directory or one journal file) as tidy pandas frames.

    run = load_run("runs/cifar10")          # or a simulator journal: .../seed-0.jsonl
    run.info                                 # RunInfo: name, variant, deadline, best, ...
    run.trials, run.scores, run.allocations, run.events, run.usage

Frames are built on first access and kept; columns are documented in docs/analysis.md.
A run in progress loads what its journal holds so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from hpcsched.rundir.sim_layout import is_simulation_output
from hpcsched.core.errors import RunDirError
from hpcsched.core.mode import MODES, Mode
from hpcsched.rundir.paths import RunDir
from hpcsched.core.records import ControllerResumed, EntranceClosed, RunExtended, RunFinished, RunStarted

from hpcsched.analysis import frames
from hpcsched.analysis.parse import JournalTable, parse_journal
from hpcsched.analysis.usage import usage_curve



@dataclass(frozen=True)
class RunInfo:
    """What the journal says about the run as a whole; times are absolute on the run's clock."""

    journal: Path
    run_dir: Path | None  # None for a lone journal file (simulator output)
    name: str
    variant: str
    seed: int
    spec_digest: str
    atoms: int
    atom_ids: tuple[str, ...]
    mode: str  # max | min: how scores compare
    metric: str  # the metric's name
    start: float
    deadline: float
    last_t: float  # the latest time any record carries
    entrance_closed_at: float | None
    entrance_reason: str | None
    finished_at: float | None  # None while in progress (also after a controller resumed the run)
    finish_reason: str | None
    resumed_at: tuple[float, ...]  # when a restarted controller took over
    best_trial: str | None  # RunFinished's, or the best reported so far while in progress
    best_score: float | None
    best_step: int | None
    records: int
    torn_tail: bool

    @property
    def in_progress(self) -> bool:
        """No RunFinished record yet."""
        return self.finished_at is None

    def elapsed(self, t: float | None) -> float | None:
        """``t`` relative to the run's start."""
        return None if t is None else t - self.start


def find_journal(path: str | Path) -> tuple[Path, Path | None]:
    """(journal file, run dir or None) for a run directory or a journal file; RunDirError otherwise."""
    path = Path(path)
    if path.is_dir():
        journal = RunDir(path).journal
        if journal.is_file():
            return journal, path
        hint = ""
        if is_simulation_output(path):
            hint = " (it looks like simulator output: use load_simulation)"
        raise RunDirError(f"{path}: not a run directory: no {journal.name}{hint}")
    if path.is_file():
        return path, (path.parent if RunDir(path.parent).journal == path.absolute() else None)
    raise RunDirError(f"{path}: no such run directory or journal")


class Run:
    """A run's journal with its frames, each built on first access."""

    def __init__(self, path: str | Path, mode: str | None = None):
        self.journal, self.run_dir = find_journal(path)
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be max or min, got {mode!r}")
        self._mode = mode

    def __repr__(self) -> str:
        return f"Run({str(self.run_dir or self.journal)!r})"

    @cached_property
    def table(self) -> JournalTable:
        """The parsed journal (reports as columns, other records as objects)."""
        table = parse_journal(self.journal)
        if not table.records or not isinstance(table.records[0][1], RunStarted):
            raise RunDirError(f"{self.journal}: the journal does not begin with a run_started record "
                              f"({table.lines} line(s)): the run has not started, or this is no journal")
        return table

    @cached_property
    def info(self) -> RunInfo:
        table = self.table
        started: RunStarted = table.records[0][1]  # type: ignore[assignment]
        closed = next((r for _, r in table.records if isinstance(r, EntranceClosed)), None)
        finished = _final(table)
        extended = [r for _, r in table.records if isinstance(r, RunExtended)]
        last_t = max(started.t, max((r.t for _, r in table.records), default=started.t),
                     float(table.reports["t"].max()) if len(table.reports) else started.t)
        mode = self.mode
        if finished is not None:
            best = (finished.best_trial, finished.best_score, finished.best_step)
        else:
            best = _best_of(table.reports, mode)
        return RunInfo(
            journal=self.journal, run_dir=self.run_dir, name=started.name, variant=started.variant,
            seed=started.seed, spec_digest=started.spec_digest, atoms=started.atoms,
            atom_ids=tuple(started.atom_ids), mode=mode,
            metric=started.metric, start=started.t, deadline=extended[-1].deadline if extended else started.deadline,
            last_t=last_t, entrance_closed_at=closed.t if closed else None,
            entrance_reason=closed.reason if closed else None,
            finished_at=finished.t if finished else None, finish_reason=finished.reason if finished else None,
            resumed_at=tuple(r.t for _, r in table.records if isinstance(r, ControllerResumed)),
            best_trial=best[0], best_score=best[1], best_step=best[2], records=table.lines,
            torn_tail=table.torn_tail)

    @cached_property
    def mode(self) -> str:
        """max | min: the argument, else the run's own (its run_started record)."""
        if self._mode:
            return self._mode
        started = next((r for _, r in self.table.records if isinstance(r, RunStarted)), None)
        return started.mode if started is not None else "max"

    @cached_property
    def scores(self) -> pd.DataFrame:
        """One row per report: trial, step, score, t, elapsed, atoms, seq, checkpoint, and one
        column per other metric reported (``ctx.report(step, score, loss=...)``)."""
        return frames.scores_frame(self.table, self.info.start)

    @cached_property
    def allocations(self) -> pd.DataFrame:
        """One row per launch: trial, atoms, start, end, reason, end_reason, ... (docs/analysis.md)."""
        return frames.allocations_frame(self.table, self.info.start, self.info.last_t)

    @cached_property
    def trials(self) -> pd.DataFrame:
        """One row per trial, in creation order (docs/analysis.md)."""
        return frames.trials_frame(self.table, self.scores, self.allocations, self.info.mode, self.info.start,
                                   self.info.last_t)

    @cached_property
    def events(self) -> pd.DataFrame:
        """Every record as a row, in journal order (docs/analysis.md)."""
        return frames.events_frame(self.table, self.info.start)

    @cached_property
    def usage(self) -> pd.DataFrame:
        """Atoms in use over time: t, elapsed, atoms (see usage.usage_curve)."""
        return usage_curve(self.allocations, self.info.start, until=self.info.last_t)

    @cached_property
    def best_so_far(self) -> pd.DataFrame:
        """The run's best score after each improvement: t, elapsed, score, trial, step."""
        return frames.running_best(self.scores, self.info.mode)


def load_run(path: str | Path, mode: str | None = None) -> Run:
    """A run directory (holding events.jsonl) or a journal file, parsed at once.

    ``mode`` (max | min) overrides how scores compare (by default: the run's result.json or
    run_started record). RunDirError when the path is not a run.
    """
    run = Run(path, mode)
    _ = run.info  # parse now, so a bad directory fails here
    return run


def load_trials(path: str | Path) -> pd.DataFrame:
    return load_run(path).trials


def load_scores(path: str | Path) -> pd.DataFrame:
    return load_run(path).scores


def load_allocations(path: str | Path) -> pd.DataFrame:
    return load_run(path).allocations


def load_events(path: str | Path) -> pd.DataFrame:
    return load_run(path).events


def load_run_info(path: str | Path) -> RunInfo:
    return load_run(path).info


def _final(table: JournalTable) -> RunFinished | None:
    """The RunFinished that ends the journal, unless a controller resumed (or extended) the run after it."""
    for _, record in reversed(table.records):
        if isinstance(record, RunFinished):
            return record
        if isinstance(record, (ControllerResumed, RunExtended)):
            return None
    return None


def _best_of(reports: pd.DataFrame, mode: str) -> tuple[str | None, float | None, int | None]:
    if reports.empty:
        return None, None, None
    scores = reports["score"].to_numpy()
    i = Mode(mode).best_index(scores)  # first occurrence, as RunState
    row = reports.iloc[i]
    return str(row["trial"]), float(row["score"]), int(row["step"])


def read_result(run_dir: Path | None) -> dict[str, Any] | None:
    """The run's result.json, or None when absent or unreadable."""
    from hpcsched.rundir.result import read_result as read
    from hpcsched.rundir.paths import RunDir

    return None if run_dir is None else read(RunDir(run_dir))
