"""The failure budget's bookkeeping: launches in launch order, failed when they errored before their
first report; the longest run of consecutive failed ones (a launch still starting neither breaks nor
extends a run until it is decided); a restarted controller starts afresh."""

from __future__ import annotations

from hpcsched.core.failures import LaunchStreaks, Streak, describe_failure
from hpcsched.core.records import ControllerResumed, Exited, Launched, LaunchReason, Reported, RunStarted, TrialCreated
from hpcsched.core.state import RunState


def test_the_longest_run_of_launches_that_failed_before_reporting():
    streaks = LaunchStreaks()
    for trial in ("a", "b", "c", "d", "e"):
        streaks.launched(trial)
    streaks.exited("a", errored=True, error="A")
    streaks.exited("c", errored=True, error="C")  # b is still starting: a and c are not in a row yet
    assert streaks.longest == Streak(1, "a", "A")
    streaks.exited("b", errored=True, error="B")
    assert streaks.longest == Streak(3, "a", "A")
    streaks.reported("d")
    streaks.exited("d", errored=True, error="D")  # it reported first: not a failure before its first report
    streaks.exited("e", errored=True, error="E")
    assert streaks.longest == Streak(3, "a", "A")
    streaks.launched("a")  # a relaunch is a launch of its own
    streaks.exited("a", errored=False, error="")
    assert streaks.longest.launches == 3
    streaks.restart()
    assert streaks.longest is None


def test_the_state_replays_the_streak_and_a_resumed_controller_starts_afresh():
    records = [RunStarted(0.0, "x", 100.0, 2, 0, "d", "v", ("0", "1"))]
    for i in range(3):
        records += [TrialCreated(1.0, f"t{i}", i, {}), Launched(1.0, f"t{i}", ("0",), LaunchReason.START),
                    Exited(2.0, f"t{i}", "errored", 0, "RuntimeError: boom")]
    state = RunState.replayed(records)
    assert state.failures.longest == Streak(3, "t0", "RuntimeError: boom")
    records += [ControllerResumed(3.0, ("0", "1")), Launched(4.0, "t0", ("0",), LaunchReason.RESUME),
                Reported(5.0, "t0", 1, 0.5)]
    assert RunState.replayed(records).failures.longest is None


def test_a_failure_is_described_by_what_the_trial_raised():
    from hpcsched.core.errors import UserError

    try:
        try:
            raise RuntimeError("boom at import")
        except RuntimeError as exc:
            raise UserError("trainable: importing 'x.py' failed: RuntimeError: boom at import") from exc
    except UserError as exc:
        text = describe_failure(exc)
    assert text.startswith("trainable: importing") and text.strip().splitlines()[-1] == "RuntimeError: boom at import"
    assert describe_failure(UserError("trainable: 'x.py:json' is not callable")) == \
        "trainable: 'x.py:json' is not callable"


def test_errors_of_the_environment_are_told_from_the_trainables():
    import errno

    from hpcsched.core.failures import is_environment_error, srun_environment_failure

    def raised(make):
        try:
            make()
        except Exception as exc:  # noqa: BLE001
            return exc

    def torch_save_on_a_full_disk():  # torch.save raises a RuntimeError while handling the OSError
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598") from None

    assert is_environment_error(OSError(errno.ENOSPC, "No space left on device"))
    assert is_environment_error(raised(torch_save_on_a_full_disk))  # the context, not the cause
    assert is_environment_error(OSError(errno.ESTALE, "Stale file handle"))
    assert not is_environment_error(FileNotFoundError(errno.ENOENT, "data.csv"))
    assert not is_environment_error(RuntimeError("CUDA out of memory"))
    assert srun_environment_failure(["srun: error: Node failure on node2"])
    assert srun_environment_failure(["slurmstepd: error: *** STEP 12.3 ON node1 CANCELLED AT 2026-01-01 DUE TO NODE "
                                     "FAILURE ***"])
    assert srun_environment_failure(["srun: error: Unable to create step for job 12: Job/step already completing"])
    assert not srun_environment_failure(["srun: error: node1: task 0: Exited with exit code 1"])


def _exit(t, trial, retryable=True, step=0):
    return Exited(t, trial, "errored", step, "OSError: [Errno 28] No space left on device", retryable)


def test_an_environment_error_pauses_the_trial_for_a_relaunch_at_most_three_times_from_one_checkpoint():
    from hpcsched.core.failures import MAX_RETRIES
    from hpcsched.core.records import StopIntent, StopRequested

    start = [RunStarted(0.0, "x", 100.0, 2, 0, "d", "v", ("0", "1")), TrialCreated(1.0, "t0", 0, {}),
             Launched(1.0, "t0", ("0",), LaunchReason.START), Reported(2.0, "t0", 1, 0.5, "step-00000001.pkl")]
    records = start + [_exit(3.0, "t0")]
    state = RunState.replayed(records)
    trial = state.trials["t0"]
    assert (trial.status, trial.relaunch_atoms, trial.checkpoint_step) == ("paused", 1, 1) and "t0" in state.retrying
    for _ in range(MAX_RETRIES - 1):  # relaunched from step 1, failing again before saving anything new
        records += [Launched(4.0, "t0", ("0",), LaunchReason.RECOVER, 1), _exit(5.0, "t0")]
    assert RunState.replayed(records).trials["t0"].status == "paused"
    records += [Launched(6.0, "t0", ("0",), LaunchReason.RECOVER, 1), _exit(7.0, "t0")]
    assert RunState.replayed(records).trials["t0"].status == "errored"  # the fourth time: for good
    assert RunState.replayed(records[:-2] + [ControllerResumed(6.5, ("0", "1")),
                                             Launched(6.6, "t0", ("0",), LaunchReason.RECOVER, 1),
                                             _exit(7.0, "t0")]).trials["t0"].status == "paused"  # a new controller
    assert RunState.replayed(start + [_exit(3.0, "t0", retryable=False)]).trials["t0"].status == "errored"
    paused = RunState.replayed(start + [StopRequested(2.5, "t0", StopIntent.PAUSE), _exit(3.0, "t0")]).trials["t0"]
    assert (paused.status, paused.relaunch_atoms) == ("paused", 0)  # it was being paused anyway
