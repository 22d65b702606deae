"""The run directory on shared storage: journal, trial files, result; private to its owner.

    RUN_DIR/
      events.jsonl          the journal (core/records.py, rundir/journal.py), appended under events.jsonl.lock
      spec.yaml             the spec the run was started with
      controller.json       host, pid and backend of the controller now in charge
      result.json           the answer (rundir/result.py): best trial, config, score, step, checkpoint;
                            rewritten on every new checkpointed best, final at the end
      .reserve              1 MiB held while a controller runs, freed on a full disk for its last records
      trials/<id>/          one trial (TrialPaths):
        scores.jsonl        what the trial's launches wrote, one line each (rundir/scores.py owns the format)
        checkpoints/        step-NNNNNNNN.pt|.pkl, written by the trial (trial/context.py)
        launches/           submitit's pickles and logs, <launch>.json launch records, ready files
        tensorboard/        TensorBoard event files of its reports, one per launch (rundir/event_files.py)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcsched.core.errors import RunDirError
from hpcsched.rundir.sim_layout import is_simulation_output

JOURNAL = "events.jsonl"
TRIALS = "trials"
RUNS = "runs"  # where runs and simulations go when no directory is named
RESERVE_BYTES = 1 << 20

log = logging.getLogger(__name__)


def default_output_dir(name: str, kind: str = "") -> Path:
    """``runs/<name>-<YYYYmmdd-HHMMSS>`` for a run, ``runs/<name>-<kind>-<...>`` for another output
    (``sim``: a simulation), relative to the working directory."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(RUNS) / "-".join(part for part in (name, kind, stamp) if part)


@dataclass(frozen=True)
class TrialPaths:
    """Where one trial's files are (the only spelling of these names)."""

    root: Path

    @classmethod
    def of(cls, run_dir: Path | str, trial_id: str) -> "TrialPaths":
        return cls(Path(run_dir) / TRIALS / trial_id)

    @property
    def scores(self) -> Path:
        return self.root / "scores.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def launches(self) -> Path:
        return self.root / "launches"

    @property
    def tensorboard(self) -> Path:
        """TensorBoard event files of the trial's reports (one file per launch; ``tensorboard --logdir RUN/trials``)."""
        return self.root / "tensorboard"

    def checkpoint(self, name: str) -> Path:
        return self.checkpoints / name

    def launch_record(self, launch_id: str) -> Path:
        """Host, pids, atoms and start time of one launch (written by the executor)."""
        return self.launches / f"{launch_id}.json"

    def ready_file(self, launch_id: str, rank: int) -> Path:
        """Touched by each rank once it handles stop signals."""
        return self.launches / f"{launch_id}-r{rank}.ready"

    def ready_files(self, launch_id: str) -> list[Path]:
        return list(self.launches.glob(f"{launch_id}-r*.ready"))

    def verdict(self, launch_id: str) -> Path:
        """The controller's verdict on the report a launch waits after (rundir/verdict.py)."""
        return self.launches / f"{launch_id}.verdict"

    def srun_log(self, launch_id: str) -> Path:
        """srun's own output for one launch (SLURM backend)."""
        return self.launches / f"{launch_id}_srun.log"

    def launch_log(self, launch_id: str, rank: int = 0, stream: str = "stdout") -> Path:
        """What rank ``rank`` of a launch printed (``stream``: stdout | stderr), named as submitit names it."""
        from submitit.core import utils

        paths = utils.JobPaths(self.launches, job_id=launch_id, task_id=rank)
        return paths.stdout if stream == "stdout" else paths.stderr


def launch_id_of(trial_id: str, number: int) -> str:
    """Launch ``number`` (1-based) of a trial; no underscore (submitit reads '_' as a job array)."""
    return f"{trial_id}-l{number}"


def privacy_problem(path: Path) -> str | None:
    """Why ``path`` is not private to the current user (None when it is)."""
    st = Path(path).stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to you"
    if st.st_mode & 0o022:
        return f"writable by group or others (mode {oct(st.st_mode & 0o777)})"
    return None


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path).absolute()

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    @property
    def result(self) -> Path:
        return self.path / "result.json"

    @property
    def spec_copy(self) -> Path:
        return self.path / "spec.yaml"

    @property
    def controller(self) -> Path:
        return self.path / "controller.json"

    def trial_dir(self, trial_id: str) -> Path:
        return self.trial(trial_id).root

    def trial(self, trial_id: str) -> TrialPaths:
        return TrialPaths.of(self.path, trial_id)

    # ------------------------------------------------------------ opening

    @classmethod
    def create(cls, path: Path) -> "RunDir":
        """A new run directory (0700); refuse one that holds a run or other files."""
        run = cls(path)
        if run.path.exists():
            if not run.path.is_dir():
                raise RunDirError(f"{run.path}: exists and is not a directory")
            if run.journal.exists():
                raise RunDirError(f"{run.path}: already holds a run (events.jsonl); continue it with --resume "
                                  f"or choose another --run-dir")
            if any(run.path.iterdir()):
                raise RunDirError(f"{run.path}: exists and is not empty; not starting a run in it")
        run.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(run.path, 0o700)
        (run.path / TRIALS).mkdir(exist_ok=True, mode=0o700)
        run.check_private()
        return run

    @classmethod
    def existing(cls, path: Path) -> "RunDir":
        """A directory that holds a run (for --resume, status, report)."""
        run = cls(path)
        if not run.path.is_dir():
            raise RunDirError(f"{run.path}: no such run directory")
        if not run.journal.is_file():
            holds = (f"; it holds a simulation's output: 'hpcsched report {run.path}' summarises it"
                     if is_simulation_output(run.path) else "")
            raise RunDirError(f"{run.path}: not a run directory (no {JOURNAL}){holds}")
        return run

    def check_private(self) -> None:
        """Pickles and code are loaded from here: only its owner may write to it."""
        problem = privacy_problem(self.path)
        if problem:
            raise RunDirError(f"{self.path}: {problem}; run 'chmod 700 {self.path}' if it is yours")

    # ------------------------------------------------------------ files

    def write_json(self, path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    @property
    def reserve(self) -> Path:
        return self.path / ".reserve"

    def reserve_space(self) -> None:
        """Hold RESERVE_BYTES of the file system for the controller's last records and result."""
        try:
            with open(self.reserve, "wb") as f:
                f.write(bytes(RESERVE_BYTES))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            log.warning("%s: could not reserve space for the last records: %s", self.path, exc)
            self.reserve.unlink(missing_ok=True)

    def release_reserve(self) -> bool:
        """Free the reserve (a full disk); whether there was one to free."""
        try:
            self.reserve.unlink()
            return True
        except FileNotFoundError:
            return False

    def claim(self, backend: str) -> None:
        """Record which controller is in charge now (for status from another shell)."""
        self.write_json(self.controller, {"host": socket.gethostname(), "pid": os.getpid(), "backend": backend,
                                          "since": time.time(), "slurm_job_id": os.environ.get("SLURM_JOB_ID")})

    def controller_info(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.controller.read_text())
        except (OSError, ValueError):
            return None
