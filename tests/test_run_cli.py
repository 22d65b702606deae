"""``hpcsched run`` / ``status`` from the command line: progress, status, and bad input (exit 2)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from hpcsched.core.state import LIVE
from tests.runs import TOY, hpcsched, records, start, wait_for, write_spec

pytestmark = pytest.mark.slow


def test_status_while_running_and_after(tmp_path):
    spec = write_spec(tmp_path, deadline="25s", scheduler={"R": 10000})  # (room for a loaded machine)
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run))
    try:
        assert wait_for(lambda: (run / "events.jsonl").exists() and
                        any(r.kind == "reported" for r in records(run)), timeout=30)
        human = hpcsched("status", str(run))
        assert human.returncode == 0
        assert "controller running" in human.stdout and "atoms 2/2 in use" in human.stdout
        assert "t0000" in human.stdout and "running" in human.stdout
        data = json.loads(hpcsched("status", str(run), "--json").stdout)
        assert data["controller"]["alive"] is True and data["finished"] is None
        assert data["atoms_in_use"] == 2 and 0 < data["time_left"] <= 25
        # (a trial holding atoms may be stopping just then: in one CI run on a loaded machine both were)
        assert {t["status"] for t in data["trials"]} & {str(status) for status in LIVE}
    finally:
        out, _ = controller.communicate(timeout=60)
    assert controller.returncode == 0
    assert "start on 1 atom" in out and "| atoms" in out and "left" in out  # progress lines
    after = hpcsched("status", str(run))
    assert "finished (deadline)" in after.stdout and "result:" in after.stdout
    data = json.loads(hpcsched("status", str(run), "--json").stdout)
    assert data["finished"] == "deadline" and data["result"]["best"]["checkpoint"]
    assert 0 < data["elapsed"] <= 26 and all(t["elapsed"] >= 0 for t in data["trials"])
    assert sum(t["elapsed"] for t in data["trials"]) <= 2 * data["elapsed"] + 1  # 2 atoms
    statuses = {t["status"] for t in data["trials"]}
    for wanted in statuses:  # -t, as squeue -t: only trials in these statuses, text and JSON alike
        only = json.loads(hpcsched("status", str(run), "--json", "-t", wanted).stdout)["trials"]
        assert only and {t["status"] for t in only} == {wanted}
        assert len(only) == sum(t["status"] == wanted for t in data["trials"])
    table = hpcsched("status", str(run), "--state", ",".join(sorted(statuses)), "--format", "trial,best,elapsed")
    header = table.stdout.splitlines().index("  trial          best   elapsed")
    rows = table.stdout.splitlines()[header + 1:]
    assert len(rows) == len(data["trials"]) and all(len(row.split()) == 3 for row in rows)
    assert {row.split()[0] for row in rows} == {t["trial"] for t in data["trials"]}


def test_status_of_a_directory_that_is_not_a_run(tmp_path):
    proc = hpcsched("status", str(tmp_path))
    assert proc.returncode == 2 and "not a run directory" in proc.stderr and "Traceback" not in proc.stderr
    proc = hpcsched("status", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such run directory" in proc.stderr


def test_status_refuses_unknown_states_and_columns(tmp_path):
    spec = write_spec(tmp_path, deadline="3s")
    run = tmp_path / "run"
    assert hpcsched("run", str(spec), "--run-dir", str(run), "--quiet").returncode == 0
    _bad(tmp_path, "status", str(run), "-t", "running,sleeping", expect="--state: unknown status 'sleeping'")
    _bad(tmp_path, "status", str(run), "-o", "trial,gpus", expect="--format: unknown column 'gpus'")
    _bad(tmp_path, "status", str(run), "-o", ",", expect="--format: no columns")


def _bad(tmp_path, *args, expect: str):
    proc = hpcsched(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expect in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def test_bad_trainables_launch_nothing(tmp_path):
    run = tmp_path / "run"
    spec = write_spec(tmp_path, trainable=str(tmp_path / "nope.py") + ":train")
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), expect="no such file")
    assert not run.exists()
    spec = write_spec(tmp_path, trainable=f"{TOY}:wrong_signature")
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), expect="must take two arguments (config, ctx)")
    spec = write_spec(tmp_path, trainable=f"{TOY}:missing")
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), expect="has no function 'missing'")
    spec = write_spec(tmp_path, resources={"atoms": 512, "gpus_per_atom": 0})
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), expect="resources.atoms: 512 atoms x 1 CPU(s) need 512")
    assert not run.exists()


def test_run_dirs_are_never_overwritten(tmp_path):
    spec = write_spec(tmp_path, deadline="6s", space={"quality": 0.5, "step_time": 0.05}, max_trials=1)
    run = tmp_path / "run"
    assert hpcsched("run", str(spec), "--run-dir", str(run), "--quiet").returncode == 0
    journal = (run / "events.jsonl").read_bytes()
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), expect="already holds a run")
    other = tmp_path / "other"
    other.mkdir()
    other_spec = write_spec(other, space={"quality": 0.6, "step_time": 0.05})
    _bad(tmp_path, "run", str(other_spec), "--run-dir", str(run), "--resume", expect="belongs to another experiment")
    _bad(tmp_path, "run", str(spec), "--run-dir", str(run), "--resume", "--deadline", "5m",
         expect="keeps the deadline it was started with")
    assert (run / "events.jsonl").read_bytes() == journal

    empty = tmp_path / "empty"
    empty.mkdir()
    _bad(tmp_path, "run", str(spec), "--run-dir", str(empty), "--resume",
         expect="not a run directory (no events.jsonl)")
    (empty / "notes.txt").write_text("mine")
    _bad(tmp_path, "run", str(spec), "--run-dir", str(empty), expect="exists and is not empty")
    assert (empty / "notes.txt").read_text() == "mine"

    corrupt = tmp_path / "corrupt"
    shutil.copytree(run, corrupt)
    lines = (corrupt / "events.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = b'{"kind": "reported", "t": oops\n'
    (corrupt / "events.jsonl").write_bytes(b"".join(lines))
    before = (corrupt / "events.jsonl").read_bytes()
    _bad(tmp_path, "run", str(spec), "--run-dir", str(corrupt), "--resume", expect="line 4 is corrupted")
    assert (corrupt / "events.jsonl").read_bytes() == before
    proc = hpcsched("status", str(corrupt))
    assert proc.returncode == 2 and "line 4 is corrupted" in proc.stderr


def test_spec_errors_and_missing_deadline(tmp_path):
    spec = write_spec(tmp_path)
    raw = yaml.safe_load(spec.read_text())
    del raw["deadline"]
    spec.write_text(yaml.safe_dump(raw))
    _bad(tmp_path, "run", str(spec), "--run-dir", str(tmp_path / "r"), expect="deadline: required")
    raw["resources"]["gpus_per_atom"] = -1
    raw["controller"]["stop_grace"] = "soon"
    spec.write_text(yaml.safe_dump(raw))
    proc = _bad(tmp_path, "run", str(spec), expect="resources.gpus_per_atom: must be >= 0, got -1")
    assert "controller.stop_grace: expected a duration" in proc.stderr
    _bad(tmp_path, "run", str(spec), "--deadline", "tomorrow", expect="--deadline: expected a duration")


def test_a_second_controller_on_a_running_run_is_refused(tmp_path):
    spec = write_spec(tmp_path, deadline="20s", scheduler={"R": 10000})
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run), "--quiet")
    try:
        assert wait_for(lambda: (run / "events.jsonl").exists() and
                        any(r.kind == "launched" for r in records(run)), timeout=30)
        journal = (run / "events.jsonl").read_bytes()
        _bad(tmp_path, "run", str(spec), "--run-dir", str(run), "--resume", expect="another controller is writing")
        assert (run / "events.jsonl").read_bytes()[: len(journal)] == journal
        launches = [r for r in records(run) if r.kind == "launched"]
        assert len({r.trial for r in launches}) == len([r for r in launches if r.reason == "start"])
    finally:
        controller.communicate(timeout=60)
    assert controller.returncode == 0


def test_logs_prints_and_follows_what_a_launch_wrote(tmp_path):
    spec = write_spec(tmp_path, deadline="15s", scheduler={"R": 10000})
    run = tmp_path / "run"
    controller = start("run", str(spec), "--run-dir", str(run))
    try:
        assert wait_for(lambda: (run / "events.jsonl").exists() and
                        any(r.kind == "reported" and r.trial == "t0000" for r in records(run)), timeout=30)
        followed = hpcsched("logs", str(run), "t0000", "--follow", timeout=60)  # returns when the launch ends
        assert followed.returncode == 0, followed.stderr
        assert "==> t0000-l1 rank 0 stdout" in followed.stdout and "toy: t0000 rank 0 from step 0" in followed.stdout
        assert "==> t0000-l1 ended (" in followed.stdout
    finally:
        controller.communicate(timeout=60)
    shown = hpcsched("logs", str(run), "t0000", "--launch", "1")
    assert shown.returncode == 0 and "toy: t0000 rank 0 from step 0" in shown.stdout
    for args, words in [(("t9999",), "no trial 't9999'"),
                        (("t0000", "--launch", "99"), "--launch: t0000 has launches")]:
        bad = hpcsched("logs", str(run), *args)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr


def _edited(line: int, edit) -> list[str]:
    """The v2 fixture journal with its line ``line`` (1-based) changed by ``edit(dict) -> str``."""
    from tests.test_journal_compat import FIXTURE_V2

    lines = FIXTURE_V2.read_text().splitlines()
    lines[line - 1] = edit(json.loads(lines[line - 1]))
    return lines


HAND_EDITS: dict = {  # line 8 is t0000's first report, 2 its creation, 3 its launch
    "unknown trial": (8, lambda d: json.dumps({**d, "trial": "t9999"})),
    "time as a word": (8, lambda d: json.dumps({**d, "t": "oops"})),
    "step as a string": (8, lambda d: json.dumps({**d, "step": "3"})),
    "atoms as a number": (3, lambda d: json.dumps({**d, "atoms": 5})),
    "an atom the run lacks": (3, lambda d: json.dumps({**d, "atoms": ["gpu7"]})),
    "outcome outside the vocabulary": (None, None),
    "config nested 5000 deep": (2, lambda d: _nested_config(d, 5000)),
    "config nested 100 deep": (2, lambda d: _nested_config(d, 100)),
}


def _nested_config(record: dict, depth: int) -> str:
    return json.dumps({**record, "config": {**record["config"], "deep": "@"}}).replace('"@"', "[" * depth + "]" * depth)


@pytest.mark.parametrize("edit", sorted(HAND_EDITS))
def test_a_hand_edited_journal_is_exit_2_with_the_line_for_status_and_resume(tmp_path, edit):
    line, change = HAND_EDITS[edit]
    if change is None:  # the first exit of the journal, with an outcome that is no ExitOutcome
        from tests.test_journal_compat import FIXTURE_V2

        line = next(i for i, raw in enumerate(FIXTURE_V2.read_text().splitlines(), 1) if '"exited"' in raw)
        change = lambda d: json.dumps({**d, "outcome": "vanished"})  # noqa: E731
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "events.jsonl").write_text("\n".join(_edited(line, change)) + "\n")
    expect = f"line {line} is corrupted"
    _bad(tmp_path, "status", str(run), expect=expect)
    _bad(tmp_path, "status", str(run), "--json", expect=expect)
    _bad(tmp_path, "run", str(write_spec(tmp_path)), "--run-dir", str(run), "--resume", expect=expect)


@pytest.mark.parametrize("trainable", ["boom.py:train", "toy.py:json"])
def test_a_trainable_that_cannot_work_stops_the_run_with_exit_1(tmp_path, trainable):
    """Every launch errors before its first report: after controller.max_failures of them in a row the run
    stops (exit 1) naming the trainable and the first error's last lines; result.json says why; each
    errored trial's progress line shows what it raised."""
    from tests.runs import REPO

    spec = write_spec(tmp_path, trainable=str(REPO / "tests" / "trainables" / trainable), deadline="60s",
                      space={"quality": {"uniform": [0.0, 1.0]}}, controller={"max_failures": 3})
    run = tmp_path / "run"
    proc = hpcsched("run", str(spec), "--run-dir", str(run))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    cause = "RuntimeError: boom at import" if trainable.startswith("boom") else "is not callable (it is a module)"
    import re

    stopped = re.search(r"stopped the run: (\d+) launches in a row errored before their first report "
                        r"\(controller.max_failures: 3\)", proc.stderr)
    assert stopped and 3 <= int(stopped.group(1)) <= 4, proc.stderr  # two atoms: the last two may end in one poll
    assert f"the trainable {REPO / 'tests' / 'trainables' / trainable} cannot run" in proc.stderr
    assert cause in proc.stderr.splitlines()[-2] and "Traceback" not in proc.stderr.splitlines()[0]
    errored = [line for line in proc.stdout.splitlines() if " errored at step 0" in line]
    assert len(errored) >= 3 and all(cause[:40] in line for line in errored), proc.stdout
    assert "run finished (failure budget)" in proc.stdout
    launched = [r for r in records(run) if r.kind == "launched"]
    assert len(launched) <= 3 + 2  # the three, and at most the two atoms' next launches, killed in their setup
    result = json.loads((run / "result.json").read_text())
    assert result["reason"] == "failure budget" and result["gave_up"]["launches"] == int(stopped.group(1))
    assert cause in result["gave_up"]["first_error"] and result["gave_up"]["first_trial"] == "t0000"
    status = hpcsched("status", str(run))
    assert status.returncode == 0 and "finished (failure budget)" in status.stdout
