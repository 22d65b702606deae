"""``hpcsched logs RUN_DIR TRIAL``: what a trial's launch printed, as ``sacct``/``tail`` would show it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from hpcsched.core.errors import UserError
from hpcsched.rundir.journal import read_journal
from hpcsched.rundir.paths import RunDir, launch_id_of
from hpcsched.core.state import LIVE, RunState

STREAMS = ("stdout", "stderr")


def _state(run_dir: RunDir) -> RunState:
    return RunState.replayed(read_journal(run_dir.journal))


def logs_command(path: Path, trial_id: str, launch: int | None = None, rank: int = 0, follow: bool = False,
                 out: TextIO = sys.stdout, poll: float = 0.5) -> int:
    """Print the stdout then the stderr of a trial's launch (default: its latest); ``follow``:
    keep printing what the latest launch writes until it ends (or Ctrl-C)."""
    run_dir = RunDir.existing(path)
    state = _state(run_dir)
    trial = state.trials.get(trial_id)
    if trial is None:
        known = sorted(state.trials)
        shown = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "")
        raise UserError(f"trial: no trial {trial_id!r} in {run_dir.path} (trials: {shown or 'none yet'})")
    if trial.launches == 0:
        print(f"{trial_id} has not been launched yet ({trial.status})", file=out)
        return 0
    number = trial.launches if launch is None else launch
    if not 1 <= number <= trial.launches:
        raise UserError(f"--launch: {trial_id} has launches 1..{trial.launches}, got {launch}")
    if follow and number != trial.launches:
        raise UserError(f"--follow: only the latest launch ({trial.launches}) of {trial_id} can be followed")
    if rank < 0:
        raise UserError(f"--rank: expected a rank >= 0, got {rank}")
    launch_id = launch_id_of(trial_id, number)
    paths = run_dir.trial(trial_id)
    logs = {stream: paths.launch_log(launch_id, rank, stream) for stream in STREAMS}
    if not any(p.exists() for p in logs.values()):
        print(f"{launch_id} rank {rank}: no output files in {paths.launches}", file=out)
        return 0
    offsets = {stream: 0 for stream in STREAMS}
    for stream in STREAMS:
        print(f"==> {launch_id} rank {rank} {stream} ({logs[stream]}) <==", file=out)
        offsets[stream] = _copy_new(logs[stream], 0, out)
    if not follow:
        return 0
    while True:  # follow the latest launch while it holds its atoms
        time.sleep(poll)
        current = _state(run_dir).trials[trial_id]  # before copying: what it wrote before it ended is copied
        for stream in STREAMS:
            offsets[stream] = _copy_new(logs[stream], offsets[stream], out)
        if current.launches != number or current.status not in LIVE:
            print(f"==> {launch_id} ended ({current.status}) <==", file=out)
            return 0


def _copy_new(path: Path, offset: int, out: TextIO) -> int:
    """Print what ``path`` holds past ``offset``; return the new offset (a missing file: nothing)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset
    if data:
        out.write(data.decode(errors="replace"))
        out.flush()
    return offset + len(data)
