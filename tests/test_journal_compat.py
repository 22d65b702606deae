"""Journals written by earlier hpcsched versions stay readable: state, status and analysis.

``tests/fixtures/journal-v1.jsonl`` is a real local run (the toy trainable, HyperSched, 2 CPU
slots, 16 s, SIGKILLed after 40 records and resumed), committed once and never regenerated:
it holds every record kind of version 1. ``journal-v2.jsonl`` likewise (R 40, 16 s): stopped
with SIGINT after 12 reports (controller_stopped), resumed to its deadline, then resumed with
``--extend 4s`` (run_extended) and finished again: every record kind of version 2. A change
that cannot read them breaks users' existing runs.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from hpcsched.core.errors import RunDirError
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import JOURNAL_VERSION, RECORD_TYPES, FinishReason, from_json, to_json
from hpcsched.core.state import RunState
from tests.runs import hpcsched

FIXTURE = Path(__file__).parent / "fixtures" / "journal-v1.jsonl"
V2_KINDS = {"controller_stopped", "run_extended"}  # record kinds journal version 2 added
FIXTURE_V2 = Path(__file__).parent / "fixtures" / "journal-v2.jsonl"


def test_every_record_of_the_v1_journal_reads_and_round_trips():
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    records = read_journal(FIXTURE)
    assert len(records) == len(lines) == 164
    assert {r.kind for r in records} == set(RECORD_TYPES) - V2_KINDS  # every kind version 1 had
    for raw, record in zip(lines, records):
        assert to_json(record) == raw and from_json(raw) == record


def test_the_v1_journal_replays_to_the_same_state():
    records = read_journal(FIXTURE)
    state = RunState(records[0].mode)
    for record in records:
        state.apply(record)
    assert (state.best_trial, state.best_step) == ("t0004", 40)
    assert state.best_score == pytest.approx(0.8999591400632138)
    assert {k: v for k, v in state.counts.items() if v} == {"paused": 4, "completed": 2}
    assert (state.pauses, state.promotions, state.resizes) == (5, 2, 0)
    assert state.entrance_closed_at is not None and state.finished.reason == "deadline"
    assert FinishReason(state.finished.reason) is FinishReason.DEADLINE and FinishReason.planned("deadline")
    assert not FinishReason.planned("interrupted (SIGTERM)") and not FinishReason.planned(None)
    kinds = Counter(r.kind for r in records)
    assert kinds["controller_resumed"] == 1 and kinds["reported"] == 114


def test_status_and_analysis_read_a_v1_run_directory(tmp_path):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    shutil.copy(FIXTURE, run / "events.jsonl")
    proc = hpcsched("status", str(run), "--json")
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert len(status["trials"]) == 6 and status["best"]["trial"] == "t0004"
    from hpcsched.analysis import load_run

    loaded = load_run(run)
    assert len(loaded.trials) == 6 and loaded.scores["score"].max() == pytest.approx(0.8999591400632138)


def test_a_journal_from_a_newer_version_is_refused_with_the_reason(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    first = json.loads(lines[0])
    first["version"] = JOURNAL_VERSION + 1
    newer = tmp_path / "events.jsonl"
    newer.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(RunDirError, match="newer hpcsched"):
        read_journal(newer)


def test_status_into_a_closed_pipe_exits_quietly_and_the_version_is_printed(tmp_path):
    import subprocess
    import sys

    from hpcsched import __version__
    from tests.runs import REPO

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    shutil.copy(FIXTURE, run / "events.jsonl")
    # `hpcsched status RUN | head -n 0`: the reader is gone before the first line is written
    proc = subprocess.Popen([sys.executable, "-m", "hpcsched", "status", str(run)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
    version = hpcsched("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"hpcsched {__version__}"


def test_every_record_of_the_v2_journal_reads_round_trips_and_replays():
    lines = [json.loads(line) for line in FIXTURE_V2.read_text().splitlines()]
    records = read_journal(FIXTURE_V2)
    assert len(records) == len(lines) == 309 and records[0].version == 2
    assert {r.kind for r in records} == set(RECORD_TYPES)
    for raw, record in zip(lines, records):
        assert to_json(record) == raw and from_json(raw) == record
    state = RunState.replayed(records)
    assert (state.best_trial, state.best_step) == ("t0004", 40)
    assert {k: v for k, v in state.counts.items() if v} == {"paused": 1, "completed": 5}
    (extended,) = state.extensions
    assert extended.by == 4.0 and extended.previous_deadline == records[0].deadline
    assert state.deadline == extended.deadline == records[0].deadline + 4.0
    assert state.finished.reason == "deadline" and state.stopped is None
    kinds = [r.kind for r in records]
    assert kinds.count("run_finished") == 2 and kinds.count("controller_stopped") == 1
    stopped_at = kinds.index("controller_stopped")
    assert kinds[stopped_at + 1] == "controller_resumed"  # a stop, then the resume: not a finished run
    assert RunState.replayed(records[: stopped_at + 1]).stopped.reason == "interrupted by SIGINT"


def test_status_and_analysis_read_a_v2_run_directory(tmp_path):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    shutil.copy(FIXTURE_V2, run / "events.jsonl")
    status = json.loads(hpcsched("status", str(run), "--json").stdout)
    records = read_journal(FIXTURE_V2)
    assert status["deadline"] == records[0].deadline + 4.0 and status["extended_by"] == 4.0
    assert status["finished"] == "deadline" and status["stopped"] is None
    from hpcsched.analysis import load_run

    info = load_run(run).info
    assert info.deadline == status["deadline"] and info.finish_reason == "deadline"
