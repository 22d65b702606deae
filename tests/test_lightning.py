"""The Lightning callback in real trial processes: report per epoch, pause, resume from the Trainer's checkpoint."""

from __future__ import annotations

import json

import pytest

from tests.runs import REPO, assert_framework_trial_resumed_where_it_stopped, hpcsched, records, write_spec

pytestmark = [pytest.mark.slow, pytest.mark.torch]
LIGHTNING_TOY = REPO / "tests" / "trainables" / "lightning_toy.py"


def test_a_lightning_trainer_reports_pauses_and_resumes_where_it_stopped(tmp_path):
    spec = write_spec(tmp_path, trainable=f"{LIGHTNING_TOY}:train", deadline="60s", max_trials=4,
                      metric={"name": "val_score", "mode": "max"},
                      space={"lr": {"grid": [0.1, 0.03, 0.01, 0.001]}},
                      scheduler={"kind": "asha", "r": 2, "R": 6, "eta": 2},  # pauses at rungs, then promotes
                      controller={"poll_interval": 0.1, "stop_margin": 2, "stop_grace": 30})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet", timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    reports = assert_framework_trial_resumed_where_it_stopped(recs, "val_loss", "global_step", batches=4)
    import torch
    checkpoint = json.loads((run / "result.json").read_text())["best"]["checkpoint"]
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    assert {"state_dict", "optimizer_states", "epoch", "loops"} <= set(saved)
    assert max(r.step for r in reports) == 6
