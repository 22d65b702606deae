"""The API a training script uses, and the function that runs it inside a trial's process.

A trainable is ``def train(config, ctx)``. Through ``ctx`` it learns its config, atoms and
devices, restores its last checkpoint, reports ``(step, score)`` with the state to save, and
is told when to stop::

    def train(config, ctx):
        state = ctx.restore()                      # None on a fresh start
        model = build(config, state)
        for step in ctx.steps():                   # ctx.start_step + 1 .. ctx.max_steps
            score = train_one_epoch_and_evaluate(model)
            ctx.report(step, score, state={"model": model.state_dict()})

When the controller asks the trial to stop (pause, resize, deadline: SIGUSR1/SIGTERM), the
current step finishes, its checkpoint is written by ``report``, and the trial exits; it is
relaunched later from that checkpoint, possibly on another number of atoms.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from hpcsched.rundir.event_files import open_event_log
from hpcsched.core.failures import describe_failure, is_environment_error
from hpcsched.core.mode import Mode
from hpcsched.rundir.paths import JOURNAL, TRIALS, TrialPaths, privacy_problem
from hpcsched.rundir.scores import (CHECKPOINT_PREFIX, CHECKPOINT_SUFFIXES, TOKEN_VARIABLE, ExitLine, ReportLine,
                                    ScoresReader, StartedLine, append_line, checkpoint_name, checkpoint_step)
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.rundir.verdict import Verdict, read_verdict

STOP_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM)  # "checkpoint at the next step and exit"


class ExitRequested(BaseException):
    """Raised by ``ctx.report`` once a stop was requested and the checkpoint is safe.

    A BaseException, so a trainable's ``except Exception`` does not swallow it.
    """


class Diverged(BaseException):
    """Raised by ``ctx.report`` for a NaN or infinite score (``metric.non_finite: stop``): the launch
    ends as diverged, nothing of that step is saved. A BaseException, like ExitRequested."""


@dataclass(frozen=True)
class TrialLaunch:
    """Everything a trial's process needs; pickled by the controller, loaded in the child."""

    trial_id: str
    launch_id: str
    run_dir: str
    trainable: str
    config: dict[str, Any]
    from_step: int
    max_steps: int
    metric: str
    mode: str
    atom_ids: tuple[str, ...]
    gpus: tuple[int, ...] = ()  # physical GPU indices (local) given through CUDA_VISIBLE_DEVICES
    cpus: tuple[int, ...] = ()  # cores to pin to (local); empty: leave affinity alone
    threads: int = 1  # CPU threads per process
    trial_index: int = 0  # the trial's number in the run (0-based), as the sampler and the simulator count
    verdict_steps: tuple[int, ...] = ()  # after reporting these steps the chief waits for the verdict
    verdict_every_step: bool = False  # ... or after every step
    verdict_timeout: float = 0.0  # how long it waits at most (0: never)
    non_finite: str = "stop"  # a NaN / infinite score ends the launch as diverged (stop) or errored (error)

    def waits_at(self, step: int) -> bool:
        """Whether the chief waits for the controller's verdict after reporting ``step``."""
        return self.verdict_timeout > 0 and step < self.max_steps and \
            (self.verdict_every_step or step in self.verdict_steps)

    @property
    def paths(self) -> TrialPaths:
        return TrialPaths.of(self.run_dir, self.trial_id)

    @property
    def trial_dir(self) -> Path:
        return self.paths.root


def find_checkpoint(directory: Path, step: int) -> Path | None:
    """The checkpoint file saved at ``step`` in ``directory``, if any."""
    for suffix in CHECKPOINT_SUFFIXES:
        path = directory / checkpoint_name(step, suffix)
        if path.exists():
            return path
    return None


def _torch_loaded():
    return sys.modules.get("torch")


@dataclass(frozen=True)
class SelfSaving:
    """A checkpoint that writes itself: ``write(path)`` saves it as a torch file at ``path``
    (e.g. Lightning's ``trainer.save_checkpoint``); ``ctx.report(..., state=SelfSaving(...))``
    still names, syncs and renames it into place atomically."""

    write: Callable[[Path], Any]


def save_payload(obj: Any, path_without_suffix: Path) -> Path:
    """Write ``obj`` atomically (temp file + rename); torch.save when torch is in use, else pickle."""
    torch = _torch_loaded()
    path = path_without_suffix.with_suffix(".pt" if torch is not None or isinstance(obj, SelfSaving) else ".pkl")
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        if isinstance(obj, SelfSaving):
            obj.write(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        else:
            with open(tmp, "wb") as f:
                if torch is not None:
                    torch.save(obj, f)
                else:
                    pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk keeps no half checkpoint
        raise
    return path


def load_checkpoint(path: str | Path) -> Any:
    """Load a checkpoint of a run (e.g. the one result.json names).

    Only a checkpoint file of a run's trial (RUN/trials/<id>/checkpoints/step-N.pt|.pkl, after
    resolving links) is loaded, and only when the file and every directory from the run
    directory down to it are private to you: unpickling runs code, so nobody else may have
    been able to plant it.
    """
    path = Path(path).resolve()
    checkpoints = path.parent
    trial_dir = checkpoints.parent
    trials = trial_dir.parent
    run_dir = trials.parent
    if checkpoint_step(path.name) is None or checkpoints.name != TrialPaths(trial_dir).checkpoints.name \
            or trials.name != TRIALS or not (run_dir / JOURNAL).is_file():
        raise PermissionError(f"{path}: not a checkpoint of a run (expected RUN/{TRIALS}/<trial>/"
                              f"checkpoints/{checkpoint_name(1, '.pt')}-style files); refusing to load it")
    check_private(run_dir, trials, trial_dir, checkpoints, path)
    return load_payload(path)


def load_payload(path: Path) -> Any:
    """Read a checkpoint written by ``save_payload`` (callers check where it comes from)."""
    if path.suffix == ".pt":
        import torch

        return torch.load(path, map_location="cpu", weights_only=False)
    with open(path, "rb") as f:
        return pickle.load(f)


def check_private(*paths: Path) -> None:
    """Refuse to unpickle from a place that others can write to."""
    for path in paths:
        problem = privacy_problem(path)
        if problem:
            raise PermissionError(f"{path}: {problem}: refusing to load from it")


class TrialContext:
    """What a trainable sees of its trial (see the module docstring)."""

    def __init__(self, launch: TrialLaunch, rank: int = 0, local_rank: int = 0, world_size: int = 1):
        self.launch = launch
        self.trial_id = launch.trial_id
        self.trial_index = launch.trial_index
        self.config = dict(launch.config)
        self.atoms = len(launch.atom_ids)
        self.atom_ids = launch.atom_ids
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        self.gpus = tuple(range(len([g for g in visible.split(",") if g.strip()])))  # as this process sees them
        self.threads = launch.threads  # CPU threads for this process
        self.start_step = launch.from_step
        self.max_steps = launch.max_steps
        self.metric = launch.metric
        self.mode = launch.mode
        self.rank, self.local_rank, self.world_size = rank, local_rank, world_size
        self.master_addr = os.environ.get("MASTER_ADDR", "127.0.0.1")  # rank 0's host, for torch.distributed
        self.master_port = int(os.environ.get("MASTER_PORT", "29500"))
        self.paths = launch.paths
        self.trial_dir = self.paths.root
        self.checkpoint_dir = self.paths.checkpoints
        self.stop_requested = False
        self.stopped = False  # the trial left because of a stop request
        self.stop_consensus: Callable[[bool], bool] | None = None  # set by distributed helpers
        self.checkpoint_step = launch.from_step
        self._last_step = launch.from_step
        self._verdicts_expected = True  # until one fails to come (see _await_verdict)
        self._parent = os.getppid()
        self._token = os.environ.get(TOKEN_VARIABLE, "")  # every line carries it: the controller knows it is ours
        self._started = False
        self._best_score, self._best_step = _best_so_far(self.paths.scores, launch.mode)
        self._events = open_event_log(self.paths.tensorboard, self.config, launch.trial_id) if self.is_chief else None

    # ------------------------------------------------------------ for trainables

    @property
    def is_chief(self) -> bool:
        """The rank that writes checkpoints and reports (rank 0)."""
        return self.rank == 0

    def restore(self) -> Any | None:
        """The state saved with the checkpoint this launch resumes from; None on a fresh start."""
        path = self.restore_path()
        return load_payload(path) if path is not None else None

    def restore_path(self) -> Path | None:
        """The checkpoint file this launch resumes from (checked private); None on a fresh start.
        For frameworks that load it themselves (``trainer.fit(..., ckpt_path=ctx.restore_path())``)."""
        if self.start_step <= 0:
            return None
        path = find_checkpoint(self.checkpoint_dir, self.start_step)
        if path is None:
            raise FileNotFoundError(f"trial {self.trial_id}: no checkpoint for step {self.start_step} "
                                    f"in {self.checkpoint_dir}")
        check_private(Path(self.launch.run_dir), self.trial_dir.parent, self.trial_dir, self.checkpoint_dir, path)
        return path

    def ready(self) -> None:
        """Mark setup (and restore) as done: the controller measures startup time up to here."""
        if not self._started:
            self._started = True
            if self._events is not None:
                self._events.open()  # its import is setup: measured as startup, not in the first step
            self._write_line(StartedLine(self.launch.launch_id, time.time(), self._token))

    def steps(self) -> Iterator[int]:
        """Steps to train: start_step + 1 .. max_steps; ends early when a stop is requested."""
        self.ready()
        step = self.start_step
        while step < self.max_steps:
            if self._should_stop():
                self.stopped = True
                return
            step += 1
            yield step

    def should_stop(self) -> bool:
        """True once the controller asked this trial to checkpoint and exit."""
        return self._should_stop()

    def report(self, step: int, score: float, state: Any = None, **metrics: Any) -> None:
        """Record the score of ``step``; save ``state`` as its checkpoint first (atomically).

        Only the chief rank writes. Raises ExitRequested afterwards if a stop was requested.
        """
        if not isinstance(step, int) or isinstance(step, bool) or step <= self._last_step:
            raise ValueError(f"report: step must be an int above the previous step {self._last_step}, got {step!r}")
        score = float(score)
        if not math.isfinite(score):
            if self.launch.non_finite == "error":
                raise ValueError(f"report: score must be a finite number, got {score!r} at step {step}")
            raise Diverged(f"score {score!r} at step {step}")
        self.ready()
        self._last_step = step
        if self.is_chief:
            saved = ""
            if state is not None:
                self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
                saved = save_payload(state, self.checkpoint_dir / checkpoint_name(step, "")).name
                self.checkpoint_step = step
                if Mode(self.mode).better(score, self._best_score):
                    self._best_score, self._best_step = score, step
                self._prune_checkpoints()
            plain = {k: _plain(v) for k, v in metrics.items()}
            self._write_line(ReportLine(self.launch.launch_id, time.time(), step, score, saved, plain, self._token))
            if self._events is not None:
                self._events.add(step, {self.launch.metric: score, **plain})
            if self._verdicts_expected and self.launch.waits_at(step):
                self._await_verdict(step)
        elif state is not None:
            self.checkpoint_step = step
        if self._should_stop():
            self.stopped = True
            raise ExitRequested()

    # ------------------------------------------------------------ internals

    def _should_stop(self) -> bool:
        if self.stop_consensus is not None:
            return self.stop_consensus(self.stop_requested)
        return self.stop_requested

    def _await_verdict(self, step: int) -> None:
        """Wait after the report of a decision step until the controller says go on or stop.

        Without a verdict in time (the controller is gone or very slow), or once the process
        that launched this one is gone, the launch goes on and waits no more."""
        path = self.paths.verdict(self.launch.launch_id)
        give_up = time.monotonic() + self.launch.verdict_timeout
        delay = 0.002
        while not self.stop_requested:
            verdict = read_verdict(path)
            if verdict is not None and verdict.step >= step:
                if verdict.verdict is Verdict.STOP:
                    self.stop_requested = True
                return
            if time.monotonic() >= give_up or os.getppid() != self._parent:
                self._verdicts_expected = False
                print(f"hpcsched: trial {self.trial_id}: no verdict on step {step} after "
                      f"{self.launch.verdict_timeout:g} s; going on without waiting", file=sys.stderr, flush=True)
                return
            time.sleep(delay)
            delay = min(0.05, delay * 1.5)

    def _write_line(self, line: StartedLine | ReportLine | ExitLine) -> None:
        if self.is_chief:
            append_line(self.paths.scores, line)

    def close(self) -> None:
        """Close what the launch keeps open (its TensorBoard event file)."""
        if self._events is not None:
            self._events.close()

    def write_exit(self, outcome: str, error: str = "", retryable: bool = False) -> None:
        """Record how this launch ended (the controller reads it instead of any pickle); ``retryable``:
        it errored for the environment, not for the trainable."""
        self._write_line(ExitLine(self.launch.launch_id, time.time(), outcome, self.checkpoint_step, error,
                                  self._token, retryable))

    def _prune_checkpoints(self) -> None:
        """Keep the latest checkpoint and the trial's best one."""
        keep = {self.checkpoint_step, self._best_step, self.start_step}
        for path in self.checkpoint_dir.glob(f"{CHECKPOINT_PREFIX}*"):
            step = checkpoint_step(path.name)
            if step is not None and step not in keep:
                path.unlink(missing_ok=True)


def _best_so_far(scores: Path, mode: str) -> tuple[float | None, int | None]:
    """The best checkpointed report of earlier launches (so pruning keeps it)."""
    best, best_step = None, None
    for line in ScoresReader(scores, None).read():
        if isinstance(line, ReportLine) and line.checkpoint:
            if Mode(mode).better(line.score, best):
                best, best_step = line.score, line.step
    return best, best_step


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


# ---------------------------------------------------------------- the trial's process


def run_trial(launch: TrialLaunch) -> dict[str, Any]:
    """Run the trainable for one launch; return ``{"outcome": finished|checkpointed, "step": ...}``.

    Executed in the trial's own process (through submitit). SIGUSR1, SIGUSR2 and SIGTERM ask
    for a checkpoint and exit at the next step boundary.
    """
    from hpcsched.trial.trainables import load_trainable

    rank = int(os.environ.get("HPCSCHED_RANK", os.environ.get("SLURM_PROCID", "0")))
    local_rank = int(os.environ.get("HPCSCHED_LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    world_size = int(os.environ.get("HPCSCHED_WORLD_SIZE", os.environ.get("SLURM_STEP_NUM_TASKS", "1")))
    if launch.cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, set(launch.cpus))
        except OSError as exc:  # the trial runs unpinned: slower perhaps, not wrong
            print(f"hpcsched: trial {launch.trial_id}: could not pin to cores {list(launch.cpus)}: {exc}",
                  file=sys.stderr, flush=True)
    ctx = TrialContext(launch, rank=rank, local_rank=local_rank, world_size=world_size)

    def request_stop(signum, frame):  # noqa: ARG001
        ctx.stop_requested = True

    for sig in STOP_SIGNALS:
        signal.signal(sig, request_stop)
    # tell the controller this rank can take a stop signal now (before, SIGUSR1 would kill it)
    launch.paths.ready_file(launch.launch_id, rank).touch()
    try:
        train = load_trainable(launch.trainable)
        train(dict(launch.config), ctx)
    except ExitRequested:
        pass
    except Diverged as exc:
        print(f"hpcsched: trial {launch.trial_id}: {exc}; stopped as diverged", file=sys.stderr, flush=True)
        ctx.write_exit(ExitOutcome.DIVERGED, str(exc))
        return {"outcome": ExitOutcome.DIVERGED.value, "step": ctx.checkpoint_step, "last_step": ctx._last_step}
    except Exception as exc:  # the environment's fault (a full disk) is retried from the last checkpoint
        ctx.write_exit(ExitOutcome.ERRORED, describe_failure(exc), retryable=is_environment_error(exc))
        raise
    finally:
        # training is over: a stop signal repeated now must not kill the exit (CPython restores
        # the default action, death, for its handlers while the interpreter shuts down)
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        ctx.close()
        # free what the trainable left in reference cycles while the interpreter is whole: a
        # DistributedDataParallel model keeps its process group alive, and a gloo group destroyed
        # at interpreter shutdown instead aborted a rank in about 1 of 5 stops of a 2-process trial
        # ("terminate called without an active exception", SIGABRT): a clean checkpoint read as errored
        gc.collect()
    outcome = ExitOutcome.CHECKPOINTED if (ctx.stopped or ctx.stop_requested) and ctx._last_step < launch.max_steps \
        else ExitOutcome.FINISHED
    ctx.write_exit(outcome)
    return {"outcome": outcome.value, "step": ctx.checkpoint_step, "last_step": ctx._last_step}
