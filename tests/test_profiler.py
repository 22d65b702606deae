"""``hpcsched profile``: measured throughput and startup per allocation, written as a profile that a
spec names (``scheduler.profile``) and that changes the scheduler's resize decisions."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from hpcsched.spec.profile_file import build_profile, read_profile, write_profile
from hpcsched.cli.profiler import parse_atoms
from hpcsched.core.records import EntranceClosed
from hpcsched.schedulers import make_scheduler
from hpcsched.schedulers.decisions import ResizeTrial
from hpcsched.spec import load_spec
from tests.harness import Harness
from tests.runs import REPO, TOY


def _profile_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``hpcsched profile`` on the command line."""
    return subprocess.run([sys.executable, "-m", "hpcsched", "profile", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def _toy_spec(directory: Path, scales: bool = True, step_time: float = 0.3, **scheduler) -> Path:
    spec = {"name": "toy-profile", "trainable": f"{TOY}:toy", "metric": {"name": "acc", "mode": "max"},
            "space": {"quality": {"grid": [0.8, 0.5]}, "step_time": step_time, "scales": scales},
            "scheduler": {"kind": "hypersched", "r": 1, "R": 5, "eta": 2, **scheduler},
            "resources": {"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1}, "deadline": "60s"}
    path = directory / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_the_profiler_and_the_schedule_import_without_torch():
    code = ("import sys, hpcsched, hpcsched.cli.main, hpcsched.cli.profiler, hpcsched.training.schedule; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_default_allocations_are_powers_of_two_with_one():
    assert parse_atoms(None, 8) == [1, 2, 4, 8]
    assert parse_atoms(None, 6) == [1, 2, 4, 6]
    assert parse_atoms(None, "auto") == [1]
    assert parse_atoms("4, 2", 8) == [1, 2, 4]


@pytest.mark.slow
def test_profile_of_a_scaling_trainable_and_of_one_that_does_not_scale(tmp_path):
    out = tmp_path / "linear.yaml"
    # steps long beside what a report itself costs (a checkpoint written, a line appended): a loaded CI
    # machine read 0.3 s steps as a speedup of 1.45, as if about 0.18 s of each step did not scale
    proc = _profile_cli(str(_toy_spec(tmp_path, step_time=0.8)), "--atoms", "1,2", "--steps", "4", "--out", str(out),
                        "--keep")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(out.read_text())
    assert [row["atoms"] for row in data["allocations"]] == [1, 2]
    assert data["config"]["quality"] == 0.8 and data["steps"] == 4  # the sampler's first configuration
    assert 1.5 < data["scaling"][2] < 2.5, data  # toy steps take step_time / atoms
    assert data["startup_estimate"] > 0
    assert "speedup" in proc.stdout and "believed speedup s(a): 1:1  2:" in proc.stdout
    # the second allocation resumed the trial from the first one's checkpoint, like a resize
    work = next(tmp_path.glob(".profile-toy-profile-*"))
    lines = [json.loads(line) for line in (work / "trials" / "p0000" / "scores.jsonl").read_text().splitlines()]
    steps = [line for line in lines if line["kind"] == "report"]
    assert [line["step"] for line in steps] == list(range(1, len(steps) + 1))
    assert all(line["metrics"]["steps_done"] == line["step"] for line in steps)
    assert {line["metrics"]["atoms"] for line in steps} == {1, 2}

    flat = tmp_path / "flat.yaml"
    proc = _profile_cli(str(_toy_spec(tmp_path, scales=False)), "--atoms", "2", "--steps", "4", "--out", str(flat),
                        "--config", "quality=0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(flat.read_text())
    assert data["config"]["quality"] == 0.5 and 0.6 < data["scaling"][2] < 1.4, data
    assert len(list(tmp_path.glob(".profile-*"))) == 1  # the second run (no --keep) left nothing behind


def test_bad_input_is_refused_with_the_field_and_value(tmp_path, capsys):
    from hpcsched.cli.main import main

    spec = _toy_spec(tmp_path)
    cases = [
        (["--atoms", "1,x"], "--atoms", "'x'"),
        (["--atoms", "0"], "--atoms", "0"),
        (["--atoms", "1,64"], "--atoms", "64 atoms do not fit here"),
        (["--steps", "1"], "--steps", "1"),
        (["--steps", "many"], "--steps", "'many'"),
        (["--config", "nonsense"], "--config", "'nonsense'"),
        (["--timeout", "soon"], "--timeout", "'soon'"),
    ]
    for extra, field, value in cases:
        assert main(["profile", str(spec), *extra, "--out", str(tmp_path / "p.yaml")]) == 2, extra
        err = capsys.readouterr().err
        assert field in err and value in err, err
    simulation = tmp_path / "simulation.yaml"
    simulation.write_text(yaml.safe_dump({"name": "sim", "scheduler": {"kind": "asha", "r": 1, "R": 10},
                                          "resources": {"atoms": 2}, "deadline": 60,
                                          "workload": {"kind": "synthetic"}}))
    proc = _profile_cli(str(simulation), "--out", str(tmp_path / "p.yaml"))  # through the command line: exit 2
    assert proc.returncode == 2 and "trainable" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "p.yaml").exists() and not list(tmp_path.glob(".profile-*"))


# ---------------------------------------------------------------- the profile drives the scheduler


def _write(tmp_path: Path, name: str, rates: dict[int, float], startup: float) -> Path:
    path = tmp_path / f"{name}.yaml"
    write_profile(path, build_profile([{"atoms": a, "steps_per_second": r, "startup_seconds": startup}
                                       for a, r in rates.items()], spec="test"))
    return path


def _spec_with_profile(tmp_path: Path, profile: Path) -> Path:
    spec = {"name": "with-profile", "trainable": f"{TOY}:toy", "metric": {"name": "acc", "mode": "max"},
            "space": {"quality": 0.5}, "resources": {"atoms": 8, "gpus_per_atom": 0},
            "scheduler": {"kind": "hypersched", "r": 100, "R": 500, "eta": 4, "profile": profile.name}}
    path = tmp_path / f"spec-{profile.stem}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _decisions_with(scheduler_spec) -> list:
    values = {f.name: getattr(scheduler_spec, f.name) for f in fields(scheduler_spec)}
    values.update(allocation="top_job", resize_cooldown=2)
    h = Harness(atoms=8, deadline=1000.0, **values)
    for name in "abc":
        h.start(name, startup=1.0)
    h.commit(EntranceClosed(0.0, "test"))
    for step in (1, 2):
        for name, score in zip("abc", (0.9, 0.1, 0.1)):
            h.report(name, step, score)
    return h.decide()


def test_a_spec_naming_a_profile_believes_its_table_and_startup(tmp_path):
    measured = _write(tmp_path, "measured", {1: 2.0, 2: 3.6, 4: 6.0}, startup=7.5)
    spec = load_spec(_spec_with_profile(tmp_path, measured))
    scaling, startup = read_profile(measured)
    assert spec.scheduler.scaling == scaling and spec.scheduler.startup_estimate == startup == 7.5
    assert spec.scheduler.scaling.rate(2) == pytest.approx(1.8) and spec.scheduler.scaling.rate(3) == pytest.approx(2.4)
    assert make_scheduler(spec.scheduler, "max").startup_estimate == 7.5  # T_o before startups are measured


def test_the_profile_changes_resize_decisions(tmp_path):
    linear = load_spec(_spec_with_profile(tmp_path, _write(tmp_path, "linear", {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0}, 1.0)))
    flat = load_spec(_spec_with_profile(tmp_path, _write(tmp_path, "flat", {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0}, 1.0)))
    grown = _decisions_with(linear.scheduler)
    assert grown == [ResizeTrial("a", 6, "grow 1->6 (top_job)")]
    assert _decisions_with(flat.scheduler) == []  # no speedup measured: no resize


def test_measure_runs_on_the_injected_clock_over_simulated_trials():
    """The profiler's measuring loop keeps time by the clock it is given: over simulated trials on a
    virtual clock it reads the simulator's true speed and startup exactly, in no wall time."""
    from hpcsched.core.clock import VirtualClock
    from hpcsched.executors.sim import SimExecutor
    from hpcsched.cli.profiler import ProfileFailed, measure
    from hpcsched.core.scaling import named_scaling
    from tests.test_simulator import ListWorkload, linear_curve

    clock = VirtualClock(100.0)
    executor = SimExecutor(ListWorkload([linear_curve("c", 40, step_time=2.0)]), clock, named_scaling("sqrt"), 5.0)
    one = measure(executor, clock, ["0"], {}, 0, 1, steps=4, timeout=60.0)
    assert (one.atoms, one.startup_seconds) == (1, 5.0)
    assert one.steps_per_second == pytest.approx(0.5)
    four = measure(executor, clock, ["0", "1", "2", "3"], {}, one.checkpoint_step, 2, steps=4, timeout=60.0)
    assert four.steps_per_second == pytest.approx(0.5 * 2.0)  # sqrt scaling: 2x on 4 atoms
    with pytest.raises(ProfileFailed, match="no exit within 3 s"):
        measure(executor, clock, ["0"], {}, four.checkpoint_step, 3, steps=4, timeout=3.0)
