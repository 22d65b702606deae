"""The Hugging Face callback in real trial processes: report per epoch, pause, resume from the Trainer's
own checkpoint folder."""

from __future__ import annotations

import json

import pytest

from tests.runs import REPO, assert_framework_trial_resumed_where_it_stopped, hpcsched, records, write_spec

pytestmark = [pytest.mark.slow, pytest.mark.torch]
HF_TOY = REPO / "tests" / "trainables" / "huggingface_toy.py"


def test_a_transformers_trainer_reports_pauses_and_resumes_where_it_stopped(tmp_path):
    pytest.importorskip("transformers")
    spec = write_spec(tmp_path, trainable=f"{HF_TOY}:train", deadline="90s", max_trials=3,
                      metric={"name": "eval_score", "mode": "max"},
                      space={"lr": {"grid": [0.1, 0.01, 0.001]}},
                      # startups not counted against the seconds-long epochs: a rung pauses, a resume follows
                      scheduler={"r": 1, "R": 4, "eta": 2, "overhead_aware": False},
                      controller={"poll_interval": 0.1, "stop_margin": 2, "stop_grace": 30})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    reports = assert_framework_trial_resumed_where_it_stopped(recs, "eval_mse", "eval_global_step", batches=4)
    import torch
    checkpoint = json.loads((run / "result.json").read_text())["best"]["checkpoint"]
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    assert {"trainer_state.json", "optimizer.pt", "model.safetensors"} <= set(saved["huggingface_checkpoint"])
    assert max(r.step for r in reports) == 4
    assert not list(run.glob("trials/*/hf/checkpoint-*")), "the Trainer's own folders are left behind"


def test_resume_from_unpacks_the_folder_and_refuses_names_that_leave_it(tmp_path):
    pytest.importorskip("transformers")
    from types import SimpleNamespace

    from hpcsched.training.huggingface import CHECKPOINT_KEY, folder_files, resume_from

    folder = tmp_path / "checkpoint-8"
    (folder / "sub").mkdir(parents=True)
    (folder / "trainer_state.json").write_text('{"global_step": 8}')
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x01")
    saved = folder_files(folder)
    assert saved == {CHECKPOINT_KEY: {"sub/weights.bin": b"\x00\x01", "trainer_state.json": b'{"global_step": 8}'}}

    def ctx(payload):
        return SimpleNamespace(restore=lambda: payload, trial_id="t0001", start_step=2, trial_dir=tmp_path / "t0001")

    assert resume_from(ctx(None)) is None
    unpacked = resume_from(ctx(saved))
    assert unpacked.endswith("checkpoint-2")
    assert (tmp_path / "t0001" / "hf-resume" / "checkpoint-2" / "sub" / "weights.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="leaves its folder"):
        resume_from(ctx({CHECKPOINT_KEY: {"../../evil.py": b"x"}}))
    with pytest.raises(ValueError, match="not written by HpcschedTrainerCallback"):
        resume_from(ctx({"model": {}}))
    assert not (tmp_path / "evil.py").exists()
