"""A controller killed with SIGKILL at any moment resumes with nothing lost and nothing doubled."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from hpcsched.core.records import (ControllerResumed, ControllerStopped, Exited, Launched, Reported, RunExtended,
                                   RunFinished, RunStarted, StopRequested, TrialCreated)
from tests.runs import hpcsched, no_trial_processes_left, records, reports, start, wait_for, write_spec

pytestmark = pytest.mark.slow


def _lines(path: Path) -> int:
    try:
        return len(path.read_bytes().splitlines())
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize("kill_after_records", [4, 30, 70])
def test_sigkill_then_resume(tmp_path, kill_after_records):
    spec = write_spec(tmp_path, deadline="60s", space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]},
                                                       "step_time": 0.1})
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run), "--quiet")
    journal = run / "events.jsonl"
    assert wait_for(lambda: _lines(journal) >= kill_after_records, timeout=60)
    os.kill(controller.pid, signal.SIGKILL)
    controller.wait()
    before = records(run)
    deadline = next(r for r in before if isinstance(r, RunStarted)).deadline
    best_before = {}
    for r in before:
        if isinstance(r, Reported):
            best_before[r.trial] = max(best_before.get(r.trial, 0), r.step)

    status = json.loads(hpcsched("status", str(run), "--json").stdout)
    assert status["controller"]["alive"] is False and status["finished"] is None

    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = records(run)
    assert after[: len(before)] == before  # the journal was only appended to
    assert [r for r in after if isinstance(r, RunStarted)] == [r for r in before if isinstance(r, RunStarted)]
    assert any(isinstance(r, ControllerResumed) for r in after)
    result = json.loads((run / "result.json").read_text())
    assert result["deadline"] == deadline and Path(result["best"]["checkpoint"]).exists()

    created = [r.trial for r in after if isinstance(r, TrialCreated)]
    assert len(created) == len(set(created)) <= 6
    status = json.loads(hpcsched("status", str(run), "--json").stdout)
    assert all(t["status"] in ("completed", "paused", "terminated", "errored") for t in status["trials"])
    assert not any(t["status"] == "errored" for t in status["trials"])
    for trial in created:
        assert not (run / "trials" / trial / "VIOLATION").exists(), f"{trial} ran twice at once"
        lines = reports(run, trial)
        assert all(line["metrics"]["steps_done"] == line["step"] for line in lines)
        # no progress lost: every relaunch starts from the trial's latest checkpoint before it
        for launch in [r for r in after if isinstance(r, Launched) and r.trial == trial and r.reason != "start"]:
            saved = [line["step"] for line in lines if line.get("checkpoint") and line["t"] <= launch.t + 1e-6]
            assert launch.from_step == max(saved, default=0), (trial, launch)
        final = max((line["step"] for line in lines), default=0)
        assert final >= best_before.get(trial, 0)
    recovered = [r for r in after if isinstance(r, StopRequested) and r.intent == "recover"]
    live_at_kill = {r.trial for r in recovered}
    for trial in live_at_kill:  # each trial the old controller left running was exited, then relaunched or kept
        assert any(isinstance(r, Exited) and r.trial == trial for r in after[len(before):])
    assert no_trial_processes_left(run)


def test_interrupt_then_resume_relaunches_what_was_running(tmp_path):
    # (allocation none: both trials hold one atom each when the interrupt comes, none is mid-resize)
    spec = write_spec(tmp_path, deadline="30s", scheduler={"r": 5000, "R": 10000, "allocation": "none"},
                      space={"quality": {"grid": [0.9, 0.5]}, "step_time": 0.1})
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run))
    assert wait_for(lambda: (run / "events.jsonl").exists() and
                    sum(isinstance(r, Reported) for r in records(run)) >= 6, timeout=60)
    controller.send_signal(signal.SIGINT)  # Ctrl-C: checkpoint every trial, write the result, exit
    out, _ = controller.communicate(timeout=60)
    assert controller.returncode == 0, out
    interrupted = json.loads((run / "result.json").read_text())
    assert interrupted["reason"] == "unfinished" and interrupted["stopped"] == "interrupted by SIGINT"
    assert interrupted["best"]["checkpoint"] and "controller stopped (interrupted by SIGINT)" in out
    before = records(run)
    assert isinstance(before[-1], ControllerStopped) and not any(isinstance(r, RunFinished) for r in before)
    status = hpcsched("status", str(run))
    assert "controller stopped (interrupted by SIGINT); resume with" in status.stdout
    stopped = {r.trial for r in before if isinstance(r, StopRequested) and r.intent == "deadline"}
    assert stopped == {"t0000", "t0001"}
    # each line names the interrupt, not the deadline (seconds away)
    assert all(f"{trial} stop and checkpoint (interrupted by SIGINT)" in out for trial in stopped), out
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = records(run)[len(before):]
    relaunched = {r.trial: r for r in after if isinstance(r, Launched) and r.reason == "recover"}
    assert set(relaunched) == stopped
    for trial, launch in relaunched.items():
        last = [r for r in before if isinstance(r, Exited) and r.trial == trial][-1]
        assert launch.from_step == last.step > 0
    assert json.loads((run / "result.json").read_text())["reason"] == "deadline"
    assert sum(isinstance(r, RunFinished) for r in records(run)) == 1  # one run, stopped once, finished once


def test_extend_continues_an_expired_run(tmp_path):
    spec = write_spec(tmp_path, deadline="8s", scheduler={"r": 5000, "R": 10000, "allocation": "none"},
                      space={"quality": {"grid": [0.9, 0.5]}, "step_time": 0.1})  # both train to the deadline
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = records(run)
    old_deadline = next(r for r in first if isinstance(r, RunStarted)).deadline
    assert isinstance(first[-1], RunFinished) and first[-1].reason == "deadline"
    stopped = {r.trial: r.step for r in first if isinstance(r, Exited)}
    assert set(stopped) == {"t0000", "t0001"} and min(stopped.values()) > 0

    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", timeout=60)  # too late, no more time
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing to resume" in proc.stdout and "--resume --extend 30m" in proc.stdout
    assert records(run) == first  # nothing recorded: the run had already finished
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--extend", "5s")
    assert proc.returncode == 2 and "--extend: only with --resume" in proc.stderr
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", "--deadline", "5m")
    assert proc.returncode == 2 and "--extend" in proc.stderr

    # the run ended at its stop margin, up to 2 s before its deadline: wait until that deadline has passed,
    # so that --extend counts from now (before it, it would count from the old deadline)
    time.sleep(max(0.0, old_deadline + 0.2 - time.time()))
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", "--extend", "6s", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "extended" in proc.stdout and "by 6s" in proc.stdout
    after = records(run)
    assert after[: len(first)] == first
    (extended,) = [r for r in after if isinstance(r, RunExtended)]
    assert extended.by == 6 and extended.previous_deadline == old_deadline
    assert extended.deadline == pytest.approx(extended.t + 6, abs=0.5)  # from now: the old deadline had passed
    relaunched = {r.trial: r.from_step for r in after[len(first):] if isinstance(r, Launched)}
    assert relaunched == stopped  # the trials go on from where the deadline stopped them
    for trial, step in stopped.items():
        assert max(line["step"] for line in reports(run, trial)) > step
    assert isinstance(after[-1], RunFinished) and after[-1].reason == "deadline"
    assert after[-1].t <= extended.deadline + 1
    result = json.loads((run / "result.json").read_text())
    assert result["reason"] == "deadline" and result["deadline"] == extended.deadline
    assert result["extended_by"] == 6 and Path(result["best"]["checkpoint"]).exists()
    status = json.loads(hpcsched("status", str(run), "--json").stdout)
    assert status["deadline"] == extended.deadline and status["extended_by"] == 6
    assert status["finished"] == "deadline"


def test_twenty_sigkills_at_random_moments_lose_nothing(tmp_path):
    """The controller is SIGKILLed 20 times at random moments and resumed each time."""
    rng = np.random.default_rng(20)
    spec = write_spec(tmp_path, deadline="90s", space={"quality": {"grid": [round(0.1 * i, 1) for i in range(1, 11)]},
                                                       "step_time": 0.1},
                      scheduler={"kind": "hypersched", "r": 4, "R": 80, "eta": 2, "resize_cooldown": 1})
    run = tmp_path / "run"
    journal = run / "events.jsonl"
    kills, seen = 0, 0
    while kills < 20:
        args = ("run", str(spec), "--run-dir", str(run), "--quiet") + (("--resume",) if kills else ())
        controller = start(*args)
        assert wait_for(lambda seen=seen: _lines(journal) > seen, timeout=60)
        wait_for(lambda c=controller: c.poll() is not None, timeout=float(rng.uniform(0.2, 2.0)))
        if controller.poll() is not None:
            break  # the run ended before this kill
        os.kill(controller.pid, signal.SIGKILL)
        controller.wait()
        kills += 1
        seen = _lines(journal)
    assert kills == 20
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--resume", "--quiet", timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    recs = records(run)
    started = next(r for r in recs if isinstance(r, RunStarted))
    assert isinstance(recs[-1], RunFinished) and recs[-1].t <= started.deadline + 15  # deadline kept
    created = [r.trial for r in recs if isinstance(r, TrialCreated)]
    assert len(created) == len(set(created))  # no trial made twice
    status = json.loads(hpcsched("status", str(run), "--json").stdout)
    assert len(status["trials"]) == len(created)
    assert all(t["status"] in ("completed", "paused", "terminated") for t in status["trials"]), status["trials"]
    for trial in created:
        assert not (run / "trials" / trial / "VIOLATION").exists(), f"{trial} ran twice at once"
        assert all(line["metrics"]["steps_done"] == line["step"] for line in reports(run, trial))
    result = json.loads((run / "result.json").read_text())
    assert result["reason"] in ("deadline", "nothing left to run") and Path(result["best"]["checkpoint"]).exists()
    assert no_trial_processes_left(run)
