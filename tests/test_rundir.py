"""Run directories: created private, never reused by accident, refused when others can write to them."""

import os
import pickle

import pytest

from hpcsched.core.errors import RunDirError
from hpcsched.rundir.paths import RunDir
from hpcsched.trial.context import load_checkpoint


def test_created_private_and_never_overwritten(tmp_path):
    run = RunDir.create(tmp_path / "run")
    assert (run.path.stat().st_mode & 0o777) == 0o700
    run.journal.write_text("")
    with pytest.raises(RunDirError, match="already holds a run"):
        RunDir.create(run.path)


def test_checkpoints_are_not_loaded_from_a_run_others_can_write(tmp_path):
    run = RunDir.create(tmp_path / "run")
    run.journal.write_text("")
    checkpoint = run.trial_dir("t0000") / "checkpoints" / "step-00000001.pkl"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(pickle.dumps({"w": 1}))
    assert load_checkpoint(checkpoint) == {"w": 1}
    os.chmod(run.path, 0o777)
    with pytest.raises(PermissionError, match="writable by group or others"):
        load_checkpoint(checkpoint)
    with pytest.raises(RunDirError, match="chmod 700"):
        run.check_private()
