"""The failure budget's bookkeeping: launches in launch order, failed when they errored before their
first report; the longest run of consecutive failed ones (a launch still starting neither breaks nor
extends a run until it is decided); a restarted controller starts afresh."""

from __future__ import annotations

from hpcsched.failures import LaunchStreaks, Streak, describe_failure
from hpcsched.records import ControllerResumed, Exited, Launched, LaunchReason, Reported, RunStarted, TrialCreated
from hpcsched.state import RunState


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
    from hpcsched.errors import UserError

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
