"""Nothing a trial writes can crash the controller, forge the answer or run code in it."""

from __future__ import annotations

import json
import math
import os
import pickle
import time
from pathlib import Path

import pytest

from hpcsched.executors.launching import ProcessSettings
from hpcsched.executors.local import LocalExecutor, LocalResources
from hpcsched.core.clock import WallClock
from hpcsched.core.records import Exited, Launched
from hpcsched.rundir.paths import TrialPaths
from hpcsched.rundir.scores import (BadLine, ExitLine, ReportLine, ScoresReader, StartedLine, append_line, check_report,
                                    format_line, parse_line)
from hpcsched.trial.context import load_checkpoint, save_payload
from tests.runs import REPO, hpcsched, no_trial_processes_left, paused_at, records, wait_for, write_spec
from tests.trainables.hostile import ATTACKS, MARKER

HOSTILE = REPO / "tests" / "trainables" / "hostile.py"


# ---------------------------------------------------------------- the format, line by line


def test_every_line_kind_round_trips():
    lines = [StartedLine("t0-l1", 1.5), ReportLine("t0-l1", 2.0, 3, 0.25, "step-00000003.pt", {"loss": 1.0}),
             ExitLine("t0-l1", 3.0, "checkpointed", 3), ExitLine("t0-l1", 4.0, "errored", 3, "Traceback ...")]
    for line in lines:
        text = format_line(line)
        assert text.endswith("\n") and text.count("\n") == 1
        assert parse_line(text.encode()) == line


@pytest.mark.parametrize("raw, reason", [
    (b'{"kind":"report","launch":"a","step":1,"score":NaN}', "not a finite number"),
    (b'{"kind":"report","launch":"a","step":1,"score":Infinity}', "not a finite number"),
    (b'{"kind":"report","launch":"a","step":1,"score":1e999}', "not a finite number"),
    (b'{"kind":"report","launch":"a","step":1,"score":"0.9"}', "not a finite number"),
    (b'{"kind":"report","launch":"a","step":1,"score":true}', "not a finite number"),
    (b'{"kind":"report","launch":"a","step":"1","score":0.9}', "not an integer"),
    (b'{"kind":"report","launch":"a","step":1.5,"score":0.9}', "not an integer"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.9,"checkpoint":"../../etc/passwd"}', "checkpoint"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.9,"checkpoint":"step-00000002.pt"}', "checkpoint"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.9,"checkpoint":7}', "checkpoint"),
    (b'{"kind":"exit","launch":"a","outcome":"won"}', "outcome"),
    (b'{"kind":"boast","launch":"a"}', "unknown kind"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.9,"pad":"' + b"x" * 70_000 + b'"}', "bytes"),
])
def test_a_line_that_breaks_the_format_is_refused_with_the_reason(raw, reason):
    line = parse_line(raw)
    assert isinstance(line, BadLine) and line.launch == "a"
    assert reason in line.reason


@pytest.mark.parametrize("raw, reason", [
    (b'{"kind":"report","launch":"a","step":1,"score":0.5,"metrics":{"x":' + b"[" * 30_000 + b"]" * 30_000 + b"}}",
     "nested too deeply"),
    (b'{"kind":"report","launch":"a","step":1,"score":' + b"9" * 400 + b"}", "not a finite number"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.5,"metrics":{"x":[1,2]}}', "not a number, string or null"),
    (b'{"kind":"report","launch":"a","step":1,"score":0.5,"metrics":[1]}', "not a mapping"),
    (b'{"kind":"exit","launch":"a","outcome":"errored","error":' + b"[" * 900 + b"]" * 900 + b"}", "not a string"),
], ids=["nested-30000-deep", "score-400-digits", "nested-metric", "metrics-list", "error-list"])
def test_lines_that_crashed_the_reader_are_refused_with_the_reason(raw, reason):
    line = parse_line(raw)
    assert isinstance(line, BadLine) and line.launch == "a" and reason in line.reason, line


def test_a_non_finite_metric_is_data_the_journal_can_hold():
    """A diverged loss is recorded as a word ("nan", "inf", "-inf"), read back as a float by the analysis."""
    from hpcsched.core.records import Reported, to_json

    line = parse_line(b'{"kind":"report","t":' + b"9" * 400 + b',"launch":"a","step":1,"score":0.5,'
                      b'"metrics":{"loss":Infinity,"nan":NaN,"low":-1e999,"big":' + b"9" * 30 + b',"ok":1.5}}')
    assert isinstance(line, ReportLine) and math.isnan(line.t)
    assert line.metrics == {"loss": "inf", "nan": "nan", "low": "-inf", "big": float("9" * 30), "ok": 1.5}
    json.dumps(to_json(Reported(1.0, "t0000", line.step, line.score, line.checkpoint, line.metrics)), allow_nan=False)
    written = format_line(ReportLine("a", 1.0, 1, 0.5, "", {"loss": float("nan"), "grad": float("-inf")}))
    assert parse_line(written.encode()).metrics == {"loss": "nan", "grad": "-inf"}


def test_garbage_without_a_launch_is_skipped_not_refused():
    assert parse_line(b"not json at all") is None
    assert parse_line(b'{"kind":"report","step":1,"score":0.5}') is None
    assert parse_line(b"[1, 2]") is None


def test_a_reader_that_knows_the_token_takes_only_lines_that_carry_it(tmp_path):
    """Not even a refusal is taken from a line without the token: another process cannot end the launch."""
    path = tmp_path / "scores.jsonl"
    append_line(path, ReportLine("t0-l1", 1.0, 1, 0.1, token="s3cret"))
    append_line(path, ReportLine("t0-l1", 2.0, 2, 9.9))  # no token
    append_line(path, ReportLine("t0-l1", 2.0, 2, 9.9, token="other"))
    with open(path, "a") as f:
        f.write('{"kind":"report","launch":"t0-l1","token":"other","step":2,"score":NaN}\n')
        f.write('{"kind":"report","launch":"t0-l1","token":"other","pad":"' + "x" * 70_000 + '"}\n')
    append_line(path, ExitLine("t0-l1", 3.0, "finished", 1, token="s3cret"))
    lines = ScoresReader(path, "t0-l1", token="s3cret").read()
    assert lines == [ReportLine("t0-l1", 1.0, 1, 0.1, token="s3cret"), ExitLine("t0-l1", 3.0, "finished", 1,
                                                                                token="s3cret")]
    assert len(ScoresReader(path, "t0-l1").read()) == 6  # a reader that knows no token (older launches) takes all


def test_steps_must_follow_and_stay_within_R():
    line = ReportLine("a", 0.0, 5, 0.5)
    assert check_report(line, 4, 10) is None
    assert "does not follow" in check_report(line, 5, 10).reason
    assert "past the trial's last step" in check_report(line, 0, 4).reason


def test_a_torn_line_of_a_killed_writer_does_not_spoil_the_next(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_bytes(b'{"kind":"report","launch":"t0-l1","st')  # a writer killed mid-line
    append_line(path, ReportLine("t0-l2", 1.0, 3, 0.5))
    lines = ScoresReader(path, None).read()
    assert lines == [ReportLine("t0-l2", 1.0, 3, 0.5)]


def test_the_reader_keeps_only_its_launch_and_waits_for_a_whole_line(tmp_path):
    path = tmp_path / "scores.jsonl"
    append_line(path, ReportLine("t0-l1", 1.0, 1, 0.1))
    append_line(path, ReportLine("t0-l2", 2.0, 2, 0.2))
    with open(path, "a") as f:
        f.write('{"kind":"report","launch":"t0-l2","step":3,')
    reader = ScoresReader(path, "t0-l2")
    assert [line.step for line in reader.read()] == [2]
    with open(path, "a") as f:
        f.write('"score":0.3}\n')
    assert [line.step for line in reader.read()] == [3]
    assert reader.read() == []


# ---------------------------------------------------------------- loading checkpoints


def _run_with_checkpoint(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    paths = TrialPaths.of(run, "t0000")
    paths.checkpoints.mkdir(parents=True, mode=0o700)
    for p in (run, run / "trials", paths.root):
        p.chmod(0o700)
    (run / "events.jsonl").write_text("")
    return save_payload({"w": 1}, paths.checkpoints / "step-00000003")


def test_load_checkpoint_refuses_anything_but_a_run_checkpoint(tmp_path):
    checkpoint = _run_with_checkpoint(tmp_path)
    assert load_checkpoint(checkpoint) == {"w": 1}
    outside = tmp_path / "step-00000003.pkl"
    outside.write_bytes(pickle.dumps({"w": 2}))
    with pytest.raises(PermissionError, match="not a checkpoint of a run"):
        load_checkpoint(outside)
    with pytest.raises(PermissionError, match="not a checkpoint of a run"):
        load_checkpoint(checkpoint.parent / ".." / ".." / ".." / "events.jsonl")


@pytest.mark.parametrize("which", ["trials", "trial", "checkpoints", "file"])
def test_load_checkpoint_checks_every_directory_on_the_way(tmp_path, which):
    checkpoint = _run_with_checkpoint(tmp_path)
    target = {"trials": checkpoint.parents[2], "trial": checkpoint.parents[1], "checkpoints": checkpoint.parent,
              "file": checkpoint}[which]
    target.chmod(0o777 if target.is_dir() else 0o666)
    with pytest.raises(PermissionError, match="writable by group or others"):
        load_checkpoint(checkpoint)


def test_recovery_never_unpickles_what_a_trial_left(tmp_path):
    run = tmp_path / "run"
    paths = TrialPaths.of(run, "t0000")
    paths.launches.mkdir(parents=True)
    marker = tmp_path / MARKER
    from tests.trainables.hostile import _Planted

    (paths.launches / "t0000-l1_0_result.pkl").write_bytes(pickle.dumps(("success", _Planted(str(marker)))))
    append_line(paths.scores, ReportLine("t0000-l1", 1.0, 1, 0.5, "step-00000001.pkl"))
    append_line(paths.scores, ExitLine("t0000-l1", 2.0, "finished", 1))
    settings = ProcessSettings(run_dir=run, trainable=f"{HOSTILE}:hostile", max_steps=4, metric="m", mode="max")
    executor = LocalExecutor(settings, WallClock(), LocalResources(atoms=1, gpus_per_atom=0, cpus_per_atom=1))
    events = executor.recover("t0000", 1, 0, 0)
    assert [type(e).__name__ for e in events] == ["TrialReport", "TrialExit"]
    assert events[-1].outcome == "finished" and events[-1].step == 1
    assert not marker.exists()


# ---------------------------------------------------------------- against a live run


@pytest.mark.slow
def test_hostile_trials_end_as_errored_and_the_answer_stays_honest(tmp_path):
    attacks = [*ATTACKS, "planted_pickle"]
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:hostile", deadline="40s",
                      space={"attack": {"grid": ["none", *attacks]}, "quality": 0.01},
                      scheduler={"kind": "hypersched", "r": 2, "R": 6, "eta": 2, "resize_cooldown": 1},
                      resources={"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1},
                      controller={"max_failures": "none"})  # nearly every trial here fails on purpose
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    def no_constants(name):
        raise AssertionError(f"the journal holds {name}")

    for raw in (run / "events.jsonl").read_text().splitlines():  # finite JSON all through
        json.loads(raw, parse_constant=no_constants)
    configs = {r.trial: r.config["attack"] for r in recs if type(r).__name__ == "TrialCreated"}
    assert sorted(configs.values()) == sorted(["none", *attacks])
    errors = {configs[r.trial]: r.error for r in recs if isinstance(r, Exited) and r.outcome == "errored"}
    for attack in ATTACKS:
        assert attack in errors and "refused its scores file" in errors[attack], (attack, errors.get(attack))
    reported = [r for r in recs if type(r).__name__ == "Reported"]
    assert all(math.isfinite(r.score) and 1 <= r.step <= 6 for r in reported)
    assert all(r.checkpoint in ("", f"step-{r.step:08d}.pkl") for r in reported)
    assert not any(configs[r.trial] in ATTACKS and r.score >= 1.0 for r in reported)
    result = json.loads((run / "result.json").read_text())
    best = result["best"]
    assert best["config"]["attack"] in ("none", "planted_pickle")
    checkpoint = Path(best["checkpoint"]).resolve()
    assert checkpoint.is_file() and checkpoint.is_relative_to(run.resolve() / "trials")
    assert not (run / MARKER).exists()
    assert no_trial_processes_left(run)


def test_a_long_line_is_refused_while_it_is_still_being_written(tmp_path):
    path = tmp_path / "scores.jsonl"
    reader = ScoresReader(path, "t0-l1")
    with open(path, "wb") as f:
        f.write(b'{"kind":"report","t":1,"launch":"t0-l1","step":1,"score":0.5,"pad":"' + b"x" * 100_000)
    lines = reader.read()
    assert len(lines) == 1 and isinstance(lines[0], BadLine) and "bytes" in lines[0].reason
    with open(path, "ab") as f:
        f.write(b"x" * 10 + b'"}\n')
    append_line(path, ReportLine("t0-l1", 2.0, 2, 0.2))
    assert reader.read() == [ReportLine("t0-l1", 2.0, 2, 0.2)]


def test_the_hang_limit_follows_the_run_s_pace_unless_configured():
    from hpcsched.executors.launching import HANG_FACTOR, HANG_LONGEST_FACTOR, hang_floor_for, hang_limit

    assert hang_limit(None, True, [0.1, 0.2, 0.1], 0.2, 30.0, 3.0) == 3.0  # the floor
    assert hang_limit(None, True, [1.0, 2.0, 1.0], 2.0, 30.0, 3.0) == HANG_FACTOR * 1.0  # its own median
    assert hang_limit(None, True, [1.0, 1.0, 1.0], 8.0, 8.0, 3.0) == HANG_LONGEST_FACTOR * 8.0  # its longest
    assert hang_limit(None, True, [], 0.0, 4.0, 3.0) == HANG_FACTOR * 4.0  # none of its own yet: the run's
    assert hang_limit(None, True, [], 0.0, 0.0, 3.0) == math.inf  # nothing measured in the run yet
    assert hang_limit(None, False, [1.0], 1.0, 4.0, 3.0) == math.inf  # setup may take what it takes
    assert hang_limit(5.0, False, [1.0], 1.0, 4.0, 3.0) == hang_limit(5.0, True, [], 0.0, 0.0, 3.0) == 5.0
    assert hang_limit(math.inf, True, [1.0], 1.0, 1.0, 3.0) == math.inf
    assert (hang_floor_for(30), hang_floor_for(600), hang_floor_for(7200)) == (10.0, 60.0, 120.0)


@pytest.mark.slow
def test_a_stopped_trial_is_reclaimed_in_a_short_run_by_the_default_hang_timeout(tmp_path):
    """SIGSTOP at step 3 of 0.1 s steps: with the default (auto) hang timeout, a 30 s run reclaims its atom
    (it held it to the deadline: the automatic timeout was at least 5 min)."""
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:freezes", deadline="30s",
                      space={"quality": {"grid": [0.9, 0.5, 0.4, 0.3]}, "freeze_at": 3, "freeze_quality": 0.9,
                             "step_time": 0.1})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    configs = {r.trial: r.config["quality"] for r in recs if type(r).__name__ == "TrialCreated"}
    errored = [r for r in recs if isinstance(r, Exited) and r.outcome == "errored"]
    assert [configs[r.trial] for r in errored] == [0.9] and "hung: no output" in errored[0].error, errored
    deadline = next(r for r in recs if type(r).__name__ == "RunStarted").deadline
    # silent since its last report or its last launch's start (a trial paused while frozen is resumed
    # from its checkpoint when nothing else is left, and freezes again)
    silent_since = max(r.t for r in recs if type(r).__name__ in ("Reported", "Running") and r.trial == errored[0].trial)
    assert errored[0].t - silent_since < 15 and errored[0].t < deadline  # reclaimed after 10 s of silence ...
    # ... its atom given on, or the run done: nothing else was left to run
    assert any(type(r).__name__ in ("Launched", "RunFinished") and r.t >= errored[0].t for r in recs)
    assert no_trial_processes_left(run)


@pytest.mark.slow
def test_a_hung_trial_is_killed_errored_and_its_atoms_go_to_others(tmp_path):
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:freezes", deadline="30s",
                      space={"quality": {"grid": [0.9, 0.5, 0.4, 0.3]}, "freeze_at": 3, "freeze_quality": 0.9,
                             "step_time": 0.1},
                      controller={"poll_interval": 0.1, "stop_margin": 2, "stop_grace": 10, "hang_timeout": "3s"})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    configs = {r.trial: r.config["quality"] for r in recs if type(r).__name__ == "TrialCreated"}
    errored = [r for r in recs if isinstance(r, Exited) and r.outcome == "errored"]
    assert [configs[r.trial] for r in errored] == [0.9] and "hung: no output" in errored[0].error
    assert errored[0].step == 2  # its last checkpoint
    launches = [r for r in recs if type(r).__name__ == "Launched" and r.t >= errored[0].t]
    assert launches or not paused_at(recs, errored[0].t)  # its atom went to another trial, if one waited
    result = json.loads((run / "result.json").read_text())
    assert result["best"]["config"]["quality"] == 0.5 and result["best"]["step"] == 12
    assert no_trial_processes_left(run)


def test_a_rank_that_aborts_ends_its_trial_errored_with_that_rank_s_own_words(tmp_path):
    """Its peers are killed rather than left hanging in a collective, and the error shows the log of
    the rank that failed, not the chief's (which only says it was killed)."""
    from hpcsched.executors.base import LaunchRequest, TrialExit

    run = tmp_path / "run"
    (run / "trials").mkdir(parents=True, mode=0o700)
    run.chmod(0o700)
    settings = ProcessSettings(run_dir=run, trainable=f"{HOSTILE}:rank_aborts", max_steps=200, metric="score",
                               mode="max", poll_interval=0.05)
    executor = LocalExecutor(settings, WallClock(), LocalResources(2, 0, 1, distributed=True))
    try:
        executor.launch(LaunchRequest("t0", 0, {"abort_rank": 1, "abort_at": 3}, ("cpu0", "cpu1"), 0, "start", 1))
        events: list = []
        assert wait_for(lambda: events.extend(executor.poll(time.time())) or
                        any(isinstance(e, TrialExit) for e in events), timeout=60)
    finally:
        executor.shutdown()
    exit_event = next(e for e in events if isinstance(e, TrialExit))
    assert exit_event.outcome == "errored"
    assert "killed by SIGKILL, killed by SIGABRT" in exit_event.error
    assert "rank 1:\nterminate called: rank 1 gave up at step 3" in exit_event.error
    assert "rank 0:" not in exit_event.error


def test_recovery_stops_only_processes_that_run_a_launch_of_the_trial(tmp_path):
    """A user's process that merely names the trial's folder (tail -f of a log) is left alone."""
    import subprocess
    import sys

    from hpcsched.executors.launching import SUBMIT_MODULE, _alive_orphans

    folder = tmp_path / "run" / "trials" / "t0000" / "launches"
    folder.mkdir(parents=True)
    sleeper = "import time; time.sleep(30)"
    bystander = subprocess.Popen([sys.executable, "-c", sleeper, str(folder / "t0000-l1_0_log.out")])
    launch = subprocess.Popen([sys.executable, "-c", sleeper, SUBMIT_MODULE, str(folder)])
    try:
        for process in (bystander, launch):  # until both have exec'd (a fresh fork shows pytest's command line)
            assert wait_for(lambda pid=process.pid: str(folder) in Path(f"/proc/{pid}/cmdline").read_bytes().decode())
        found = _alive_orphans(folder / "t0000-l9.json", folder)  # no record: found by command line
        assert launch.pid in found and bystander.pid not in found
    finally:
        for p in (bystander, launch):
            p.kill()
            p.wait()


@pytest.mark.slow
@pytest.mark.parametrize("policy, score", [("stop", "nan"), ("stop", "inf"), ("error", "nan")])
def test_a_diverged_trial_is_stopped_not_errored_and_the_run_goes_on(tmp_path, policy, score):
    """A NaN or infinite score ends the trial as terminated with the reason (metric.non_finite: stop),
    its earlier checkpoints kept and its atoms going to the others; with non_finite: error, errored."""
    spec = write_spec(tmp_path, deadline="25s", metric={"name": "acc", "mode": "max", "non_finite": policy},
                      space={"quality": {"grid": [0.9, 0.6, 0.3]}, "step_time": 0.05, "diverge_quality": 0.9,
                             "diverge_at": 4, "diverged_score": score})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    diverging = next(r.trial for r in recs if type(r).__name__ == "TrialCreated" and r.config["quality"] == 0.9)
    ends = [r for r in recs if isinstance(r, Exited) and r.trial == diverging]
    status = {t["trial"]: t for t in json.loads(hpcsched("status", str(run), "--json").stdout)["trials"]}
    launches = sum(isinstance(r, Launched) and r.trial == diverging for r in recs)  # it ended in its last one
    stderr = TrialPaths.of(run, diverging).launch_log(f"{diverging}-l{launches}", stream="stderr").read_text()
    if policy == "stop":
        assert [e.outcome for e in ends][-1] == "diverged"
        assert ends[-1].error == f"score {float(score)!r} at step 4"
        assert status[diverging]["status"] == "terminated" and "at step 4" in status[diverging]["error"]
        assert "Traceback" not in stderr and "stopped as diverged" in stderr
        assert max(r.step for r in recs if type(r).__name__ == "Reported" and r.trial == diverging) == 3
    else:
        assert ends[-1].outcome == "errored" and "finite" in ends[-1].error
        assert status[diverging]["status"] == "errored"
    others = [t for trial, t in status.items() if trial != diverging]
    assert len(others) == 2 and all(t["status"] != "errored" for t in others)
    assert json.loads((run / "result.json").read_text())["best"]["config"]["quality"] in (0.6, 0.3, 0.9)
    assert no_trial_processes_left(run)


def _set(spec: Path, **sections) -> None:
    """Replace whole sections of a spec written by ``write_spec`` (which merges them)."""
    import yaml

    spec.write_text(yaml.safe_dump({**yaml.safe_load(spec.read_text()), **sections}))


def test_non_finite_metrics_neither_kill_the_trial_nor_crash_the_controller(tmp_path):
    """``ctx.report(step, score, loss=float("nan"))`` and a hand-written ``"loss": Infinity`` are data:
    the trial trains to R, the journal holds the words, the analysis reads them as floats."""
    from hpcsched.analysis import load_run

    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:odd_metrics", deadline="30s", max_trials=1,
                      space={"step_time": 0.05}, resources={"atoms": 1, "gpus_per_atom": 0, "cpus_per_atom": 1})
    _set(spec, scheduler={"kind": "random", "R": 4})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    metrics = {r.step: r.metrics for r in recs if type(r).__name__ == "Reported"}
    assert metrics == {1: {"loss": "nan", "grad": "inf", "lr": 0.1}, 2: {"loss": "inf"},
                       3: {"loss": "nan", "grad": "inf", "lr": 0.1}, 4: {"loss": "nan", "grad": "inf", "lr": 0.1}}
    assert [r.outcome for r in recs if isinstance(r, Exited)] == ["finished"]
    assert json.loads((run / "result.json").read_text())["best"]["step"] == 4
    scores = load_run(run).scores
    assert scores["loss"].dtype == float and math.isnan(scores["loss"].iloc[0]) and scores["loss"].iloc[1] == math.inf


def test_a_trial_cannot_forge_the_reports_of_another(tmp_path):
    """Lines in another launch's name, without that launch's token (none, or the forger's own), are
    skipped: the victim trains on, the answer keeps its own scores."""
    spec = write_spec(tmp_path, trainable=f"{HOSTILE}:forges", deadline="30s", max_trials=2,
                      space={"role": {"grid": ["forger", "victim"]}, "step_time": 0.1},
                      resources={"atoms": 2, "gpus_per_atom": 0, "cpus_per_atom": 1})
    _set(spec, scheduler={"kind": "random", "R": 10})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = records(run)
    roles = {r.trial: r.config["role"] for r in recs if type(r).__name__ == "TrialCreated"}
    forger = next(trial for trial, role in roles.items() if role == "forger")
    victim = next(trial for trial, role in roles.items() if role == "victim")
    assert (run / "trials" / forger / "forged").read_text() == f"{victim}-l1"  # the forgery was written
    reported = [r for r in recs if type(r).__name__ == "Reported"]
    assert max(r.score for r in reported) <= 0.2
    assert [r.step for r in reported if r.trial == victim] == list(range(1, 11))
    assert proc.stderr.count(f"in the name of launch {victim}-l1 without its token") == 2, proc.stderr
    assert {r.trial: r.outcome for r in recs if isinstance(r, Exited)} == {forger: "finished", victim: "finished"}
    assert json.loads((run / "result.json").read_text())["best"]["score"] <= 0.2


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["exits", "killed"])
def test_no_process_a_trial_started_outlives_it(tmp_path, how):
    """Children in the trial's session and in a session of their own (found by the launch's token in
    their environment) are killed once the trial exits by itself or is killed (the controller's shutdown)."""
    from hpcsched.executors.base import LaunchRequest, TrialExit

    run = tmp_path / "run"
    (run / "trials").mkdir(parents=True, mode=0o700)
    run.chmod(0o700)
    settings = ProcessSettings(run_dir=run, trainable=f"{HOSTILE}:leaves_children", max_steps=3, metric="score",
                               mode="max", poll_interval=0.05)
    executor = LocalExecutor(settings, WallClock(), LocalResources(1, 0, 1))
    children = run / "trials" / "t0" / "children-t0-l1-r0"
    try:
        executor.launch(LaunchRequest("t0", 0, {"hang": how == "killed"}, ("cpu0",), 0, "start", 1))
        events: list = []
        if how == "exits":
            assert wait_for(lambda: events.extend(executor.poll(time.time())) or
                            any(isinstance(e, TrialExit) for e in events), timeout=60)
            assert [e.outcome for e in events if isinstance(e, TrialExit)] == ["finished"]
        else:
            assert wait_for(lambda: events.extend(executor.poll(time.time())) or
                            sum(type(e).__name__ == "TrialReport" for e in events) == 3, timeout=60)
    finally:
        executor.shutdown()
    pids = [int(p) for p in children.read_text().split()]
    try:
        assert wait_for(lambda: not any(_running(pid) for pid in pids), timeout=5), \
            [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids if _running(pid)]
    finally:
        for pid in pids:  # on the old code: do not leave them behind either
            if _running(pid):
                os.kill(pid, 9)
