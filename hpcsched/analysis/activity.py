"""What each trial was doing when: starting up, training, or paused (holding no atoms), and what
the run's atom-time went to (training, start-up, idle), with the hints a user can act on.

A launch holds its atoms from ``launched`` to ``exited``: its start-up is the part before the trial
reported running (Python, imports, data, checkpoint restore; the whole launch if it never did), the
rest is training (its steps, and the checkpoint and exit after a stop request). Between a launch
that ended in a pause and the trial's next launch (or the end of the run) the trial is paused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd

from hpcsched.analysis.loaders import Run


class Activity(str, Enum):
    """What a trial was doing in one segment of time."""

    STARTUP = "start-up"
    TRAINING = "training"
    PAUSED = "paused"

    def __str__(self) -> str:
        return self.value


SEGMENT_COLUMNS = ("trial", "activity", "start", "end", "start_elapsed", "end_elapsed", "atoms")
STARTUP_HINT_SHARE = 0.2  # a start-up share of held atom-time from which the usage figure says what to do
IDLE_HINT_SHARE = 0.15


def segments(run: Run) -> pd.DataFrame:
    """One row per segment: trial, activity (an ``Activity`` value), start, end (absolute), their
    ``_elapsed`` forms, atoms held (0 while paused). In launch order, start-up before training."""
    alloc = run.allocations
    info = run.info
    if alloc.empty:
        return pd.DataFrame({c: pd.Series(dtype="str" if c in ("trial", "activity") else "float64")
                             for c in SEGMENT_COLUMNS})
    start = alloc["start"].to_numpy(float)
    end = alloc["end"].to_numpy(float)
    running = alloc["running_at"].to_numpy(float)
    ready = np.clip(np.where(np.isnan(running), end, running), start, end)  # never running: all start-up
    trials = alloc["trial"].astype(str).to_numpy()
    atoms = alloc["atoms"].to_numpy(float)
    parts = [pd.DataFrame({"trial": trials, "activity": str(Activity.STARTUP), "start": start, "end": ready,
                           "atoms": atoms, "order": np.arange(len(alloc)) * 2}),
             pd.DataFrame({"trial": trials, "activity": str(Activity.TRAINING), "start": ready, "end": end,
                           "atoms": atoms, "order": np.arange(len(alloc)) * 2 + 1})]
    ordered = alloc.assign(position=np.arange(len(alloc))).sort_values(["trial", "launch_seq"], kind="stable")
    next_start = ordered.groupby("trial")["start"].shift(-1).to_numpy(float)
    paused = (ordered["end_reason"] == "pause").to_numpy()
    gap_end = np.where(np.isnan(next_start), info.last_t, next_start)
    keep = paused & (gap_end > ordered["end"].to_numpy(float))
    parts.append(pd.DataFrame({"trial": ordered["trial"].astype(str).to_numpy()[keep],
                               "activity": str(Activity.PAUSED), "start": ordered["end"].to_numpy(float)[keep],
                               "end": gap_end[keep], "atoms": 0.0,
                               "order": ordered["position"].to_numpy()[keep] * 2 + 1.5}))
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["end"] > frame["start"]].sort_values("order", kind="stable").drop(columns="order")
    frame = frame.assign(start_elapsed=frame["start"] - info.start, end_elapsed=frame["end"] - info.start)
    return frame[list(SEGMENT_COLUMNS)].reset_index(drop=True).astype({"trial": "str", "activity": "str"})


@dataclass(frozen=True)
class AtomTime:
    """The run's atom-seconds (its atoms x the time from its start to its last record), split."""

    total: float
    training: float
    startup: float
    launches: int
    startup_median: float  # seconds per launch (NaN without launches that reached running)
    step_median: float  # seconds between two reports of one launch (NaN without such pairs)

    @property
    def idle(self) -> float:
        return max(0.0, self.total - self.training - self.startup)

    def share(self, part: float) -> float:
        return part / self.total if self.total > 0 else math.nan

    def hints(self) -> list[str]:
        """What the split suggests a user change, in plain words (none when nothing stands out)."""
        out = []
        held = self.training + self.startup
        if held > 0 and self.startup / held >= STARTUP_HINT_SHARE:
            per = f"{self.startup_median:.3g} s per launch" if math.isfinite(self.startup_median) else "per launch"
            steps = f" against {self.step_median:.3g} s per step" if math.isfinite(self.step_median) else ""
            out.append(f"start-up took {self.startup / held:.0%} of the atom-time trials held ({self.launches} "
                       f"launches, {per}{steps}): every start, resume and resize pays it; make a start cheaper "
                       f"(import less, load data once, smaller checkpoints) or a step longer, or pause less "
                       f"(a larger scheduler.r)")
        if self.total > 0 and self.idle / self.total >= IDLE_HINT_SHARE:
            out.append(f"atoms were idle {self.idle / self.total:.0%} of the time: nothing was left to start "
                       f"(max_trials reached, or every trial finished or paused); allow more trials or use "
                       f"fewer atoms")
        return out


def atom_time(run: Run) -> AtomTime:
    """The run's atom-time: training, start-up and (the rest) idle; see ``AtomTime``."""
    info = run.info
    seg = segments(run)
    held = seg["atoms"] * (seg["end"] - seg["start"])
    alloc = run.allocations
    startups = alloc["startup"].dropna() if len(alloc) else pd.Series(dtype="float64")
    return AtomTime(total=float(info.atoms * max(info.last_t - info.start, 0.0)),
                    training=float(held[seg["activity"] == str(Activity.TRAINING)].sum()),
                    startup=float(held[seg["activity"] == str(Activity.STARTUP)].sum()),
                    launches=len(alloc),
                    startup_median=float(startups.median()) if len(startups) else math.nan,
                    step_median=_step_median(run))


def launch_segments(run: Run) -> pd.DataFrame:
    """The scores frame with ``segment``: one number per (trial, launch), so a line drawn per
    segment never joins a pause to the resume (reports are matched to the launch before them)."""
    scores = run.scores.sort_values("seq", kind="stable")
    launches = run.allocations[["trial", "launch_seq"]].sort_values("launch_seq", kind="stable")
    if scores.empty or launches.empty:
        return scores.assign(segment=pd.Series(np.zeros(len(scores), dtype=np.int64), index=scores.index))
    matched = pd.merge_asof(scores, launches, left_on="seq", right_on="launch_seq", by="trial",
                            direction="backward")
    key = matched["trial"].astype(str) + "/" + matched["launch_seq"].fillna(-1).astype(np.int64).astype(str)
    return matched.assign(segment=pd.factorize(key)[0]).sort_values(["trial", "seq"], kind="stable")


def _step_median(run: Run) -> float:
    """The median time between two consecutive reports of one launch (a step, with its evaluation)."""
    scores = launch_segments(run)
    if scores.empty:
        return math.nan
    gaps = scores.groupby("segment")["t"].diff().dropna()
    return float(gaps.median()) if len(gaps) else math.nan


def activity_curve(run: Run) -> pd.DataFrame:
    """Atoms held over time by activity (training, start-up) as a step function: elapsed, one column
    per activity and ``atoms`` (their sum); the last row repeats the final usage at the last record."""
    seg = segments(run)
    seg = seg[seg["activity"] != str(Activity.PAUSED)]
    info = run.info
    times = np.r_[seg["start"].to_numpy(float), seg["end"].to_numpy(float)]
    columns = [str(Activity.TRAINING), str(Activity.STARTUP)]
    if not len(times):
        return pd.DataFrame({"elapsed": [0.0, info.last_t - info.start], **{c: [0.0, 0.0] for c in columns},
                             "atoms": [0.0, 0.0]})
    deltas = np.r_[seg["atoms"].to_numpy(float), -seg["atoms"].to_numpy(float)]
    kinds = np.r_[seg["activity"].to_numpy(), seg["activity"].to_numpy()]
    order = np.lexsort((deltas, times))  # releases first at equal times
    times, deltas, kinds = times[order], deltas[order], kinds[order]
    last_of_time = np.r_[times[1:] != times[:-1], True]
    frame = pd.DataFrame({"elapsed": times[last_of_time] - info.start})
    for c in columns:
        frame[c] = np.cumsum(np.where(kinds == c, deltas, 0.0))[last_of_time]
    frame["atoms"] = frame[columns].sum(axis=1)
    frame = pd.concat([pd.DataFrame({"elapsed": [0.0], **{c: [0.0] for c in columns}, "atoms": [0.0]}), frame,
                       frame.iloc[-1:].assign(elapsed=max(info.last_t - info.start, frame["elapsed"].iloc[-1]))],
                      ignore_index=True)
    return frame
