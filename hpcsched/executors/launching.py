"""Trial processes for real backends, built on submitit's pickling executor.

Each launch of a trial pickles ``hpcsched.trial.context.run_trial(TrialLaunch)`` with submitit into
``trials/<id>/launches/`` and starts ``python -m submitit.core._submit`` there, directly
(local) or through ``srun`` (SLURM). The controller follows the launch through its scores
file (incremental, validated reads: rundir/scores.py), signals it to checkpoint and exit, and
classifies its exit from the launch's exit line and the processes' exit codes. It never
unpickles what a trial wrote (submitit's result pickle is left alone). A line that breaks the
format ends that trial as errored, with the reason. Subclasses say where atoms are and how
processes are spawned.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import statistics
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from submitit.core import core

from hpcsched.core.clock import Clock
from hpcsched.executors.base import Event, LaunchRequest, TrialExit, TrialReport, TrialStarted
from hpcsched.executors.processes import kill_group, kill_leftovers, pid_alive, send
from hpcsched.core.failures import srun_environment_failure
from hpcsched.rundir.paths import RESERVE_BYTES, TrialPaths, launch_id_of
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.rundir.scores import BadLine, ExitLine, ReportLine, ScoresReader, StartedLine, check_report
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.trial.context import STOP_SIGNALS, TrialLaunch, run_trial
from hpcsched.rundir.verdict import Verdict, write_verdict

log = logging.getLogger(__name__)

SIGNAL_REPEAT_S = 1.0  # re-send a stop signal this often until the trial exits
# torch.distributed's environment (torchrun's names): set only for trials of several processes
TORCH_DISTRIBUTED_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
ORPHAN_POLL_S = 0.1  # how often a recovering controller checks whether an orphaned trial has exited
SUBMIT_MODULE = "submitit.core._submit"  # what every launch's process runs
# the automatic hang timeout (hang_limit): this many times the launch's median step (the gap between two of
# its lines), twice its longest, and at least the floor: a tenth of the run, within these bounds
HANG_FACTOR = 10.0
HANG_LONGEST_FACTOR = 2.0
HANG_FLOOR_S = (10.0, 120.0)
HANG_RUN_SHARE = 0.1
HANG_RECENT = 16  # the gaps of a launch its median is taken over (the most recent)


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

    def submit_launch(self, launch_id: str, tasks: int, launch: TrialLaunch) -> core.Job:
        self._launch_id, self._tasks = launch_id, tasks
        return self.submit(run_trial, launch)

    @property
    def _submitit_command_str(self) -> str:
        return " ".join([shlex.quote(sys.executable), "-u", "-m", SUBMIT_MODULE, shlex.quote(str(self.folder))])

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
    last_step: int = 0  # the last step this launch reported (from_step before any)
    stop_requested_at: float | None = None
    last_signal: float = -math.inf
    killed: bool = False
    exit_line: ExitLine | None = None
    last_output: float = 0.0  # when the controller last read a line of this launch (its launch time before)
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=HANG_RECENT))  # its recent step gaps
    longest_gap: float = 0.0  # its longest step gap (between two of its lines once it started)
    awaiting: int | None = None  # the decision step the trial waits at for its verdict
    bad_line: str = ""  # why this launch's scores were refused; ends it as errored
    token: str = ""  # the launch's secret: its lines carry it, its processes have it in their environment


@dataclass(frozen=True)
class ProcessSettings:
    run_dir: Path
    trainable: str
    max_steps: int
    metric: str
    mode: str
    poll_interval: float = 0.25
    stop_grace: float = 60.0  # after a stop request, how long a trial may take to exit before it is killed
    hang_timeout: float | None = None  # see hang_limit; None: from the measured gaps between lines
    hang_floor: float = HANG_FLOOR_S[1]  # the automatic hang timeout's least value (hang_floor_for the run)
    verdict_timeout: float = 10.0  # how long a trial waits for the verdict on a decision step (0: never waits)
    non_finite: str = "stop"  # metric.non_finite, passed to every launch


class ProcessExecutor:
    """Executor protocol over real processes; subclasses implement placement and spawning."""

    spans_nodes = True  # one machine (local), or distributed trials (SLURM sets it per run)

    def __init__(self, settings: ProcessSettings, clock: Clock):
        self.settings = settings
        self.clock = clock
        self._live: dict[str, _Launch] = {}
        self._longest_gap = 0.0  # between two lines of a launch once it started, over the run

    # ------------------------------------------------------------ for subclasses

    def atom_ids(self) -> tuple[str, ...]:
        raise NotImplementedError

    def placement(self, atoms: tuple[str, ...]) -> dict[str, Any]:
        """TrialLaunch fields (gpus, cpus, threads) for these atoms."""
        raise NotImplementedError

    def world_size(self, atoms: tuple[str, ...]) -> int:
        return 1

    def spawn(self, command: str, launch: TrialLaunch, folder: Path, world_size: int, token: str) -> list[Any]:
        """Start the launch's process(es) running ``command``, with ``token`` in their environment
        (scores.TOKEN_VARIABLE); return handles with poll/pid/send_signal."""
        raise NotImplementedError

    # ------------------------------------------------------------ executor protocol

    def launch(self, request: LaunchRequest) -> None:
        _check_free_space(self.settings.run_dir)
        paths = TrialPaths.of(self.settings.run_dir, request.trial_id)
        folder = paths.launches
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        launch_id = launch_id_of(request.trial_id, request.number)
        s = self.settings
        launch = TrialLaunch(trial_id=request.trial_id, trial_index=request.index, launch_id=launch_id,
                             run_dir=str(s.run_dir),
                             trainable=s.trainable, config=dict(request.config), from_step=request.from_step,
                             max_steps=s.max_steps, metric=s.metric, mode=s.mode, atom_ids=tuple(request.atoms),
                             verdict_steps=request.decision_steps.steps,
                             verdict_every_step=request.decision_steps.every_step,
                             verdict_timeout=s.verdict_timeout if request.decision_steps != DecisionSteps() else 0.0,
                             non_finite=s.non_finite,
                             **self.placement(tuple(request.atoms)))
        # the files the two sides poll exist before the trial does: on NFS a name looked up while
        # missing can stay missing for the directory's attribute cache time (up to a minute) on
        # that client; the trial waits at a rung for its verdict for much less
        paths.scores.touch(exist_ok=True)
        write_verdict(paths.verdict(launch_id), request.from_step, Verdict.CONTINUE)
        world = self.world_size(tuple(request.atoms))
        # the launch's secret: its lines carry it, so no other process can write in its name; recorded
        # before the launch exists, so that a restarted controller knows it whenever it finds the launch
        token = secrets.token_hex(16)
        record = {"launch": launch_id, "host": socket.gethostname(), "t": self.clock.now(), "pids": [],
                  "atoms": list(request.atoms), "token": token}
        paths.launch_record(launch_id).write_text(json.dumps(record))
        submitter = _Submitter(folder, lambda command: self.spawn(command, launch, folder, world, token))
        submitter.submit_launch(launch_id, world, launch)
        now = self.clock.now()
        record.update(t=now, pids=[p.pid for p in submitter.processes])
        try:
            paths.launch_record(launch_id).write_text(json.dumps(record))
        except OSError:
            for process in submitter.processes:  # not followed by anyone: do not leave it running
                kill_group(process.pid)
            raise
        self._live[request.trial_id] = _Launch(request, launch, folder, submitter.processes,
                                               ScoresReader(paths.scores, launch_id, token=token), now,
                                               world_size=world, checkpoint_step=request.from_step,
                                               last_step=request.from_step, last_output=now, token=token)

    def request_stop(self, trial_id: str) -> None:
        launch = self._live.get(trial_id)
        if launch is None or launch.stop_requested_at is not None:
            return
        launch.stop_requested_at = self.clock.now()
        self._give_verdict(launch, Verdict.STOP)
        if not launch.started:  # still in setup: nothing to save yet, end it now rather than after its setup
            self._kill(launch)
        elif self._ready(launch):
            self._signal(launch)

    def poll(self, now: float) -> list[Event]:
        events: list[Event] = []
        for trial_id, launch in list(self._live.items()):
            events.extend(self._read_lines(launch, now))
            if launch.bad_line:
                self._end_processes(launch)
                events.append(TrialExit(trial_id, now, ExitOutcome.ERRORED, launch.checkpoint_step,
                                        f"refused its scores file: {launch.bad_line}"))
                del self._live[trial_id]
                continue
            codes = [p.poll() for p in launch.processes]
            if any(c not in (None, 0) for c in codes) and any(c is None for c in codes):
                self._end_processes(launch)  # one rank failed: the others would hang in their collectives
                codes = [p.poll() for p in launch.processes]
            if all(c is not None for c in codes):
                events.extend(self._read_lines(launch, now))
                events.append(self._exit_event(launch, codes, now))
                _kill_leftovers(launch)  # what it started and left running (a DataLoader worker, a daemon)
                del self._live[trial_id]
                continue
            silent = now - launch.last_output
            limit = hang_limit(self.settings.hang_timeout, launch.started, launch.gaps, launch.longest_gap,
                               self._longest_gap, self.settings.hang_floor)
            # a launch waiting for its verdict waits for the controller, not for itself
            if launch.stop_requested_at is None and launch.awaiting is None and silent > limit:
                log.warning("trial %s: no output for %.0f s; killing it as hung", trial_id, silent)
                self._end_processes(launch)
                events.append(TrialExit(trial_id, now, ExitOutcome.ERRORED, launch.checkpoint_step,
                                        f"hung: no output for {silent:.0f} s (controller.hang_timeout); killed"))
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

    def decided(self) -> None:
        for launch in self._live.values():
            if launch.awaiting is not None and launch.stop_requested_at is None:
                self._give_verdict(launch, Verdict.CONTINUE)

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
        paths = TrialPaths.of(self.settings.run_dir, trial_id)
        pids = orphans = _alive_orphans(paths.launch_record(launch_id), paths.launches)
        if pids:  # on the injected clock, as the loop waits for anything else
            deadline = self.clock.now() + self.settings.stop_grace
            next_signal = -math.inf
            while pids and self.clock.now() < deadline:
                if self.clock.now() >= next_signal:
                    for pid in pids:
                        send(pid, signal.SIGUSR1)
                    next_signal = self.clock.now() + SIGNAL_REPEAT_S
                self.clock.sleep_until(min(self.clock.now() + ORPHAN_POLL_S, deadline))
                pids = [p for p in pids if pid_alive(p)]
            for pid in pids:
                send(pid, signal.SIGKILL)
        token = _recorded_token(paths.launch_record(launch_id))
        kill_leftovers(orphans, token, launch_id)  # of their sessions, and whatever carries the launch's token
        now = self.clock.now()
        events: list[Event] = []
        checkpoint_step, step, exit_line = from_step, 0, None  # reports restart after the launch's own start
        for line in ScoresReader(paths.scores, launch_id, token=token).read():
            if isinstance(line, BadLine):
                events.append(TrialExit(trial_id, now, ExitOutcome.ERRORED, checkpoint_step,
                                        f"refused its scores file: {line.reason}"))
                return events
            if isinstance(line, ExitLine):
                exit_line = line
            elif isinstance(line, ReportLine):
                bad = check_report(line, step, self.settings.max_steps)
                if bad is not None:
                    events.append(TrialExit(trial_id, now, ExitOutcome.ERRORED, checkpoint_step,
                                            f"refused its scores file: {bad.reason}"))
                    return events
                step = line.step
                if line.checkpoint:
                    checkpoint_step = max(checkpoint_step, line.step)
                if line.step > last_step:
                    events.append(TrialReport(trial_id, _clamp(line.t, -math.inf, now), line.step, line.score,
                                              line.checkpoint, line.metrics))
        if exit_line is None or exit_line.outcome == ExitOutcome.CHECKPOINTED:
            events.append(TrialExit(trial_id, now, ExitOutcome.CHECKPOINTED, checkpoint_step))
        else:
            events.append(TrialExit(trial_id, now, exit_line.outcome, checkpoint_step, exit_line.error,
                                    exit_line.retryable))
        return events

    # ------------------------------------------------------------ internals

    def _read_lines(self, launch: _Launch, now: float) -> list[Event]:
        events: list[Event] = []
        trial_id = launch.request.trial_id
        lines = launch.reader.read() if not launch.bad_line else []
        if lines:
            if launch.started:  # a step's time (its setup's length is the trainable's own: not a pace)
                gap = now - launch.last_output
                launch.gaps.append(gap)
                launch.longest_gap = max(launch.longest_gap, gap)
                self._longest_gap = max(self._longest_gap, gap)
            launch.last_output = now
        for line in lines:
            if isinstance(line, ReportLine):
                bad = check_report(line, launch.last_step, self.settings.max_steps)
                if bad is not None:
                    line = bad
            if isinstance(line, BadLine):
                log.warning("trial %s: refused its scores file: %s", trial_id, line.reason)
                launch.bad_line = line.reason
                break
            t = _clamp(line.t, launch.launched_at, now)
            if isinstance(line, StartedLine):
                launch.started = True
                events.append(TrialStarted(trial_id, t))
            elif isinstance(line, ReportLine):
                launch.started = True
                launch.last_step = line.step
                if line.checkpoint:
                    launch.checkpoint_step = line.step
                if launch.launch.waits_at(line.step):
                    launch.awaiting = line.step
                events.append(TrialReport(trial_id, t, line.step, line.score, line.checkpoint, line.metrics))
            else:
                launch.exit_line = line
        if launch.started and launch.stop_requested_at is not None and launch.last_signal == -math.inf \
                and self._ready(launch):
            self._signal(launch)
        return events

    def _give_verdict(self, launch: _Launch, verdict: Verdict) -> None:
        if launch.awaiting is None and verdict is Verdict.CONTINUE:
            return
        launch.last_output = self.clock.now()  # its next step starts now
        try:
            write_verdict(launch.launch.paths.verdict(launch.launch.launch_id),
                          launch.awaiting if launch.awaiting is not None else launch.last_step, verdict)
        except OSError as exc:  # the trial goes on after its verdict timeout (or stops on the signal)
            log.warning("trial %s: could not write its verdict: %s", launch.request.trial_id, exc)
        launch.awaiting = None

    def _ready(self, launch: _Launch) -> bool:
        """Every rank installed its stop handlers (each touches <launch>-r<rank>.ready)."""
        if not launch.ready:
            launch.ready = len(launch.launch.paths.ready_files(launch.launch.launch_id)) >= launch.world_size
        return launch.ready

    def _signal(self, launch: _Launch) -> None:
        launch.last_signal = self.clock.now()
        for p in launch.processes:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGUSR1)
                except ProcessLookupError:
                    pass  # it has just exited
                except OSError as exc:
                    log.warning("could not signal pid %s of %s: %s", p.pid, launch.launch.launch_id, exc)

    def _kill(self, launch: _Launch) -> None:
        """End a launch the controller asked to stop (its last checkpoint counts)."""
        launch.killed = True
        self._end_processes(launch)

    @staticmethod
    def _end_processes(launch: _Launch) -> None:
        """SIGKILL the launch's processes with their process groups, then what is left of their sessions."""
        for p in launch.processes:
            if p.poll() is None:  # not yet reaped: its pid still names its group
                kill_group(p.pid)
        for p in launch.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log.warning("pid %s of %s did not exit within 10 s of SIGKILL", p.pid, launch.launch.launch_id)
        _kill_leftovers(launch)

    def _exit_event(self, launch: _Launch, codes: list[int | None], now: float) -> TrialExit:
        """Asked to stop and killed: its last checkpoint counts. Otherwise the exit line the
        trial wrote says how it ended, provided every process exited cleanly."""
        trial_id = launch.request.trial_id
        if launch.killed and launch.stop_requested_at is not None:
            return TrialExit(trial_id, now, ExitOutcome.CHECKPOINTED, launch.checkpoint_step)
        line = launch.exit_line
        # a stop signal repeated while the process was already exiting may end it by that signal
        clean = all(c == 0 or _ended_by_stop_signal(c) for c in codes)
        if line is not None and line.outcome != ExitOutcome.ERRORED and clean:
            return TrialExit(trial_id, now, line.outcome, launch.checkpoint_step, line.error)
        tail = _tail(launch.folder, launch.launch.launch_id, codes, launch.world_size)
        if line is not None and line.error:
            error = "\n".join(line.error.strip().splitlines()[-12:])
            return TrialExit(trial_id, now, ExitOutcome.ERRORED, launch.checkpoint_step, error, line.retryable)
        what = "without saying how it ended" if clean else f"({_describe_codes(codes)})"
        srun_said = _last_lines(TrialPaths(launch.folder.parent).srun_log(launch.launch.launch_id), None)
        # no word from the trial on a full disk (it could not write its exit line), or srun's of its nodes
        retryable = (line is None and _disk_full(self.settings.run_dir)) or srun_environment_failure(srun_said)
        return TrialExit(trial_id, now, ExitOutcome.ERRORED, launch.checkpoint_step, f"process ended {what}{tail}",
                         retryable=retryable)


def inherited_environment(environ: Mapping[str, str], dropped: Iterable[str] = ()) -> dict[str, str]:
    """What a trial's processes keep of the controller's environment: all but torch.distributed's variables
    (and ``dropped``), with the working directory first on PYTHONPATH (the trainable was resolved from it)."""
    leave = set(TORCH_DISTRIBUTED_VARIABLES) | set(dropped)
    env = {k: v for k, v in environ.items() if k not in leave}
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + ([environ["PYTHONPATH"]] if environ.get("PYTHONPATH") else []))
    return env


def _ended_by_stop_signal(code: int | None) -> bool:
    """Killed by a stop signal: a local process's return code is -signum; srun exits with
    128 + signum when its task was killed by one."""
    if code is None:
        return False
    return -code in STOP_SIGNALS or code - 128 in STOP_SIGNALS


def hang_limit(configured: float | None, started: bool, gaps: Sequence[float], longest: float, run_longest: float,
               floor: float) -> float:
    """How long a launch may write nothing before it counts as hung: the configured timeout, or (None) from
    the run's own pace once the launch finished its setup (a setup's length is the trainable's own: never
    cut short): max(``floor``, HANG_FACTOR x the median of its recent ``gaps`` between lines, HANG_LONGEST_FACTOR
    x its ``longest``); before it has a gap of its own, max(``floor``, HANG_FACTOR x the longest gap of any
    launch in the run, ``run_longest``); before anyone's, no limit."""
    if configured is not None:
        return configured
    if not started:
        return math.inf
    if gaps:
        return max(floor, HANG_FACTOR * statistics.median(gaps), HANG_LONGEST_FACTOR * longest)
    return max(floor, HANG_FACTOR * run_longest) if run_longest > 0 else math.inf


def hang_floor_for(run_seconds: float) -> float:
    """The automatic hang timeout's least value in a run ``run_seconds`` long: a tenth of it, from 10 s to 2 min."""
    low, high = HANG_FLOOR_S
    return min(high, max(low, HANG_RUN_SHARE * run_seconds))


def _free_bytes(run_dir: Path) -> int | None:
    """Bytes free for the run directory's files (None: unknown)."""
    try:
        st = os.statvfs(run_dir)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _disk_full(run_dir: Path) -> bool:
    free = _free_bytes(run_dir)
    return free is not None and free < RESERVE_BYTES


def _check_free_space(run_dir: Path) -> None:
    """Refuse to launch onto a full file system (the trial could save nothing): ENOSPC."""
    if _disk_full(run_dir):
        raise OSError(errno.ENOSPC, f"{_free_bytes(run_dir)} bytes free for checkpoints", str(run_dir))


def _clamp(t: float, low: float, high: float) -> float:
    """A time the trial wrote, kept within what the controller saw (NaN: ``high``)."""
    return high if math.isnan(t) else min(high, max(low, t))


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


def _tail(folder: Path, launch_id: str, codes: list[int | None], world_size: int, lines: int = 12) -> str:
    """The end of the error logs of the ranks that failed (and of srun's own log, on SLURM).

    With one process per rank (local), a rank that ended by another signal or exit code than the
    SIGKILL that ended its peers is the one that failed; with one srun for every task, srun's log
    names the tasks that failed ("srun: error: node1: task 1: Aborted")."""
    paths = TrialPaths(folder.parent)
    srun_log = _last_lines(paths.srun_log(launch_id), None)
    if len(codes) == world_size > 1:
        failed = [rank for rank, code in enumerate(codes) if code not in (None, 0)]
        first = [rank for rank in failed if codes[rank] != -signal.SIGKILL]
        ranks = first or failed or [0]
    else:
        ranks = failed_tasks(srun_log) or [0]
    text: list[str] = []
    for rank in ranks:
        said = _last_lines(paths.launch_log(launch_id, rank, "stderr"), lines)
        if said and world_size > 1:
            said = [f"rank {rank}:"] + said
        text += said
    text += srun_log[-lines:]
    return ("\n" + "\n".join(text)) if text else ""


SRUN_TASK_ERROR = re.compile(r"^srun: error: [^:]+: tasks? ([\d,\-]+): (.*)$")
ENDED_BY_SRUN = ("Terminated", "Killed")  # what srun says of the tasks it ended after another failed


def failed_tasks(srun_lines: list[str]) -> list[int]:
    """The task numbers srun reported as failed, in order; those that srun itself ended after another
    task failed (--kill-on-bad-exit) only when no other task is named."""
    named: list[tuple[int, bool]] = []
    for line in srun_lines:
        match = SRUN_TASK_ERROR.match(line.strip())
        if match is None:
            continue
        ended_by_srun = match.group(2).strip() in ENDED_BY_SRUN
        for part in match.group(1).split(","):
            low, _, high = part.partition("-")
            if low.isdigit() and (not high or high.isdigit()):
                named += [(task, ended_by_srun) for task in range(int(low), int(high or low) + 1)]
    first = [task for task, ended_by_srun in named if not ended_by_srun] or [task for task, _ in named]
    return list(dict.fromkeys(first))


def _last_lines(path: Path, lines: int | None) -> list[str]:
    """The last ``lines`` lines of a text file (all with None; none when it cannot be read)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return []
    return text if lines is None else text[-lines:]


def _kill_leftovers(launch: _Launch) -> None:
    """Kill what a launch that has exited (or was killed) left running on this host (processes.py)."""
    kill_leftovers([p.pid for p in launch.processes], launch.token or None, launch.launch.launch_id)


def _recorded_token(record: Path) -> str | None:
    """The token a launch record names (None: no record, or one written before launches had tokens)."""
    try:
        token = json.loads(record.read_text()).get("token")
    except (OSError, ValueError, AttributeError):
        return None
    return token if isinstance(token, str) and token else None


def _alive_orphans(record: Path, folder: Path) -> list[int]:
    """Pids on this host that still run a launch of this trial: every process whose command line
    runs submitit's entry point on the trial's launches folder (found even when a controller
    killed between spawning a launch and writing its record left no record)."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        data = {}
    if data.get("host", socket.gethostname()) != socket.gethostname():
        return []
    marker = str(folder)
    alive = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # a launch runs submitit's entry point on the trial's folder (directly, or inside srun);
        # any other process naming the folder (a user's `tail -f` of a log) is not ours to stop
        if marker in cmdline and SUBMIT_MODULE in cmdline and pid_alive(int(entry)):
            alive.append(int(entry))
    return alive
