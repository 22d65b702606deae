"""Analysis and report over a real run directory made by the local backend."""

from __future__ import annotations

import json

import pytest

from hpcsched.analysis import check_usage, load_run
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import Launched, Reported, TrialCreated
from tests.runs import hpcsched, write_spec

pytestmark = pytest.mark.slow


def test_frames_of_a_local_run_match_its_journal_and_report_renders(tmp_path):
    spec = write_spec(tmp_path, deadline="10s", scheduler={"R": 10000})
    run_dir = tmp_path / "run"
    assert hpcsched("run", str(spec), "--run-dir", str(run_dir), "--quiet").returncode == 0
    records = read_journal(run_dir / "events.jsonl")
    run = load_run(run_dir)
    assert run.info.name == "toy" and run.info.metric == "acc" and not run.info.in_progress
    assert len(run.trials) == sum(isinstance(r, TrialCreated) for r in records)
    assert len(run.scores) == sum(isinstance(r, Reported) for r in records)
    assert len(run.allocations) == sum(isinstance(r, Launched) for r in records)
    check_usage(run.allocations, run.info.atoms)
    assert run.usage["atoms"].max() <= 2
    result = json.loads((run_dir / "result.json").read_text())
    best = run.trials.set_index("trial").loc[result["best"]["trial"]]
    assert best["best_score"] == result["best"]["peak_score"]
    proc = hpcsched("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    for name in ("gantt.png", "scores.png", "usage.png", "allocation.png", "summary.md"):
        path = run_dir / "report" / name
        assert path.exists() and path.stat().st_size > (5000 if name.endswith(".png") else 100)
