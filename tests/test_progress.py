"""The progress lines a real run prints: each says what happened and why, in the words a user reads."""

from __future__ import annotations

from hpcsched.loop.progress import Progress
from hpcsched.core.records import Exited, StopIntent, StopRequested
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.core.state import RunState


def describe(record) -> str | None:
    return Progress._describe(record, RunState())


def test_a_stop_request_of_the_wind_down_names_the_interrupt_not_the_deadline():
    assert describe(StopRequested(5.0, "t0007", StopIntent.DEADLINE, reason="interrupted by SIGINT")) \
        == "t0007 stop and checkpoint (interrupted by SIGINT)"
    assert describe(StopRequested(5.0, "t0007", StopIntent.DEADLINE)) == "t0007 deadline"
    assert describe(StopRequested(5.0, "t0003", StopIntent.PAUSE, reason="rung 2")) == "t0003 pause (rung 2)"
    assert describe(StopRequested(5.0, "t0009", StopIntent.RESIZE, atoms=2, reason="grow 1->2")) \
        == "t0009 resize to 2 (grow 1->2)"


def test_a_trial_stopped_before_its_first_step_is_not_said_to_have_checkpointed():
    assert describe(Exited(5.0, "t0008", ExitOutcome.CHECKPOINTED, 0)) == "t0008 exited before its first step"
    assert describe(Exited(5.0, "t0008", ExitOutcome.CHECKPOINTED, 3)) == "t0008 checkpointed at step 3"
    assert describe(Exited(5.0, "t0008", ExitOutcome.FINISHED, 30)) == "t0008 finished at step 30"


def test_quiet_silences_the_progress_lines_but_not_the_answer(tmp_path):
    import io

    from hpcsched.core.clock import VirtualClock
    from hpcsched.rundir.paths import RunDir

    out = io.StringIO()
    progress = Progress(out, VirtualClock(0.0), quiet=True)
    progress.on_record(StopRequested(5.0, "t0007", StopIntent.PAUSE, reason="rung 2"), RunState())
    assert out.getvalue() == ""
    best = {"trial": "t0003", "score": 0.98, "step": 30, "completed": True, "config": {"lr": 0.1},
            "checkpoint": "trials/t0003/checkpoints/step-00000030.pt"}
    progress.summary({"best": best, "best_completed": best, "metric": "accuracy", "max_steps": 30},
                     RunDir(tmp_path))
    assert out.getvalue().splitlines()[0] == "best: trial t0003 accuracy=0.98 at step 30 (trained to R = 30)"
    assert f"result: {tmp_path / 'result.json'}" in out.getvalue()
