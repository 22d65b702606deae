"""What goes wrong in a run and what follows: how a trial's failure is described, which failures are
the environment's (retried from the last checkpoint), and when the run gives up on a trainable that
cannot work.

An error caused by the environment (a full disk or quota, an I/O error, a stale or read-only file
system, a node failure, a launch that could not be made) is retryable: the trial is relaunched from its
last checkpoint, at most MAX_RETRIES times in a row from the same checkpoint step (a controller that
takes over after ``--resume`` tries as often again). An error caused by the trainable (an exception of
its own, a crash, a hang) is not.

A run whose trainable cannot work (it raises on import, names a module instead of a function) would
launch trial after trial until its deadline, each erroring before its first report. ``LaunchStreaks``
follows the launches of a run in the order they were made (from the journal's records, so a resumed
controller knows them too) and finds the longest run of consecutive launches that each errored before
their first report; the controller stops the run once that reaches ``controller.max_failures``
(``FinishReason.FAILURES``; Ray Tune's ``max_failures`` and Optuna's exception propagation are the habits
this follows). A launch still starting does not break a streak, nor extend it, until it is decided.
"""

from __future__ import annotations

import errno
import traceback
from dataclasses import dataclass
from typing import Iterable

from hpcsched.core.errors import UserError

DEFAULT_MAX_FAILURES = 10  # launches in a row that errored before their first report: the run stops
MAX_RETRIES = 3  # relaunches after environment errors from one checkpoint step, in a row
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.ESTALE})
# what srun (Slurm 22.05) says when a step failed for its nodes or its launch, not for what it ran
SRUN_ENVIRONMENT_FAILURES = ("Node failure", "NODE FAIL", "Unable to create step", "Task launch for",
                             "Application launch failed", "Communication connection failure")


def is_environment_error(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an exception it was raised from or while handling, is an OSError of the
    environment (ENVIRONMENT_ERRNOS: torch.save on a full disk raises a RuntimeError from one)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            return True
        seen.add(id(exc))
        exc = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    return False


def srun_environment_failure(lines: Iterable[str]) -> bool:
    """Whether srun's own log says the step failed for its nodes or its launch."""
    return any(line.startswith(("srun: error:", "slurmstepd: error:")) and
               any(words in line for words in SRUN_ENVIRONMENT_FAILURES) for line in lines)


def describe_failure(exc: BaseException) -> str:
    """The traceback of what a trial raised, ending with its type and message (what progress lines and
    ``status`` show). A trainable that failed to import: the trainable's own exception, not hpcsched's
    ``UserError`` around it; one that is no function taking (config, ctx): hpcsched's words alone."""
    if isinstance(exc, UserError):  # hpcsched's own words about the trainable, after what the trainable raised
        cause = "".join(traceback.format_exception(exc.__cause__)) if exc.__cause__ is not None else ""
        return f"{cause}{exc}" if not cause else f"{exc}\n{cause}"
    return "".join(traceback.format_exception(exc))


def last_lines(error: str, count: int) -> list[str]:
    """The last ``count`` non-empty lines of an error text."""
    return [line for line in error.strip().splitlines() if line.strip()][-count:]


@dataclass(frozen=True)
class Streak:
    """Consecutive launches that errored before their first report: how many, and the first of them."""

    launches: int
    trial: str
    error: str


class LaunchStreaks:
    """The launches of a run in launch order, each undecided, failed (errored before its first report)
    or not; ``longest`` is the longest run of consecutive failed ones since the controller (re)started."""

    def __init__(self) -> None:
        self._current: dict[str, int] = {}  # trial -> its launch's position
        self._failed: dict[int, tuple[str, str]] = {}  # position -> (trial, error) of a failed launch
        self._decided: set[int] = set()
        self._next = 0
        self.longest: Streak | None = None

    def launched(self, trial: str) -> None:
        self._current[trial] = self._next
        self._next += 1

    def reported(self, trial: str) -> None:
        position = self._current.get(trial)
        if position is not None:
            self._decided.add(position)

    def exited(self, trial: str, errored: bool, error: str) -> None:
        position = self._current.pop(trial, None)
        if position is None or position in self._decided:
            return
        self._decided.add(position)
        if not errored:
            return
        self._failed[position] = (trial, error)
        first, last = position, position
        while first - 1 in self._failed:
            first -= 1
        while last + 1 in self._failed:
            last += 1
        if self.longest is None or last - first + 1 > self.longest.launches:
            self.longest = Streak(last - first + 1, *self._failed[first])

    def restart(self) -> None:
        """A controller took over (``--resume``): it starts with a fresh budget, launches before it no longer count."""
        self._current.clear()
        self._failed.clear()
        self._decided.clear()
        self.longest = None
