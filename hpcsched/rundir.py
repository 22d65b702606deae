"""The run directory on shared storage: journal, trial files, result; private to its owner.

    RUN_DIR/
      events.jsonl          the journal (records.py), appended under events.jsonl.lock
      spec.yaml             the spec the run was started with
      controller.json       host, pid and backend of the controller now in charge
      result.json           the answer at the end: best trial, config, score, step, checkpoint
      trials/<id>/scores.jsonl, checkpoints/, launches/ (submitit pickles and logs)
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from hpcsched.errors import RunDirError

JOURNAL = "events.jsonl"


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
        return self.path / "trials" / trial_id

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
        (run.path / "trials").mkdir(exist_ok=True, mode=0o700)
        run.check_private()
        return run

    @classmethod
    def existing(cls, path: Path) -> "RunDir":
        """A directory that holds a run (for --resume, status, report)."""
        run = cls(path)
        if not run.path.is_dir():
            raise RunDirError(f"{run.path}: no such run directory")
        if not run.journal.is_file():
            raise RunDirError(f"{run.path}: not a run directory (no {JOURNAL})")
        return run

    def check_private(self) -> None:
        """Pickles and code are loaded from here: only its owner may write to it."""
        problem = privacy_problem(self.path)
        if problem:
            raise RunDirError(f"{self.path}: {problem}; run 'chmod 700 {self.path}' if it is yours")

    # ------------------------------------------------------------ files

    def write_json(self, path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)

    def claim(self, backend: str) -> None:
        """Record which controller is in charge now (for status from another shell)."""
        self.write_json(self.controller, {"host": socket.gethostname(), "pid": os.getpid(), "backend": backend,
                                          "since": time.time(), "slurm_job_id": os.environ.get("SLURM_JOB_ID")})

    def controller_info(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.controller.read_text())
        except (OSError, ValueError):
            return None
