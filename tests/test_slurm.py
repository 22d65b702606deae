"""The SLURM backend end to end on the local test cluster (tools/slurm_test_cluster.sh)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest
import yaml

from hpcsched.core.records import (ControllerResumed, ControllerStopped, Exited, Launched, Reported, RunExtended,
                                   RunFinished, RunStarted, StopRequested, TrialCreated)
from tests.runs import REPO, no_trial_processes_left, pause_lags, records, reports, wait_for, write_spec
from tests.slurm_jobs import controller_log, job_details, job_state, sbatch, steps, wait_job

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HOSTILE = REPO / "tests" / "trainables" / "hostile.py"
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
    # (more trials than the 8 atoms: a rung pauses a trial only when a new trial takes its atom)
    spec = write_spec(tmp_path, deadline="75s", max_trials=12, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65]},
                             "step_time": 0.3},
                      scheduler={"R": 48, "allocation": "top_job"},  # (long enough that growing pays)
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
    # a stop signal repeated while a paused trial's process exits must not make it errored
    errored = [r for r in recs if isinstance(r, Exited) and r.outcome == "errored"]
    assert not errored, errored
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


def test_a_rank_that_aborts_in_a_distributed_step_errors_its_trial_with_that_ranks_log(tmp_path):
    """One srun step of two tasks; task 1 aborts at step 3: the trial's error shows what rank 1 said
    (srun names the task that failed), not rank 0's empty log, and the run ends with its best."""
    spec = write_spec(tmp_path, deadline="45s", max_trials=1, trainable=f"{HOSTILE}:rank_aborts", **GPU_TOY,
                      space={"abort_rank": 1, "abort_at": 3, "step_time": 0.3},
                      scheduler={"kind": "asha", "r": 2, "R": 12, "eta": 2, "atoms_per_trial": 2},
                      controller={"poll_interval": 0.2, "stop_margin": 5, "stop_grace": 15})
    document = yaml.safe_load(spec.read_text())
    document["scheduler"].pop("resize_cooldown", None)  # HyperSched's own key (write_spec drops it for asha)
    spec.write_text(yaml.safe_dump(document))
    run = tmp_path / "run"
    job = sbatch(spec, run, "abort", "--time=5")
    wait_job(job, timeout=300)
    log = controller_log(run, "abort", job)
    recs = records(run)
    launched = [r for r in recs if isinstance(r, Launched)]
    assert len(launched) == 1 and len(launched[0].atoms) == 2, (launched, log[-3000:])
    exits = [r for r in recs if isinstance(r, Exited)]
    assert [e.outcome for e in exits] == ["errored"], (exits, log[-3000:])
    error = exits[0].error
    assert "rank 1:\nterminate called: rank 1 gave up at step 3" in error, error
    assert "rank 0:" not in error and "srun: error:" in error, error
    assert json.loads((run / "result.json").read_text())["best"]["step"] == 2  # its last report before
    assert no_trial_processes_left(run)


def _six_trials(tmp_path: Path, deadline: str, R: int) -> Path:
    return write_spec(tmp_path, deadline=deadline, max_trials=6, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5, 0.3, 0.2, 0.1]}, "step_time": 0.4},
                      scheduler={"R": R},
                      controller={"poll_interval": 0.2, "stop_margin": 5, "stop_grace": 15})


def _submit_until_reports(spec: Path, run: Path, name: str, reports_wanted: int) -> str:
    """Submit the template; return its job id once the run journaled this many reports."""
    job = sbatch(spec, run, name, "--time=5")
    assert wait_for(lambda: (run / "events.jsonl").exists() and
                    sum(isinstance(r, Reported) for r in records(run)) >= reports_wanted, timeout=150)
    return job


def test_killed_controller_job_resumes_when_resubmitted(tmp_path):
    spec = _six_trials(tmp_path, deadline="100s", R=40)
    run = tmp_path / "run"
    first = _submit_until_reports(spec, run, "killed", 15)
    controller = json.loads((run / "controller.json").read_text())
    assert controller["slurm_job_id"] == first
    os.kill(controller["pid"], signal.SIGKILL)  # kill -9 of the controller inside the allocation: no goodbye
    wait_job(first, timeout=120)
    # the job ended with its batch step: Slurm ended every trial step, nothing keeps GPUs
    assert not steps(first)
    assert wait_for(lambda: no_trial_processes_left(run), timeout=30)
    before = records(run)
    assert not any(isinstance(r, (RunFinished, ControllerStopped)) for r in before)
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
    resumed = next(r for r in after if isinstance(r, ControllerResumed))
    assert len(resumed.atom_ids) == 8  # the new job has every atom: no orphaned step holds one
    relaunched = [r for r in after[len(before):] if isinstance(r, Launched) and r.reason == "recover"]
    assert relaunched
    for launch in relaunched:  # each continues from the checkpoint it had, not from scratch
        saved = [json.loads(line)["step"] for line in
                 (run / "trials" / launch.trial / "scores.jsonl").read_text().splitlines()
                 if '"checkpoint"' in line and json.loads(line)["t"] <= launch.t]
        assert launch.from_step == max(saved, default=0)


def _no_trial_doubled_or_lost(run: Path, recs) -> None:
    created = [r.trial for r in recs if isinstance(r, TrialCreated)]
    assert len(created) == len(set(created))
    for trial in created:
        assert not (run / "trials" / trial / "VIOLATION").exists(), f"{trial} ran twice at once"
        lines = reports(run, trial)
        assert all(line["metrics"]["steps_done"] == line["step"] for line in lines)  # from its checkpoint
    live = {}
    for r in recs:  # every launch ended with an exit: no trial left behind
        if isinstance(r, Launched):
            live[r.trial] = r
        elif isinstance(r, Exited):
            live.pop(r.trial, None)
    assert not live, live


def test_requeue_keeps_the_first_attempts_output_and_finishes_once(tmp_path):
    spec = _six_trials(tmp_path, deadline="70s", R=60)
    run = tmp_path / "run"
    job = _submit_until_reports(spec, run, "requeue", 10)
    first_log = controller_log(run, "requeue", job)
    subprocess.run(["scontrol", "requeue", job], check=True)
    # Slurm holds a requeued job (PENDING, reason BeginTime) for about two minutes; start it now
    assert wait_for(lambda: job_state(job) == "PENDING", timeout=60)
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
    # the second attempt's own words, not a job state: squeue may list no state at all for a moment around a
    # requeue, and "" would read as "ended" (CI once went on to read the log before the second attempt wrote)
    assert wait_for(lambda: "resuming" in controller_log(run, "requeue", job), timeout=180), job_details(job)
    wait_job(job, timeout=300)
    log = controller_log(run, "requeue", job)
    assert log.startswith(first_log.splitlines()[0]) and first_log.splitlines()[1] in log  # appended, not lost
    assert "resuming" in log and "without a controller" in log, log[-3000:]  # the time the requeue cost
    recs = records(run)
    assert sum(isinstance(r, RunFinished) for r in recs) == 1 and isinstance(recs[-1], RunFinished), log[-3000:]
    assert recs[-1].reason in ("deadline", "nothing left to run")
    assert any(isinstance(r, ControllerResumed) for r in recs)
    _no_trial_doubled_or_lost(run, recs)
    result = json.loads((run / "result.json").read_text())
    assert result["reason"] == recs[-1].reason and Path(result["best"]["checkpoint"]).exists()


def test_resubmitting_with_extend_continues_an_expired_run(tmp_path):
    spec = write_spec(tmp_path, deadline="25s", max_trials=3, **GPU_TOY,
                      space={"quality": {"grid": [0.9, 0.7, 0.5]}, "step_time": 0.3},
                      scheduler={"r": 5000, "R": 10000},
                      controller={"poll_interval": 0.2, "stop_margin": 3, "stop_grace": 15})
    run = tmp_path / "run"
    first = sbatch(spec, run, "expire", "--time=5")
    wait_job(first, timeout=200)
    before = records(run)
    assert isinstance(before[-1], RunFinished) and before[-1].reason == "deadline", controller_log(run, "expire", first)
    steps_before = {r.trial: r.step for r in before if isinstance(r, Exited)}
    second = sbatch(spec, run, "extended", "--time=5", export="EXTEND=20s")
    wait_job(second, timeout=200)
    log = controller_log(run, "extended", second)
    after = records(run)
    assert after[: len(before)] == before
    (extended,) = [r for r in after if isinstance(r, RunExtended)]
    assert extended.by == 20 and "extended" in log, log[-3000:]
    relaunched = {r.trial: r.from_step for r in after[len(before):] if isinstance(r, Launched)}
    assert relaunched == steps_before  # every trial went on from where the deadline stopped it
    assert isinstance(after[-1], RunFinished) and after[-1].reason == "deadline"
    assert after[-1].t <= extended.deadline + 1
    assert json.loads((run / "result.json").read_text())["deadline"] == extended.deadline
    _no_trial_doubled_or_lost(run, after)


@pytest.mark.torch
def test_gloo_all_reduce_across_both_nodes_with_rank_0_where_master_addr_points(tmp_path):
    """Through the real SlurmExecutor: an even split whose first atom is on the second node, and an
    uneven one; rank 0 runs on the first atom's node, MASTER_ADDR names it, the ranks meet there."""
    run = tmp_path / "run"
    layouts = ["node2:0,node2:1,node1:0,node1:1", "node1:0,node1:1,node1:2,node2:0"]
    out = subprocess.run(["sbatch", "--parsable", "--nodes=2", "--gpus-per-node=4", "--ntasks-per-node=4",
                          "--mem=0", "--time=5", f"--output={tmp_path}/allreduce-%j.out", f"--chdir={REPO}",
                          "--wrap", " ".join([sys.executable, "tests/slurm_allreduce_driver.py", str(run), *layouts])],
                         capture_output=True, text=True, check=True)
    job = out.stdout.strip().split(";")[0]
    wait_job(job, timeout=300)
    exits = json.loads((run / "exits.json").read_text())
    assert exits == {"t0001": {"outcome": "finished", "step": 2, "error": ""},
                     "t0002": {"outcome": "finished", "step": 2, "error": ""}}
    for number, layout in enumerate(layouts, start=1):
        atoms = layout.split(",")
        trial = f"t{number:04d}"
        ranks = sorted((json.loads(p.read_text()) for p in (run / "trials" / trial).glob("allreduce-*.json")),
                       key=lambda r: r["rank"])
        assert [r["node"] for r in ranks] == [a.split(":")[0] for a in atoms]  # rank i on atom i's node
        assert {r["master_addr"] for r in ranks} == {atoms[0].split(":")[0]}
        assert [r["sum"] for r in ranks] == [10.0] * 4 and {r["backend"] for r in ranks} == {"gloo"}


def test_the_readme_slurm_commands_as_printed():
    """The check passes, and Slurm accepts the submission line and the template's header as they are."""
    import re
    import shlex

    text = (REPO / "README.md").read_text()
    section = text.split("## On a SLURM cluster", 1)[1].split("\n## ", 1)[0]
    lines = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1).splitlines()
    check = next(line for line in lines if line.startswith("hpcsched check"))
    submit = next(line for line in lines if line.startswith("sbatch"))
    hpcsched_bin = str(Path(sys.executable).parent / "hpcsched")
    proc = subprocess.run([hpcsched_bin, *shlex.split(check)[1:]], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0 and "ready to submit" in proc.stdout, proc.stdout + proc.stderr
    words = shlex.split(submit)
    proc = subprocess.run(["sbatch", "--test-only", *words[1:]], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0 and "to start at" in proc.stderr, proc.stderr  # 2 nodes x 4 GPUs, 16 CPUs each
