"""The progress lines of a real run: one per state change, and the summary at the end."""

from __future__ import annotations

from typing import Any, TextIO

from hpcsched.core.clock import Clock
from hpcsched.core.durations import format_duration
from hpcsched.core.records import (ControllerResumed, ControllerStopped, EntranceClosed, Exited, Launched, Record,
                                   Reported, RunExtended, RunFinished, StopIntent, StopRequested)
from hpcsched.rundir.paths import RunDir
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.core.state import RunState, TrialStatus


ERROR_CHARS = 120  # of the last line of an errored trial's error: what it raised (type and message)


class Progress:
    """One line per state change: what happened, trials by state, atoms in use, best, time left."""

    def __init__(self, out: TextIO, clock: Clock, quiet: bool = False):
        self.out = out
        self.clock = clock
        self.quiet = quiet
        self._start: float | None = None

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.out, flush=True)

    def on_record(self, record: Record, state: RunState) -> None:
        if self._start is None:
            self._start = state.started.t if state.started else record.t
        what = self._describe(record, state)
        if what is None or self.quiet:
            return
        c = state.counts
        best = (f"best {state.best_score:.4g} ({state.best_trial}@{state.best_step})"
                if state.best_score is not None else "best -")
        left = state.deadline - record.t if state.deadline is not None else 0.0
        S = TrialStatus
        print(f"[+{format_duration(record.t - self._start):>6}] {what:<38} | run {c[S.RUNNING] + c[S.LAUNCHING]} "
              f"stop {c[S.STOPPING]} paused {c[S.PAUSED]} done {c[S.COMPLETED] + c[S.TERMINATED]} "
              f"err {c[S.ERRORED]} | atoms {state.total_atoms - state.free_atoms}/{state.total_atoms} | {best} "
              f"| left {format_duration(left)}", file=self.out, flush=True)

    @staticmethod
    def _describe(record: Record, state: RunState) -> str | None:
        if isinstance(record, Launched):
            n = len(record.atoms)
            return f"{record.trial} {record.reason} on {n} atom{'s' if n > 1 else ''}" + \
                (f" from step {record.from_step}" if record.from_step else "")
        if isinstance(record, StopRequested):
            extra = f" to {record.atoms}" if record.intent == StopIntent.RESIZE else ""
            # the wind-down's request names what ended the run early (a signal), not the deadline
            word = "stop and checkpoint" if record.intent == StopIntent.DEADLINE and record.reason else record.intent
            return f"{record.trial} {word}{extra}" + (f" ({record.reason})" if record.reason else "")
        if isinstance(record, Exited):
            if record.outcome == ExitOutcome.CHECKPOINTED and record.step == 0:
                text = f"{record.trial} exited before its first step"
            else:
                text = f"{record.trial} {record.outcome} at step {record.step}"
            trial = state.trials.get(record.trial)
            if record.retryable and trial is not None and trial.status != TrialStatus.ERRORED:
                text += " (the environment's error: retried from its checkpoint)"
            return text + (f": {record.error.strip().splitlines()[-1][:ERROR_CHARS]}" if record.error.strip() else "")
        if isinstance(record, Reported) and state.best_trial == record.trial and state.best_step == record.step \
                and state.best_score == record.score:
            return f"{record.trial} new best at step {record.step}"
        if isinstance(record, EntranceClosed):
            return "exploration closed"
        if isinstance(record, ControllerResumed):
            return "controller resumed"
        if isinstance(record, RunFinished):
            return f"run finished ({record.reason})"
        if isinstance(record, ControllerStopped):
            return f"controller stopped ({record.reason}); --resume goes on"
        if isinstance(record, RunExtended):
            return f"deadline extended by {format_duration(record.by)}"
        return None

    def summary(self, result: dict[str, Any], run_dir: RunDir) -> None:
        """The answer at the end: printed even when ``quiet`` (which only silences the progress lines)."""
        best = result.get("best")
        if best is None:
            self._answer(f"no checkpointed result; see {run_dir.path}")
            return
        trained = f"trained to R = {result['max_steps']}" if best.get("completed") else \
            f"not trained to R = {result['max_steps']}"
        self._answer(("" if self.quiet else "\n") + f"best: trial {best['trial']} {result['metric']}="
                     f"{best['score']:.4g} at step {best['step']} ({trained})")
        if best.get("peak_step", best["step"]) != best["step"]:
            self._answer(f"(its best report: {result['metric']}={best['peak_score']:.4g} at step {best['peak_step']})")
        self._answer(f"config: {best['config']}")
        self._answer(f"checkpoint: {best['checkpoint']}")
        done = result.get("best_completed")
        if done is None:
            self._answer(f"no trial was trained to R = {result['max_steps']} steps")
        elif done["trial"] != best["trial"] or done["step"] != best["step"]:
            self._answer(f"best fully trained (step {done['step']}): trial {done['trial']} "
                         f"{result['metric']}={done['score']:.4g}, {done['checkpoint']}")
        self._answer(f"result: {run_dir.result}")

    def _answer(self, text: str) -> None:
        print(text, file=self.out, flush=True)
