"""The answer (result.json) exists before the deadline and survives a killed controller and a full disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from hpcsched.core.records import Exited, Launched, RunFinished, RunStarted
from tests.runs import REPO, hpcsched, no_trial_processes_left, records, start, wait_for, write_spec

pytestmark = pytest.mark.slow

HOSTILE = REPO / "tests" / "trainables" / "hostile.py"


def _result(run: Path) -> dict | None:
    try:
        return json.loads((run / "result.json").read_text())
    except (OSError, ValueError):
        return None


def _check_answer(run: Path, result: dict) -> None:
    best = result["best"]
    checkpoint = Path(best["checkpoint"]).resolve()
    assert checkpoint.is_file() and checkpoint.is_relative_to(run.resolve() / "trials")


def test_result_is_current_during_the_run_and_a_late_resume_finalizes_it(tmp_path):
    spec = write_spec(tmp_path, deadline="14s")
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run), "--quiet")
    assert wait_for(lambda: (_result(run) or {}).get("best") is not None, timeout=30)
    assert controller.poll() is None  # still running: the answer exists before the end
    provisional = _result(run)
    assert provisional["reason"] == "unfinished"
    # (its file may already be superseded: the trial keeps only its latest and best checkpoints)
    assert Path(provisional["best"]["checkpoint"]).is_relative_to(run.resolve() / "trials")
    os.kill(controller.pid, signal.SIGKILL)
    controller.wait()
    deadline = next(r for r in records(run) if isinstance(r, RunStarted)).deadline
    assert wait_for(lambda: no_trial_processes_left(run), timeout=30)
    time.sleep(max(0.0, deadline - time.time()) + 0.5)
    before = records(run)

    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "deadline has passed" in proc.stdout
    after = records(run)
    assert after[: len(before)] == before and not any(isinstance(r, Launched) for r in after[len(before):])
    assert isinstance(after[-1], RunFinished) and after[-1].reason == "deadline"
    final = _result(run)
    assert final["reason"] == "deadline" and final["best"]["peak_score"] >= provisional["best"]["peak_score"]
    _check_answer(run, final)


@pytest.fixture
def small_fs(tmp_path):
    """A 6 MiB tmpfs (root only; CI runs as root)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_stops_launching_and_leaves_a_valid_answer(tmp_path, small_fs):
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:ballast", deadline="60s",
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]}, "ballast_mb": 0.7,
                             "step_time": 0.05},
                      scheduler={"kind": "hypersched", "r": 2, "R": 12, "eta": 2, "resize_cooldown": 1})
    run = small_fs / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "disk full" in proc.stderr, proc.stderr
    result = _result(run)
    assert result is not None and result["reason"].startswith("disk full")
    _check_answer(run, result)
    recs = records(run)  # the journal is whole: every line parses
    assert isinstance(recs[-1], RunFinished) and recs[-1].reason.startswith("disk full")
    assert no_trial_processes_left(run)


def test_after_a_full_disk_the_trials_it_stopped_are_relaunched_from_their_checkpoints(tmp_path, small_fs):
    """A checkpoint that hits ENOSPC is the environment's error, not the trainable's: the trial is retried
    from its last checkpoint (here the relaunch finds the disk full and the run stops); once space is
    freed, --resume relaunches it and the best trial is trained to R (it stayed errored for good)."""
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:fills_disk", deadline="60s", max_trials=2,
                      space={"quality": {"grid": [0.9, 0.5]}, "fill_quality": 0.5, "fill_at": 3,
                             "ballast_mb": 0.5, "step_time": 0.1, "then_sleep": 2.0})
    raw = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**raw, "scheduler": {"kind": "random", "R": 20}}))
    run = small_fs / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), timeout=120)
    assert "disk full" in proc.stderr, proc.stdout + proc.stderr
    recs = records(run)
    best = next(r.trial for r in recs if type(r).__name__ == "TrialCreated" and r.config["quality"] == 0.9)
    hit = [r for r in recs if isinstance(r, Exited) and r.outcome == "errored"]
    assert hit and all(r.retryable and "[Errno 28]" in r.error for r in hit), hit
    assert best in {r.trial for r in hit}  # the best trial's own checkpoint hit the full disk
    status = {t["trial"]: t["status"] for t in json.loads(hpcsched("status", str(run), "--json").stdout)["trials"]}
    assert set(status.values()) == {"paused"}, status  # none errored for good
    checkpointed = max(r.step for r in recs if type(r).__name__ == "Reported" and r.trial == best and r.checkpoint)
    filler = next(run.glob("trials/*/filler"))
    filler.unlink()  # space freed

    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = records(run)[len(recs):]
    relaunch = next(r for r in after if isinstance(r, Launched) and r.trial == best)
    assert relaunch.reason == "recover" and relaunch.from_step == checkpointed
    result = json.loads((run / "result.json").read_text())
    assert result["best"]["trial"] == best and result["best"]["completed"] and result["best"]["step"] == 20
    assert no_trial_processes_left(run)
