"""The SLURM backend end to end on the local test cluster (tools/slurm_test_cluster.sh)."""

from __future__ import annotations

import json
import subprocess
from itertools import combinations
from pathlib import Path

import pytest

from hpcsched.records import (ControllerResumed, Exited, Launched, Reported, RunStarted, StopRequested)
from tests.runs import pause_lags, records, wait_for, write_spec
from tests.slurm_jobs import controller_log, sbatch, steps, wait_job

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

GPU_TOY = {"resources": {"atoms": "auto", "gpus_per_atom": 1, "cpus_per_atom": 1, "distributed": True}}


def _intervals(recs) -> list[tuple[str, str, float, float, tuple[str, ...]]]:
    """(trial, launch id, start, end, atoms) of every launch."""
    out, open_ = [], {}
    counts: dict[str, int] = {}
    last_t = max(r.t for r in recs)
    for r in recs:
        if isinstance(r, Launched):
            counts[r.trial] = counts.get(r.trial, 0) + 1
            open_[r.trial] = (f"{r.trial}-l{counts[r.trial]}", r.t, r.atoms)
        elif isinstance(r, Exited) and r.trial in open_:
            launch, start, atoms = open_.pop(r.trial)
            out.append((r.trial, launch, start, r.t, atoms))
    out += [(t, launch, start, last_t, atoms) for t, (launch, start, atoms) in open_.items()]
    return out


def _ranks(run: Path, trial: str, launch: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run / "trials" / trial / "ranks").glob(f"{launch}-r*.json"))]


def test_sbatch_template_runs_a_search_with_pauses_promotions_and_resizes(tmp_path):
    spec = write_spec(tmp_path, deadline="75s", max_trials=6, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]}, "step_time": 0.3},
                      scheduler={"R": 24, "allocation": "top_job"},
                      controller={"poll_interval": 0.2, "stop_margin": 5, "stop_grace": 15})
    run = tmp_path / "run"
    job = sbatch(spec, run, "e2e", "--time=5")
    wait_job(job, timeout=400)
    log = controller_log(run, "e2e", job)
    result = json.loads((run / "result.json").read_text())
    assert result["reason"] in ("deadline", "nothing left to run"), log[-3000:]
    assert Path(result["best"]["checkpoint"]).exists()
    recs = records(run)
    started = next(r for r in recs if isinstance(r, RunStarted))
    assert started.atoms == 8 and {a.split(":")[0] for a in started.atom_ids} == {"node1", "node2"}
    assert recs[-1].t <= started.deadline
    assert any(isinstance(r, StopRequested) and r.intent == "pause" for r in recs), log[-3000:]
    assert any(isinstance(r, Launched) and r.reason == "resume" for r in recs), log[-3000:]
    assert any(isinstance(r, Launched) and r.reason == "resize" for r in recs), log[-3000:]
    # rung-exact pauses through srun too: a pause decided on a rung report leaves the trial there
    at_rungs = [lag for lag in pause_lags(recs) if lag[1].startswith("rung")]
    assert at_rungs and all(exited == decided and after == 0 for _, _, decided, exited, after in at_rungs), at_rungs
    launches = _intervals(recs)
    # every rank of a launch reported in; a trial spanning two nodes saw world size = its GPUs
    spanning = [entry for entry in launches if len({a.split(":")[0] for a in entry[4]}) == 2]
    assert spanning, [entry[4] for entry in launches]
    reported = {(r.trial, r.t) for r in recs if isinstance(r, Reported)}
    for trial, launch, start, end, atoms in launches:
        if not any(t == trial and start <= when <= end for t, when in reported):
            continue  # stopped while still starting: killed before every rank was up
        ranks = _ranks(run, trial, launch)
        assert len(ranks) == len(atoms) and all(r["world"] == len(atoms) for r in ranks), (launch, ranks)
    for trial, launch, start, end, atoms in spanning:
        if not any(t == trial and start <= when <= end for t, when in reported):
            continue  # stopped while still starting, as above
        ranks = _ranks(run, trial, launch)
        assert len({r["node"] for r in ranks}) == 2 and {r["world"] for r in ranks} == {len(atoms)}
        # rank 0 runs where MASTER_ADDR points: the node of the launch's first atom
        assert next(r["node"] for r in ranks if r["rank"] == 0) == atoms[0].split(":")[0], (launch, atoms, ranks)
    # processes that ran at the same time never shared a GPU (GPU indices are per node)
    processes = [(trial, r) for trial, launch, _, end, _ in launches for r in _ranks(run, trial, launch)
                 if r.setdefault("end", end)]
    assert len(processes) > 10
    for (ta, a), (tb, b) in combinations(processes, 2):
        if ta != tb and a["start"] < b["end"] and b["start"] < a["end"] and a["node"] == b["node"]:
            assert not set(a["gpus"].split(",")) & set(b["gpus"].split(",")), (a, b)
    for trial_dir in (run / "trials").iterdir():
        assert not (trial_dir / "VIOLATION").exists()
        for line in (trial_dir / "scores.jsonl").read_text().splitlines():
            data = json.loads(line)
            if data["kind"] == "report":
                assert data["metrics"]["steps_done"] == data["step"]


def test_scancel_of_one_step_errors_that_trial_and_the_run_goes_on(tmp_path):
    spec = write_spec(tmp_path, deadline="50s", max_trials=4, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3]}, "step_time": 0.5},
                      scheduler={"r": 50, "R": 60, "allocation": "none"},
                      controller={"poll_interval": 0.2, "stop_margin": 5, "stop_grace": 15})
    run = tmp_path / "run"
    job = sbatch(spec, run, "cancel", "--time=5")
    try:
        assert wait_for(lambda: "t0001-l1" in steps(job) and (run / "trials" / "t0001" / "scores.jsonl").exists(),
                        timeout=120)
        subprocess.run(["scancel", steps(job)["t0001-l1"]], check=True)
    finally:
        wait_job(job, timeout=300)
    recs = records(run)
    exits = [r for r in recs if isinstance(r, Exited) and r.trial == "t0001"]
    assert exits[0].outcome == "errored", exits
    others = [r for r in recs if isinstance(r, Reported) and r.trial != "t0001" and r.t > exits[0].t]
    assert others, "no other trial made progress after the cancelled step"
    assert json.loads((run / "result.json").read_text())["best"] is not None


def test_killed_controller_job_resumes_when_resubmitted(tmp_path):
    spec = write_spec(tmp_path, deadline="100s", max_trials=6, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]}, "step_time": 0.4},
                      scheduler={"R": 40},
                      controller={"poll_interval": 0.2, "stop_margin": 5, "stop_grace": 15})
    run = tmp_path / "run"
    first = sbatch(spec, run, "killed", "--time=5")
    assert wait_for(lambda: (run / "events.jsonl").exists() and
                    sum(isinstance(r, Reported) for r in records(run)) >= 15, timeout=150)
    subprocess.run(["scancel", "--signal=KILL", "--full", first], check=True)  # as a node failure: no goodbye
    wait_job(first, timeout=120)
    before = records(run)
    deadline = next(r for r in before if isinstance(r, RunStarted)).deadline
    second = sbatch(spec, run, "resumed", "--time=5")
    wait_job(second, timeout=300)
    log = controller_log(run, "resumed", second)
    after = records(run)
    assert after[: len(before)] == before and any(isinstance(r, ControllerResumed) for r in after), log[-3000:]
    assert "resuming" in log
    assert next(r for r in after if isinstance(r, RunStarted)).deadline == deadline
    result = json.loads((run / "result.json").read_text())
    assert Path(result["best"]["checkpoint"]).exists() and result["deadline"] == deadline
    relaunched = [r for r in after[len(before):] if isinstance(r, Launched) and r.reason == "recover"]
    assert relaunched
    for launch in relaunched:  # each continues from the checkpoint it had, not from scratch
        saved = [json.loads(line)["step"] for line in
                 (run / "trials" / launch.trial / "scores.jsonl").read_text().splitlines()
                 if '"checkpoint"' in line and json.loads(line)["t"] <= launch.t]
        assert launch.from_step == max(saved, default=0)
