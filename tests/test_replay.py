"""The replay trainable: recorded curves in real processes, the same curve per trial as the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from hpcsched.core.records import Launched, Reported, TrialCreated
from hpcsched.workloads.trace import TraceWorkload, load_trace
from tests.runs import hpcsched, records, write_spec

pytestmark = pytest.mark.slow


def _trace(path: Path, trials: int = 6, steps: int = 8) -> Path:
    rng = np.random.default_rng(3)
    rows = ["trial,step,score"]
    for t in range(trials):
        level = rng.uniform(0.3, 0.9)
        for s in range(1, steps + 1):
            rows.append(f"c{t},{s},{level * (1 - np.exp(-s / 3)):.6f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_replayed_trials_report_the_simulators_curves_through_pauses_and_resizes(tmp_path):
    trace = _trace(tmp_path / "curves.csv")
    spec = write_spec(tmp_path, deadline="25s", max_trials=6)
    raw = yaml.safe_load(spec.read_text())
    # steps of 0.5 s: a trial has trained longer than its startup by its first rung, so rungs pause
    raw.update(trainable="hpcsched.trial.replay:train",
               space={"trace": str(trace), "step_time": 10, "time_scale": 0.05, "scaling": "sqrt", "seed": 4,
                      "draw": {"uniform": [0, 1]}},
               scheduler={"kind": "hypersched", "r": 2, "R": 8, "eta": 2, "resize_cooldown": 1, "scaling": "sqrt"})
    spec.write_text(yaml.safe_dump(raw))
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    workload = TraceWorkload(load_trace(trace, 10), 4, 8)
    index = {r.trial: r.index for r in recs if isinstance(r, TrialCreated)}
    reported = [r for r in recs if isinstance(r, Reported)]
    assert len(reported) >= 12
    for r in reported:
        curve = workload.curve(index[r.trial])
        assert r.score == pytest.approx(float(curve.scores[list(curve.steps).index(r.step)]))
    for trial in index:  # every step once, in order, across relaunches
        steps = [r.step for r in reported if r.trial == trial]
        assert steps == list(range(1, len(steps) + 1))
    assert any(isinstance(r, Launched) and r.reason == "resume" for r in recs)
    result = json.loads((run / "result.json").read_text())
    assert result["best"]["peak_score"] == max(r.score for r in reported)
