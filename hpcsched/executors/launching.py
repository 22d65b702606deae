"""Trial processes for real backends, built on submitit's pickling executor.

Each launch of a trial pickles ``hpcsched.trial.run_trial(TrialLaunch)`` with submitit into
``trials/<id>/launches/`` and starts ``python -m submitit.core._submit`` there, directly
(local) or through ``srun`` (SLURM). The controller follows the launch through its scores
file (incremental reads), signals it to checkpoint and exit, and classifies its exit from
submitit's result pickle. Subclasses say where atoms are and how processes are spawned.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from submitit.core import core, utils

from hpcsched.executors.base import Event, LaunchRequest, TrialExit, TrialReport, TrialStarted
from hpcsched.executors.scores import ScoresReader
from hpcsched.trial import TrialLaunch, run_trial

SIGNAL_REPEAT_S = 1.0  # re-send a stop signal this often until the trial exits


class TrialJob(core.Job):
    """A submitit job handle for one launch (no cluster watcher: the controller polls itself)."""

    def _register_in_watcher(self) -> None:
        pass


class _Submitter(core.PicklingExecutor):
    """submitit's pickling for one trial's launches folder; spawning is delegated."""

    job_class = TrialJob

    def __init__(self, folder: Path, spawn: Callable[[str], list[Any]]):
        super().__init__(folder, max_num_timeout=0)
        self._throttling = 0.0
        self._spawn = spawn
        self._launch_id = ""
        self._tasks = 1
        self.processes: list[Any] = []

    def submit_launch(self, launch_id: str, tasks: int, launch: TrialLaunch) -> TrialJob:
        self._launch_id, self._tasks = launch_id, tasks
        return self.submit(run_trial, launch)

    @property
    def _submitit_command_str(self) -> str:
        return " ".join([shlex.quote(sys.executable), "-u", "-m", "submitit.core._submit",
                         shlex.quote(str(self.folder))])

    def _submit_command(self, command: str) -> TrialJob:
        self.processes = self._spawn(command)
        return TrialJob(folder=self.folder, job_id=self._launch_id, tasks=list(range(self._tasks)))

    def _num_tasks(self) -> int:
        return self._tasks

    def _make_submission_file_text(self, command: str, uid: str) -> str:
        return ""

    def _make_submission_command(self, submission_file_path: Path) -> list[str]:
        return []

    @staticmethod
    def _get_job_id_from_submission_command(string) -> str:
        return "0"


@dataclass
class _Launch:
    request: LaunchRequest
    launch: TrialLaunch
    folder: Path
    processes: list[Any]
    reader: ScoresReader
    launched_at: float
    world_size: int = 1
    started: bool = False  # the chief rank finished its setup (it may have progress to save)
    ready: bool = False  # every rank handles stop signals
    checkpoint_step: int = 0
    stop_requested_at: float | None = None
    last_signal: float = -math.inf
    killed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcessSettings:
    run_dir: Path
    trainable: str
    max_steps: int
    metric: str
    mode: str
    poll_interval: float = 0.25
    stop_grace: float = 60.0  # after a stop request, how long a trial may take to exit before it is killed


class ProcessExecutor:
    """Executor protocol over real processes; subclasses implement placement and spawning."""

    def __init__(self, settings: ProcessSettings, clock):
        self.settings = settings
        self.clock = clock
        self._live: dict[str, _Launch] = {}

    # ------------------------------------------------------------ for subclasses

    def atom_ids(self) -> tuple[str, ...]:
        raise NotImplementedError

    def placement(self, atoms: tuple[str, ...]) -> dict[str, Any]:
        """TrialLaunch fields (gpus, cpus, threads, extra) for these atoms."""
        raise NotImplementedError

    def world_size(self, atoms: tuple[str, ...]) -> int:
        return 1

    def spawn(self, command: str, launch: TrialLaunch, folder: Path, world_size: int) -> list[Any]:
        """Start the launch's process(es) running ``command``; return handles with poll/pid/send_signal."""
        raise NotImplementedError

    # ------------------------------------------------------------ executor protocol

    def launch(self, request: LaunchRequest) -> None:
        trial_dir = self.settings.run_dir / "trials" / request.trial_id
        folder = trial_dir / "launches"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        launch_id = launch_id_of(request.trial_id, request.number)
        s = self.settings
        launch = TrialLaunch(trial_id=request.trial_id, launch_id=launch_id, run_dir=str(s.run_dir),
                             trainable=s.trainable, config=dict(request.config), from_step=request.from_step,
                             max_steps=s.max_steps, metric=s.metric, mode=s.mode, atom_ids=tuple(request.atoms),
                             **self.placement(tuple(request.atoms)))
        world = self.world_size(tuple(request.atoms))
        submitter = _Submitter(folder, lambda command: self.spawn(command, launch, folder, world))
        submitter.submit_launch(launch_id, world, launch)
        now = self.clock.now()
        record = {"launch": launch_id, "host": socket.gethostname(), "t": now,
                  "pids": [p.pid for p in submitter.processes], "atoms": list(request.atoms)}
        (folder / f"{launch_id}.json").write_text(json.dumps(record))
        self._live[request.trial_id] = _Launch(request, launch, folder, submitter.processes,
                                               ScoresReader(trial_dir / "scores.jsonl", launch_id), now,
                                               world_size=world, checkpoint_step=request.from_step)

    def request_stop(self, trial_id: str) -> None:
        launch = self._live.get(trial_id)
        if launch is None or launch.stop_requested_at is not None:
            return
        launch.stop_requested_at = self.clock.now()
        if not launch.started:  # still in setup: nothing to save yet, end it now rather than after its setup
            self._kill(launch)
        elif self._ready(launch):
            self._signal(launch)

    def poll(self, now: float) -> list[Event]:
        events: list[Event] = []
        for trial_id, launch in list(self._live.items()):
            events.extend(self._read_lines(launch, now))
            codes = [p.poll() for p in launch.processes]
            if any(c not in (None, 0) for c in codes) and any(c is None for c in codes):
                self._end_processes(launch)  # one rank failed: the others would hang in their collectives
                codes = [p.poll() for p in launch.processes]
            if all(c is not None for c in codes):
                events.extend(self._read_lines(launch, now))
                events.append(self._exit_event(launch, codes, now))
                del self._live[trial_id]
                continue
            if launch.stop_requested_at is not None:
                if now - launch.stop_requested_at > self.settings.stop_grace:
                    self._kill(launch)
                elif launch.started and self._ready(launch) and now - launch.last_signal >= SIGNAL_REPEAT_S:
                    self._signal(launch)
        return events

    def next_wakeup(self, now: float) -> float:
        return now + self.settings.poll_interval

    def shutdown(self) -> None:
        for launch in self._live.values():
            self._kill(launch)
        self._live.clear()

    # ------------------------------------------------------------ recovery after a controller restart

    def recover(self, trial_id: str, launches: int, last_step: int, from_step: int) -> list[Event]:
        """Take over launch number ``launches`` of a trial from a previous controller.

        A process still running on this host is asked to checkpoint and exit (then killed
        after the grace period); returns its reports newer than ``last_step`` and its exit.
        A launch whose processes are gone and left no result counts as checkpointed at its
        last checkpoint (it died with the old controller or allocation).
        """
        launch_id = launch_id_of(trial_id, launches)
        folder = self.settings.run_dir / "trials" / trial_id / "launches"
        pids = _alive_orphans(folder / f"{launch_id}.json", folder)
        if pids:
            deadline = time.monotonic() + self.settings.stop_grace
            next_signal = 0.0
            while pids and time.monotonic() < deadline:
                if time.monotonic() >= next_signal:
                    for pid in pids:
                        _send(pid, signal.SIGUSR1)
                    next_signal = time.monotonic() + SIGNAL_REPEAT_S
                time.sleep(0.1)
                pids = [p for p in pids if _pid_alive(p)]
            for pid in pids:
                _send(pid, signal.SIGKILL)
        now = self.clock.now()
        events: list[Event] = []
        checkpoint_step = from_step
        for line in ScoresReader(self.settings.run_dir / "trials" / trial_id / "scores.jsonl", launch_id).read():
            if line.get("kind") != "report":
                continue
            if line.get("checkpoint"):
                checkpoint_step = max(checkpoint_step, int(line["step"]))
            if int(line["step"]) > last_step:
                events.append(TrialReport(trial_id, min(now, float(line.get("t", now))), int(line["step"]),
                                          float(line["score"]), line.get("checkpoint", "")))
        result = _load_result(folder, launch_id)
        if result is None:
            events.append(TrialExit(trial_id, now, "checkpointed", checkpoint_step))
        else:
            events.append(_classify(trial_id, now, result, checkpoint_step, "", folder, launch_id))
        return events

    # ------------------------------------------------------------ internals

    def _read_lines(self, launch: _Launch, now: float) -> list[Event]:
        events: list[Event] = []
        trial_id = launch.request.trial_id
        for line in launch.reader.read():
            t = min(now, max(launch.launched_at, float(line.get("t", now))))
            kind = line.get("kind")
            if kind == "started":
                launch.started = True
                events.append(TrialStarted(trial_id, t))
            elif kind == "report":
                launch.started = True
                checkpoint = str(line.get("checkpoint", ""))
                if checkpoint:
                    launch.checkpoint_step = int(line["step"])
                events.append(TrialReport(trial_id, t, int(line["step"]), float(line["score"]), checkpoint))
        if launch.started and launch.stop_requested_at is not None and launch.last_signal == -math.inf \
                and self._ready(launch):
            self._signal(launch)
        return events

    def _ready(self, launch: _Launch) -> bool:
        """Every rank installed its stop handlers (each touches <launch>-r<rank>.ready)."""
        if not launch.ready:
            launch.ready = sum(1 for _ in launch.folder.glob(f"{launch.launch.launch_id}-r*.ready")) \
                >= launch.world_size
        return launch.ready

    def _signal(self, launch: _Launch) -> None:
        launch.last_signal = self.clock.now()
        for p in launch.processes:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGUSR1)
                except (ProcessLookupError, OSError):
                    pass

    def _kill(self, launch: _Launch) -> None:
        """End a launch the controller asked to stop (its last checkpoint counts)."""
        launch.killed = True
        self._end_processes(launch)

    @staticmethod
    def _end_processes(launch: _Launch) -> None:
        for p in launch.processes:
            if p.poll() is None:
                try:
                    p.kill()
                except (ProcessLookupError, OSError):
                    pass
        for p in launch.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def _exit_event(self, launch: _Launch, codes: list[int | None], now: float) -> TrialExit:
        trial_id = launch.request.trial_id
        if launch.killed and launch.stop_requested_at is not None:
            return TrialExit(trial_id, now, "checkpointed", launch.checkpoint_step)
        result = _load_result(launch.folder, launch.launch.launch_id)
        if result is None:
            tail = _tail(launch.folder, launch.launch.launch_id)
            return TrialExit(trial_id, now, "errored", launch.checkpoint_step,
                             f"process ended without a result ({_describe_codes(codes)}){tail}")
        return _classify(trial_id, now, result, launch.checkpoint_step, _describe_codes(codes),
                         launch.folder, launch.launch.launch_id)


def launch_id_of(trial_id: str, number: int) -> str:
    """Launch ``number`` (1-based) of a trial; no underscore (submitit reads '_' as a job array)."""
    return f"{trial_id}-l{number}"


def _load_result(folder: Path, launch_id: str) -> tuple[str, Any] | None:
    path = utils.JobPaths(folder, job_id=launch_id, task_id=0).result_pickle
    if not path.exists():
        return None
    try:
        return utils.pickle_load(path)
    except Exception as exc:  # noqa: BLE001 - a torn or foreign pickle is reported, not raised
        return ("error", f"unreadable result pickle {path}: {exc}")


def _classify(trial_id: str, now: float, result: tuple[str, Any], checkpoint_step: int, codes: str,
              folder: Path, launch_id: str) -> TrialExit:
    status, value = result
    if status == "success" and isinstance(value, dict) and value.get("outcome") in ("finished", "checkpointed"):
        return TrialExit(trial_id, now, value["outcome"], int(value.get("step", checkpoint_step)))
    text = str(value).strip().splitlines()
    error = "\n".join(text[-12:]) if text else f"failed {codes}"
    return TrialExit(trial_id, now, "errored", checkpoint_step, error)


def _describe_code(code: int | None) -> str:
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _describe_codes(codes: list[int | None]) -> str:
    return ", ".join(_describe_code(c) for c in codes)


def _tail(folder: Path, launch_id: str, lines: int = 12) -> str:
    """The end of the launch's error log (and of srun's own log, on SLURM)."""
    text: list[str] = []
    for path in (utils.JobPaths(folder, job_id=launch_id, task_id=0).stderr, folder / f"{launch_id}_srun.log"):
        try:
            text += path.read_text(errors="replace").strip().splitlines()
        except OSError:
            pass
    return ("\n" + "\n".join(text[-lines:])) if text else ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for us
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive_orphans(record: Path, folder: Path) -> list[int]:
    """Pids of a launch record that still run this launch on this host (checked by command line)."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return []
    if data.get("host") != socket.gethostname():
        return []
    alive = []
    for pid in data.get("pids", []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in cmdline and _pid_alive(pid):
            alive.append(pid)
    return alive
