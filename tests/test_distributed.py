"""Resizable data-parallel training (hpcsched.training): LR rules, checkpoints, gloo processes.

Real processes: a trial grows 1 -> 2 gloo processes under the real controller (``hpcsched run``),
and a 2-process trial, stopped through one rank only (the stop consensus), resumes on 1 process
through the real local executor. In-process: a trial stopped and restored continues bit for bit.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from hpcsched.training.schedule import LRSchedule
from tests.runs import REPO, first_resize, hpcsched, records, reports

CIFAR_TRAIN = REPO / "experiments" / "cifar10" / "train.py"
TINY = {"lr": 0.1, "momentum": 0.9, "weight_decay": 5.0e-4, "arch": "resnet10", "width": 4, "blocks": [1, 1],
        "batch_size": 16, "base_batch": 16, "synthetic": True, "synthetic_train": 128, "synthetic_val": 64,
        "seed": 3}


# ---------------------------------------------------------------- the learning-rate rules (pure)


def test_lr_ramp_rises_at_most_ten_percent_per_step_and_restarts_at_each_resize():
    s = LRSchedule(base_lr=0.1, base_batch=128, milestones=(60, 120, 160), gamma=0.2)
    lrs = [s.lr_for(step, 1, 128) for step in (1, 2)]
    assert lrs == [0.1, 0.1] and s.ramp_start == 1
    grown = [s.lr_for(step, 4, 512) for step in range(3, 12)]  # target 0.1 * sqrt(4) = 0.2
    assert s.ramp_start == 3
    assert grown[0] == pytest.approx(0.11) and grown[-1] == pytest.approx(0.2)
    assert all(b <= a * 1.1 + 1e-12 for a, b in zip([lrs[-1]] + grown, grown))
    saved = s.state_dict()
    restored = LRSchedule(base_lr=0.1, base_batch=128, milestones=(60, 120, 160), gamma=0.2)
    restored.load_state_dict(saved)
    assert restored.lr_for(12, 4, 512) == pytest.approx(0.2) and restored.ramp_start == 3  # same world: no restart
    assert restored.lr_for(13, 1, 128) == pytest.approx(0.1) and restored.ramp_start == 13  # shrink: at once
    assert restored.lr_for(14, 8, 1024) == pytest.approx(0.11) and restored.ramp_start == 14  # grow: ramp again


def test_lr_decays_apply_on_top_of_the_ramp():
    s = LRSchedule(base_lr=1.0, base_batch=128, milestones=(2, 4), gamma=0.2)
    assert [round(s.lr_for(k, 1, 128), 6) for k in range(1, 7)] == [1.0, 1.0, 0.2, 0.2, 0.04, 0.04]
    fresh = LRSchedule(base_lr=1.0, base_batch=128)
    assert fresh.lr_for(1, 2, 256) == 1.0 and fresh.lr_for(2, 2, 256) == pytest.approx(1.1)  # fresh: from base
    with pytest.raises(ValueError, match="rule"):
        LRSchedule(base_lr=1.0, rule="cubic")


def _check_lr_sequence(lines: list[dict]) -> None:
    """Never more than +10% from one step to the next, decays aside (none in these runs)."""
    lrs = [line["metrics"]["lr"] for line in lines]
    assert all(b <= a * 1.1 * (1 + 1e-9) for a, b in zip(lrs, lrs[1:])), lrs


# ---------------------------------------------------------------- in-process: exact continuation


def _context(run: Path, config: dict, from_step: int, max_steps: int, launch: int = 1):
    from hpcsched.trial.context import TrialContext, TrialLaunch

    (run / "trials" / "t0").mkdir(parents=True, exist_ok=True)
    return TrialContext(TrialLaunch("t0", f"t0-l{launch}", str(run), f"{CIFAR_TRAIN}:train", dict(config),
                                    from_step, max_steps, "accuracy", "max", ("cpu0",), threads=1))


def _load_example(path: Path):
    from hpcsched.trial.trainables import load_trainable

    return load_trainable(f"{path}:train")


@pytest.fixture
def torch_threads():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.torch
def test_a_stopped_and_restored_trial_continues_bit_for_bit(tmp_path, torch_threads):
    import torch

    from hpcsched.trial.context import ExitRequested, find_checkpoint, load_payload

    train = _load_example(CIFAR_TRAIN)
    straight, split = tmp_path / "straight", tmp_path / "split"
    for run in (straight, split):
        run.mkdir(mode=0o700)
    train(TINY, _context(straight, TINY, 0, 4))
    ctx = _context(split, TINY, 0, 4)
    original_report = ctx.report

    def report(step, score, state=None, **metrics):  # a stop request arrives during step 2
        ctx.stop_requested = step >= 2
        original_report(step, score, state=state, **metrics)

    ctx.report = report
    try:
        train(TINY, ctx)
    except ExitRequested:
        pass
    assert ctx.checkpoint_step == 2
    train(TINY, _context(split, TINY, 2, 4, launch=2))
    a = load_payload(find_checkpoint(straight / "trials" / "t0" / "checkpoints", 4))
    b = load_payload(find_checkpoint(split / "trials" / "t0" / "checkpoints", 4))
    assert a["model"].keys() == b["model"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    momenta = [(sa["momentum_buffer"], sb["momentum_buffer"])
               for sa, sb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values())]
    assert momenta and all(torch.equal(x, y) for x, y in momenta)
    assert a["schedule"] == b["schedule"] and a["epoch"] == b["epoch"] == 4
    lines = reports(split, "t0")
    assert [line["step"] for line in lines] == [1, 2, 3, 4]
    assert lines[2]["metrics"]["restored_checksum"] == lines[1]["metrics"]["checksum"]


# ---------------------------------------------------------------- real processes


def _spec(tmp_path: Path, **overrides) -> Path:
    spec = {
        "name": "dp", "trainable": f"{CIFAR_TRAIN}:train", "metric": {"name": "accuracy", "mode": "max"},
        "space": dict(TINY),
        "scheduler": {"kind": "hypersched", "r": 1, "R": 9, "eta": 2, "scaling": "linear", "resize_cooldown": 1},
        "resources": {"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1, "distributed": True},
        "deadline": "150s", "max_trials": 1,
        "controller": {"poll_interval": 0.1, "stop_margin": 3, "stop_grace": 30},
    }
    spec.update(overrides)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
@pytest.mark.torch
def test_controller_grows_a_trial_from_one_to_two_gloo_processes(tmp_path):
    from hpcsched.trial.context import load_checkpoint
    from hpcsched.training.distributed import state_checksum

    run = tmp_path / "run"
    # enough steps (about 0.1 s each) that growing pays before R: the overhead-aware test weighs the
    # time until R on one process against a stop and a startup (about 3 s), not the whole deadline;
    # no step decays in them (the recipe's first is after step 60)
    R = 150
    scheduler = {"kind": "hypersched", "r": 1, "R": R, "eta": 2, "scaling": "linear", "resize_cooldown": 1}
    spec = _spec(tmp_path, scheduler=scheduler, space={**TINY, "lr_milestones": []})
    proc = hpcsched("run", str(spec), "--run-dir", str(run), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    resize, exited, relaunch = first_resize(recs)
    assert resize.atoms == 2
    assert exited.outcome == "checkpointed" and relaunch.reason == "resize" and len(relaunch.atoms) == 2
    assert relaunch.from_step == exited.step > 0
    lines = reports(run, "t0000")
    assert [line["step"] for line in lines] == list(range(1, R + 1))  # no step lost or repeated
    before = [line for line in lines if line["step"] <= exited.step]
    after = [line for line in lines if line["step"] > exited.step]
    assert after[0]["step"] == exited.step + 1
    assert {line["metrics"]["world_size"] for line in before} == {1}
    assert {line["metrics"]["world_size"] for line in after} == {2}
    # the two processes started from exactly the saved parameters
    assert after[0]["metrics"]["restored_checksum"] == before[-1]["metrics"]["checksum"]
    # the ramp restarted at the resize, from the rate in use, towards 0.1 * sqrt(2)
    assert after[0]["metrics"]["ramp_start"] == exited.step + 1
    assert after[0]["metrics"]["lr"] == pytest.approx(before[-1]["metrics"]["lr"] * 1.1)
    assert after[-1]["metrics"]["lr"] == pytest.approx(0.1 * math.sqrt(2))
    _check_lr_sequence(lines)
    result = json.loads((run / "result.json").read_text())
    state = load_checkpoint(result["best"]["checkpoint"])
    reported = next(line for line in lines if line["step"] == result["best"]["step"])
    assert state_checksum(state["model"]) == reported["metrics"]["checksum"]
    assert state["epoch"] == result["best"]["step"]


def _wait(executor, predicate, timeout: float) -> list:
    events: list = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        events.extend(executor.poll(time.time()))
        if predicate(events):
            return events
        time.sleep(0.05)
    raise AssertionError(f"timed out; events so far: {events}")


@pytest.mark.slow
@pytest.mark.torch
def test_two_processes_stop_together_and_resume_on_one(tmp_path):
    from hpcsched.core.clock import WallClock
    from hpcsched.executors.base import LaunchRequest, TrialExit, TrialReport
    from hpcsched.executors.launching import ProcessSettings
    from hpcsched.executors.local import LocalExecutor, LocalResources

    run = tmp_path / "run"
    (run / "trials").mkdir(parents=True, mode=0o700)
    run.chmod(0o700)
    settings = ProcessSettings(run_dir=run, trainable=f"{CIFAR_TRAIN}:train", max_steps=50, metric="accuracy",
                               mode="max", poll_interval=0.1, stop_grace=60)
    executor = LocalExecutor(settings, WallClock(), LocalResources(2, 0, 1, distributed=True))
    try:
        executor.launch(LaunchRequest("t0", 0, TINY, ("cpu0", "cpu1"), 0, "start", 1))
        _wait(executor, lambda ev: sum(isinstance(e, TrialReport) for e in ev) >= 3, 120)
        pids = json.loads((run / "trials" / "t0" / "launches" / "t0-l1.json").read_text())["pids"]
        assert len(pids) == 2
        os.kill(pids[1], signal.SIGUSR1)  # only rank 1 hears the stop: rank 0 learns it by consensus
        events = _wait(executor, lambda ev: any(isinstance(e, TrialExit) for e in ev), 60)
        exit_event = next(e for e in events if isinstance(e, TrialExit))
        assert exit_event.outcome == "checkpointed", exit_event
        stopped_at = exit_event.step
        executor.launch(LaunchRequest("t0", 0, TINY, ("cpu0",), stopped_at, "resize", 2))
        _wait(executor, lambda ev: sum(isinstance(e, TrialReport) for e in ev) >= 2, 120)
        executor.request_stop("t0")
        events = _wait(executor, lambda ev: any(isinstance(e, TrialExit) for e in ev), 60)
        assert next(e for e in events if isinstance(e, TrialExit)).outcome == "checkpointed"
    finally:
        executor.shutdown()
    launches = run / "trials" / "t0" / "launches"
    for rank in (0, 1):  # both ranks returned a result: neither hung nor was killed
        assert (launches / f"t0-l1_{rank}_result.pkl").exists(), sorted(p.name for p in launches.iterdir())
    lines = reports(run, "t0")
    steps = [line["step"] for line in lines]
    assert steps == list(range(1, len(steps) + 1))
    first = [line for line in lines if line["launch"] == "t0-l1"]
    second = [line for line in lines if line["launch"] == "t0-l2"]
    assert first[-1]["step"] == stopped_at and second[0]["step"] == stopped_at + 1
    assert {line["metrics"]["world_size"] for line in first} == {2}
    assert {line["metrics"]["world_size"] for line in second} == {1}
    assert second[0]["metrics"]["restored_checksum"] == first[-1]["metrics"]["checksum"]
    # fresh on 2 processes: the ramp climbs from 0.1 towards 0.1 * sqrt(2); on 1 process the target
    # is 0.1, taken at once, and the ramp restarts at the resize
    assert first[0]["metrics"]["lr"] == pytest.approx(0.1) and first[1]["metrics"]["lr"] == pytest.approx(0.11)
    assert second[0]["metrics"]["lr"] == pytest.approx(0.1) and second[0]["metrics"]["ramp_start"] == stopped_at + 1
    _check_lr_sequence(lines)
