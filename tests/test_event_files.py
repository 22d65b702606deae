"""TensorBoard event files: every report of every launch of a real run, readable by TensorBoard's format."""

from __future__ import annotations

import struct
from collections import defaultdict

import pytest

from hpcsched.records import LaunchReason, Launched, Reported
from tests.runs import hpcsched, records, write_spec

pytestmark = pytest.mark.slow


def read_scalars(directory) -> dict[str, dict[int, float]]:
    """tag -> step -> value from every event file in ``directory`` (TFRecord framing: length, its CRC,
    the serialized Event, its CRC)."""
    from tensorboardX.proto import event_pb2

    values: dict[str, dict[int, float]] = defaultdict(dict)
    for path in sorted(directory.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                values[value.tag][event.step] = value.simple_value
    return values


def test_each_trial_has_its_scores_and_metrics_as_tensorboard_scalars_over_its_launches(tmp_path):
    pytest.importorskip("tensorboardX")
    spec = write_spec(tmp_path, deadline="25s", max_trials=4,
                      space={"quality": {"grid": [0.9, 0.5, 0.3, 0.1]}, "step_time": 0.1})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    assert any(isinstance(r, Launched) and r.reason != LaunchReason.START for r in recs), "no relaunch to span"
    by_trial: dict[str, list[Reported]] = defaultdict(list)
    for r in recs:
        if isinstance(r, Reported):
            by_trial[r.trial].append(r)
    for trial, reports in by_trial.items():
        reporting_launches, launch = set(), 0
        for r in recs:
            if isinstance(r, Launched) and r.trial == trial:
                launch += 1
            elif isinstance(r, Reported) and r.trial == trial:
                reporting_launches.add(launch)
        directory = run / "trials" / trial / "tensorboard"
        assert len(list(directory.glob("events.out.tfevents.*"))) == len(reporting_launches)  # one per launch
        scalars = read_scalars(directory)
        assert scalars["acc"] == pytest.approx({r.step: r.score for r in reports})
        assert scalars["steps_done"] == pytest.approx({r.step: r.metrics["steps_done"] for r in reports})
