"""A journal written by hpcsched (journal version 1) stays readable: state, status and analysis.

``tests/fixtures/journal-v1.jsonl`` is a real local run (the toy trainable, HyperSched, 2 CPU
slots, 16 s, SIGKILLed after 40 records and resumed), committed once and never regenerated:
it holds every record kind. A change that cannot read it breaks users' existing runs.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from hpcsched.errors import RunDirError
from hpcsched.journal import read_journal
from hpcsched.records import JOURNAL_VERSION, RECORD_TYPES, FinishReason, from_json, to_json
from hpcsched.state import RunState
from tests.runs import hpcsched

FIXTURE = Path(__file__).parent / "fixtures" / "journal-v1.jsonl"
V2_KINDS = {"controller_stopped", "run_extended"}  # record kinds journal version 2 added


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
