"""Helpers for tests that run the real controller on local processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

from hpcsched.rundir.journal import read_journal

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "tests" / "trainables" / "toy.py"


def write_spec(directory: Path, **overrides) -> Path:
    spec = {
        "name": "toy",
        "trainable": f"{TOY}:toy",
        "metric": {"name": "acc", "mode": "max"},
        "space": {"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]}, "step_time": 0.1},
        "scheduler": {"kind": "hypersched", "r": 2, "R": 12, "eta": 2, "resize_cooldown": 1},
        "resources": {"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1},
        "deadline": "40s",
        "controller": {"poll_interval": 0.1, "stop_margin": 2, "stop_grace": 10},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    if spec["scheduler"].get("kind") != "hypersched":
        spec["scheduler"].pop("resize_cooldown", None)  # HyperSched's own key
    path = directory / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def hpcsched(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hpcsched", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, **kwargs)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hpcsched", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=REPO)


def records(run_dir: Path):
    return read_journal(run_dir / "events.jsonl")


def reports(run_dir: Path, trial: str) -> list[dict]:
    lines = (run_dir / "trials" / trial / "scores.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if '"report"' in line]


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def no_trial_processes_left(run_dir: Path) -> bool:
    """No process is still running a launch of this run (checked through /proc)."""
    marker = str(run_dir)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if marker in cmdline and "submitit" in cmdline and stat.split(")")[-1].split()[0] != "Z":
            return False
    return True


def first_resize(recs):
    """(stop request, exit, relaunch) of the first resize in a journal."""
    from hpcsched.core.records import Exited, Launched, StopRequested

    resize = next(r for r in recs if isinstance(r, StopRequested) and r.intent == "resize")
    exited = next(r for r in recs if isinstance(r, Exited) and r.trial == resize.trial and r.t >= resize.t)
    relaunch = next(r for r in recs if isinstance(r, Launched) and r.trial == resize.trial and r.t >= exited.t)
    return resize, exited, relaunch


def pause_lags(recs) -> list[tuple[str, str, int, int, int]]:
    """For every pause: (trial, reason, the step the trial had reported when the pause was decided, the
    step it exited at, reports it wrote after the decision).

    Measured on the trial's own clock (a report's ``t`` is when the trial wrote it): a report written
    just before the stop request but read by the controller after it was not trained after the decision."""
    from hpcsched.core.records import Exited, Launched, Reported, StopRequested

    from_step: dict[str, int] = {}
    launch_reports: dict[str, list] = {}
    pending: dict[str, StopRequested] = {}
    out = []
    for r in recs:
        if isinstance(r, Launched):
            from_step[r.trial], launch_reports[r.trial] = r.from_step, []
        elif isinstance(r, Reported):
            launch_reports.setdefault(r.trial, []).append(r)
        elif isinstance(r, StopRequested) and r.intent == "pause":
            pending[r.trial] = r
        elif isinstance(r, Exited) and r.trial in pending:
            stop = pending.pop(r.trial)
            reports = launch_reports.get(r.trial, [])
            decided = max([x.step for x in reports if x.t <= stop.t], default=from_step.get(r.trial, 0))
            after = sum(1 for x in reports if x.t > stop.t)
            out.append((r.trial, stop.reason, decided, r.step, after))
    return out


def paused_at(recs, t: float) -> set[str]:
    """The trials that were paused (checkpointed on a pause request, not relaunched yet) at time ``t``."""
    from hpcsched.core.records import Exited, Launched, StopRequested

    intent: dict[str, str] = {}
    paused: set[str] = set()
    for r in recs:
        if r.t > t:
            continue
        if isinstance(r, StopRequested):
            intent[r.trial] = r.intent
        elif isinstance(r, Exited) and r.outcome == "checkpointed" and intent.get(r.trial) == "pause":
            paused.add(r.trial)
        elif isinstance(r, Launched):
            paused.discard(r.trial)
    return paused


def assert_framework_trial_resumed_where_it_stopped(recs, metric: str, global_step: str, batches: int) -> list:
    """For the framework callbacks' tests: every report checkpointed (a torch file) with ``metric`` beside
    the score, some trial paused and resumed, and each relaunch's first report the next epoch with the
    framework's own step counter (``global_step``, ``batches`` per epoch) carried over. Returns the reports."""
    from hpcsched.core.records import LaunchReason, Launched, Reported

    reports = [r for r in recs if isinstance(r, Reported)]
    assert reports and all(r.checkpoint.endswith(".pt") for r in reports)
    assert all(0 < r.score <= 1 and metric in r.metrics for r in reports)
    resumed = [r for r in recs if isinstance(r, Launched) and r.reason != LaunchReason.START]
    assert any(r.reason == LaunchReason.RESUME for r in resumed), "no trial was paused and resumed"
    for launch in resumed:
        after = [r for r in reports if r.trial == launch.trial and r.t > launch.t]
        assert after and after[0].step == launch.from_step + 1  # the next epoch, not the paused one again
        assert after[0].metrics[global_step] == batches * after[0].step  # the framework's loop state came back
    return reports
