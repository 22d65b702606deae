"""``result.json``, the run's answer: the best configuration, as its most trained model.

``best`` names the trial with the best checkpointed report (whose file still exists) and the model
to take: that trial's step-R checkpoint when it was trained to R (``completed``; ``score`` and
``step`` are then that model's, which may be a little below the trial's best report, kept as
``peak_score`` / ``peak_step``), else the checkpoint of its best report. ``best_completed`` is the
best model among all trials trained to R.

It is written atomically whenever a checkpointed report improves on the best or completes a trial
(``ResultKeeper``, so the answer exists before the deadline whatever happens later: a killed
controller, a full disk) and once more when the run ends. ``reason`` is ``unfinished`` until then.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import logging
from pathlib import Path
from typing import Any

from hpcsched.core.failures import last_lines
from hpcsched.core.records import FinishReason, Record, Reported
from hpcsched.rundir.paths import RunDir
from hpcsched.rundir.scores import CHECKPOINT_SUFFIXES, checkpoint_name
from hpcsched.spec import Spec
from hpcsched.core.state import RunState, TrialState

log = logging.getLogger(__name__)

UNFINISHED = "unfinished"
GAVE_UP_LINES = 8  # of the first failed launch's error, in result.json and the message of a run that gave up


def iso_time(t: float) -> str:
    return dt.datetime.fromtimestamp(t).isoformat(timespec="seconds")


def max_steps_of(spec: Spec, variant: str) -> int:
    """R of ``variant`` (the spec's when it names none)."""
    return next((v.scheduler.R for v in spec.variants if v.name == variant), spec.scheduler.R)


def build_result(spec: Spec, variant: str, run_dir: RunDir, state: RunState) -> dict[str, Any]:
    """The answer as the state stands: the trial with the best checkpointed report whose file still
    exists, as its step-R model when it was trained to R (see the module's docstring)."""
    best = None
    for trial in state.trials.values():
        if trial.best_checkpoint and trial.best_checkpoint_score is not None \
                and state.better(trial.best_checkpoint_score, best[0] if best else None):
            path = run_dir.trial(trial.trial_id).checkpoint(trial.best_checkpoint)
            if path.exists():
                best = (trial.best_checkpoint_score, trial, path)
    started = state.started
    finished = state.finished
    max_steps = max_steps_of(spec, variant)
    result: dict[str, Any] = {
        "name": spec.name, "variant": variant, "metric": spec.metric.name, "mode": spec.metric.mode,
        "reason": finished.reason if finished else UNFINISHED,
        "best": None,
        "trials_started": len(state.trials),
        "trials": {s: n for s, n in state.counts.items() if n},
        "max_steps": max_steps,
        "resizes": state.resizes, "pauses": state.pauses, "promotions": state.promotions,
        "exploration_closed_at": state.entrance_closed_at,
        "started_at": started.t if started else None,
        "deadline": state.deadline,
        "deadline_iso": iso_time(state.deadline) if state.deadline is not None else None,
        "extended_by": sum(e.by for e in state.extensions),
        "finished_at": finished.t if finished else None,
        "stopped": state.stopped.reason if state.stopped and not finished else None,
    }
    streak = state.failures.longest
    if finished is not None and finished.reason == FinishReason.FAILURES and streak is not None:
        # why the run gave up: launches in a row that errored before their first report, the first one's error
        result["gave_up"] = {"launches": streak.launches, "max_failures": spec.controller.max_failures,
                             "trainable": spec.trainable, "first_trial": streak.trial,
                             "first_error": "\n".join(last_lines(streak.error, GAVE_UP_LINES))}
    if best is not None:
        score, trial, path = best
        entry = {"trial": trial.trial_id, "config": trial.config, "score": score,
                 "step": trial.best_checkpoint_step, "checkpoint": str(path),
                 "completed": trial.step >= max_steps, "trained_steps": trial.step,
                 "peak_score": score, "peak_step": trial.best_checkpoint_step}
        final = _final_checkpoint(run_dir, trial, max_steps)
        if final is not None:  # trained to R: the fully trained model is the answer
            entry.update(score=trial.last_score, step=trial.checkpoint_step, checkpoint=str(final))
        result["best"] = entry
    result["best_completed"] = _best_completed(run_dir, state, max_steps)
    return result


def _final_checkpoint(run_dir: RunDir, trial: TrialState, max_steps: int) -> Path | None:
    """The step-R checkpoint of a trial trained to R, when its file exists (else None)."""
    if trial.step < max_steps or trial.checkpoint_step < max_steps or trial.last_score is None:
        return None
    for suffix in CHECKPOINT_SUFFIXES:
        path = run_dir.trial(trial.trial_id).checkpoint(checkpoint_name(trial.checkpoint_step, suffix))
        if path.exists():
            return path
    return None


def _best_completed(run_dir: RunDir, state: RunState, max_steps: int) -> dict[str, Any] | None:
    """The trial with the best final score among those trained to R, with its step-R checkpoint:
    the best fully trained model (``best`` is the best configuration's, which may not be trained to R)."""
    best = None
    for trial in state.trials.values():
        if best is not None and (trial.last_score is None or not state.better(trial.last_score, best[0])):
            continue
        path = _final_checkpoint(run_dir, trial, max_steps)
        if path is not None:
            best = (trial.last_score, trial, path)
    if best is None:
        return None
    score, trial, path = best
    return {"trial": trial.trial_id, "config": trial.config, "score": score, "step": trial.checkpoint_step,
            "checkpoint": str(path)}


def read_result(run_dir: RunDir) -> dict[str, Any] | None:
    """The run's result.json, or None when absent or unreadable."""
    try:
        data = json.loads(run_dir.result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_result(run_dir: RunDir, result: dict[str, Any]) -> bool:
    """Write result.json atomically; on a full disk free the run's reserve and try once more.
    Returns whether it was written (a failure is logged, not raised: the run goes on)."""
    for attempt in range(2):
        try:
            run_dir.write_json(run_dir.result, result)
            return True
        except OSError as exc:
            if attempt == 0 and exc.errno == errno.ENOSPC and run_dir.release_reserve():
                continue
            log.error("%s: could not write result.json: %s", run_dir.path, exc)
            return False
    return False


class ResultKeeper:
    """Rewrites result.json on every checkpointed report that improves on the best or completes
    a trial (on_record hook)."""

    def __init__(self, spec: Spec, variant: str, run_dir: RunDir):
        self.spec, self.variant, self.run_dir = spec, variant, run_dir
        self._best: float | None = None
        self._max_steps = max_steps_of(spec, variant)

    def on_record(self, record: Record, state: RunState) -> None:
        if not isinstance(record, Reported) or not record.checkpoint:
            return
        improved = state.better(record.score, self._best)
        if improved:
            self._best = record.score
        if improved or record.step >= self._max_steps:
            write_result(self.run_dir, build_result(self.spec, self.variant, self.run_dir, state))
