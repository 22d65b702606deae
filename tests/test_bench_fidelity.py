"""tools/bench_fidelity.py's figures of a journal, on hand-built journals (the real runs are the benchmark's)."""

from __future__ import annotations

from hpcsched.core.records import Exited, Launched, Reported, RunStarted, StopIntent, StopRequested, TrialCreated
from tests.test_sim_studies import _tool

bench = _tool("bench_fidelity")


def _journal(start: float, scale: float, paused_first: str) -> list:
    """Two trials reach rung 2 together; ``paused_first`` is paused there, the other later at step 8."""
    at = lambda seconds: start + seconds * scale  # noqa: E731  (trace seconds -> the run's clock)
    other = "b" if paused_first == "a" else "a"
    return [RunStarted(at(0), "f", at(1800), 2, 0, "d", "hypersched", ("0", "1")),
            TrialCreated(at(0), "a", 0, {}), Launched(at(0), "a", ("0",), "start"),
            TrialCreated(at(0), "b", 1, {}), Launched(at(0), "b", ("1",), "start"),
            Reported(at(65), "a", 2, 0.3), Reported(at(65), "b", 2, 0.3),
            StopRequested(at(66), paused_first, StopIntent.PAUSE, reason="rung 2"),
            Exited(at(70), paused_first, "checkpointed", 2),
            StopRequested(at(250), other, StopIntent.PAUSE, reason="rung 8"),
            Exited(at(255), other, "checkpointed", 8),
            Launched(at(300), paused_first, ("0",), "resume", 2)]


def test_first_apart_is_when_the_runs_first_decided_differently():
    real = bench.summarize(_journal(start=1.7e9, scale=0.05, paused_first="a"), scale=0.05)
    same = bench.summarize(_journal(start=0.0, scale=1.0, paused_first="a"), scale=1.0)
    other = bench.summarize(_journal(start=0.0, scale=1.0, paused_first="b"), scale=1.0)
    assert real.decisions == same.decisions and bench.agreement(real.decisions, same.decisions) == 1.0
    assert bench.first_apart(real, same) is None
    # the real run paused a at rung 2 (66 s), the other b: everything after differs, from 66 s on
    assert bench.agreement(real.decisions, other.decisions) == 0.0
    assert abs(bench.first_apart(real, other) - 66.0) < 1e-3
    # on the real run's clock (epoch seconds, 0.05 real s per trace s), in trace seconds after its start
    assert abs(real.decided_at[(0, "pause", 2)] - 66.0) < 1e-3 and abs(real.decided_at[(0, "promote", 2)] - 300) < 1e-3
