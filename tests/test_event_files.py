"""TensorBoard event files: every report of every launch of a real run, readable by TensorBoard's format."""

from __future__ import annotations

from collections import defaultdict

import pytest

from hpcsched.core.records import LaunchReason, Launched, Reported, TrialCreated
from tests.runs import hpcsched, records, write_spec

pytestmark = pytest.mark.slow


def read_scalars(directory) -> dict[str, dict[int, float]]:
    """tag -> step -> value, as TensorBoard itself reads the directory's event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in events.Tags()["scalars"]}


def test_each_trial_has_its_scores_and_metrics_as_tensorboard_scalars_over_its_launches(tmp_path):
    pytest.importorskip("tensorboard")
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
            assert r.checkpoint.endswith(".pkl")  # the toy does not use torch, and writing events did not import it
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
        # TensorBoard's HParams dashboard: each file starts with the trial's configuration
        config = next(r.config for r in recs if isinstance(r, TrialCreated) and r.trial == trial)
        assert read_hparams(directory) == ({k: float(v) for k, v in config.items()}, trial)


def read_hparams(directory) -> tuple[dict, str]:
    """The hyperparameters and group the HParams plugin reads from the directory's session-start summary."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata

    events = EventAccumulator(str(directory))
    events.Reload()
    content = events.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    info = metadata.parse_session_start_info_plugin_data(content)
    return {name: value.number_value for name, value in info.hparams.items()}, info.group_name
