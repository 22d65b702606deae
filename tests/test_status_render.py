"""``hpcsched status``'s human form: when exploration closed, and which model the run returns."""

from __future__ import annotations

import io

from hpcsched.cli.status import render_status


def _status(closed_at: float | None, completed: bool) -> dict:
    return {
        "run_dir": "/runs/q", "name": "q", "variant": "hypersched", "mode": "max",
        "started_at": 1000.0, "elapsed": 114.0, "deadline": 1120.0, "time_left": -1.0, "extended_by": 0.0,
        "finished": "deadline", "stopped": None, "controller": {"alive": False},
        "atoms_total": 2, "atoms_in_use": 0, "counts": {"paused": 1, "completed": 1},
        "exploration_closed_at": closed_at,
        "best": {"trial": "t0008", "score": 0.9777, "step": 25},
        "result": {"metric": "accuracy",
                   "best": {"trial": "t0008", "step": 30 if completed else 12, "score": 0.97456,
                            "completed": completed, "checkpoint": "/runs/q/trials/t0008/checkpoints/c.pt"}},
        "trials": [],
    }


def _render(status: dict) -> str:
    out = io.StringIO()
    render_status(status, out)
    return out.getvalue()


def test_status_says_when_exploration_closed_and_what_the_answer_is():
    text = _render(_status(closed_at=1092.0, completed=True))
    assert "exploration closed after 1m32s" in text
    assert "best so far: 0.9777 (trial t0008, step 25)" in text
    # the returned model is the most trained checkpoint, not the best report: say which step and score
    assert ("result: trial t0008 at step 30, trained to R, accuracy 0.97456: /runs/q/trials/t0008/checkpoints/c.pt"
            in text)


def test_status_of_an_open_run_and_an_answer_short_of_R():
    text = _render(_status(closed_at=None, completed=False))
    assert "exploration open" in text and "closed" not in text
    assert "result: trial t0008 at step 12, not trained to R, accuracy 0.97456" in text


def test_status_json_counts_trials_from_the_journal_not_from_a_stale_result(tmp_path):
    import json

    from hpcsched.core.records import Exited, Launched, RunStarted, TrialCreated
    from hpcsched.rundir.paths import RunDir
    from hpcsched.cli.status import collect_status
    from tests.test_analysis import write_records

    write_records(tmp_path / "events.jsonl", [
        RunStarted(0.0, "r", 100.0, 2, 0, "d", "v", ("0", "1")),
        TrialCreated(0.0, "t0", 0, {}), Launched(0.0, "t0", ("0",), "start"),
        TrialCreated(0.0, "t1", 1, {}), Launched(0.0, "t1", ("1",), "start"),
        Exited(5.0, "t0", "finished", 3)])
    # written when both still ran (a new best), before t0 finished
    (tmp_path / "result.json").write_text(json.dumps({"trials_started": 2, "trials": {"running": 2}}))
    status = collect_status(RunDir(tmp_path), now=6.0)
    assert status["counts"] == {"launching": 1, "completed": 1}
    assert status["result"]["trials"] == status["counts"] and status["result"]["trials_started"] == 2
