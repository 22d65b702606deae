"""Pure functions of the SLURM backend, checked as text (no cluster needed)."""

from pathlib import Path

import pytest

from hpcsched.core.atoms import AtomPool
from hpcsched.core.errors import UserError
from hpcsched.executors.slurm import (CLEARED_VARIABLES, Allocation, NodeShare, hostfile_lines, master_port_for,
                                      parse_end_time, parse_job_details, slurm_resources, srun_command,
                                      step_environment, step_layout)
from hpcsched.trial.context import TrialLaunch

SCONTROL = """JobId=4 JobName=wrap
   StartTime=2026-12-02T12:18:22 EndTime=2026-12-02T12:20:22 Deadline=N/A
   NodeList=node[1-2]
   TRES=cpu=8,mem=16000M,node=2,billing=8
   JOB_GRES=gpu:8
     Nodes=node[1-2] CPU_IDs=0-3 Mem=8000 GRES=gpu:4(IDX:0-3)
   MinCPUsNode=4 MinMemoryNode=0 MinTmpDiskNode=0
"""


def test_parse_job_details_and_end_time():
    shares = parse_job_details(SCONTROL, {"node[1-2]": ["node1", "node2"]})
    assert shares == [NodeShare("node1", 4, 4, 8000), NodeShare("node2", 4, 4, 8000)]
    hetero = "     Nodes=gpu01 CPU_IDs=0-7,16-23 Mem=64000 GRES=gpu:a100:2(IDX:0-1)\n" \
             "     Nodes=gpu02 CPU_IDs=4 Mem=32000 GRES=\n"
    assert parse_job_details(hetero, {}) == [NodeShare("gpu01", 16, 2, 64000), NodeShare("gpu02", 1, 0, 32000)]
    end = parse_end_time(SCONTROL)
    import datetime as dt
    assert dt.datetime.fromtimestamp(end).isoformat() == "2026-12-02T12:20:22"
    assert parse_end_time("EndTime=Unknown") is None


ALLOC = Allocation("4", (NodeShare("node1", 4, 4, 8000), NodeShare("node2", 4, 4, 8000)), None)


def test_atoms_carved_from_the_allocation():
    r = slurm_resources(ALLOC, "auto", "auto", 1, "", True)
    assert r.atoms == 8 and r.gpus_per_atom == 1 and r.mem_per_atom_mb == 2000
    assert r.atoms_per_node == (("node1", 4), ("node2", 4)) and r.max_atoms_per_trial is None
    r = slurm_resources(ALLOC, 6, 1, 1, "1900M", False)
    assert r.atoms_per_node == (("node1", 4), ("node2", 2)) and r.mem_per_atom_mb == 1900
    with pytest.raises(UserError, match=r"resources.mem_per_atom: 3G x 4 atoms on node1 = 12288 MB, but the "
                                        r"allocation has 8000 MB there"):
        slurm_resources(ALLOC, 6, 1, 1, "3G", False)  # the fourth step on node1 would wait for memory
    with pytest.raises(UserError, match=r"CPUs are short: resources.cpus_per_atom: 4 with 4 CPUs on node1"):
        slurm_resources(ALLOC, 8, 1, 4, "", True)  # the README's CIFAR-10 spec in a 1-CPU-per-GPU allocation
    assert r.max_atoms_per_trial == 4  # one process per trial: never across nodes
    assert slurm_resources(ALLOC, "auto", 2, 1, "", True).atoms == 4  # atom = 2 GPUs (the paper's ImageNet)
    with pytest.raises(UserError, match="resources.atoms: 9, but the allocation holds 8 atoms"):
        slurm_resources(ALLOC, 9, 1, 1, "", True)
    with pytest.raises(UserError, match="holds no atom"):
        slurm_resources(ALLOC, "auto", 1, 8, "", True)  # 4 CPUs per node cannot host an atom of 8
    cpu_only = Allocation("5", (NodeShare("n1", 8, 0, 8000),), None)
    assert slurm_resources(cpu_only, "auto", "auto", 2, "", False).atoms == 4
    with pytest.raises(UserError, match="gpus_per_atom: 1, but allocation 5 has no GPUs"):
        slurm_resources(cpu_only, "auto", 1, 1, "", False)


def test_step_layout_and_srun_line():
    assert step_layout(("node1:0", "node1:1"), 1, True) == [("node1", 2)]
    assert step_layout(("node1:0", "node2:0", "node2:1"), 2, True) == [("node1", 2), ("node2", 4)]
    assert step_layout(("node1:0", "node1:1"), 1, False) == [("node1", 1)]
    with pytest.raises(ValueError, match="cannot span nodes"):
        step_layout(("node1:0", "node2:0"), 1, False)
    folder = Path("/runs/r/trials/t0003/launches")
    one = srun_command("t0003-l2", folder, [("node1", 2)], 1, 4, 500, ["python", "-m", "x"])
    assert one[:2] == ["srun", "--exact"]
    for part in ["--job-name=t0003-l2", "--nodes=1", "--ntasks=2", "--nodelist=node1", "--ntasks-per-node=2",
                 "--gpus-per-task=1", "--cpus-per-task=4", "--mem-per-cpu=500M", "--kill-on-bad-exit=1",
                 f"--output={folder}/t0003-l2_%t_log.out", f"--error={folder}/t0003-l2_%t_log.err"]:
        assert part in one
    assert one[-3:] == ["python", "-m", "x"] and "--overlap" not in one
    # two nodes, rank 0 on the second node of the allocation: the hostfile pins it there
    even = srun_command("t0003-l2", folder, [("node2", 2), ("node1", 2)], 1, 4, 500, ["python", "-m", "x"])
    assert "--distribution=arbitrary" in even and "--nodes=2" in even and "--ntasks=4" in even
    assert not any(p.startswith("--nodelist") or p.startswith("--ntasks-per-node") for p in even)
    assert hostfile_lines([("node2", 2), ("node1", 2)]) == ["node2", "node2", "node1", "node1"]
    uneven = srun_command("t0003-l3", folder, [("node1", 3), ("node2", 1)], 1, 1, 100, ["p"])
    assert "--distribution=arbitrary" in uneven and not any(p.startswith("--nodelist") for p in uneven)
    assert hostfile_lines([("node1", 3), ("node2", 1)]) == ["node1", "node1", "node1", "node2"]
    cpu = srun_command("t1-l1", folder, [("n1", 1)], 0, 2, 100, ["p"])
    assert not any(p.startswith("--gpus") for p in cpu)


def test_step_environment_clears_inherited_gpu_settings_and_names_the_launch():
    launch = TrialLaunch(trial_id="t0003", launch_id="t0003-l2", run_dir="/r", trainable="f.py:t", config={},
                         from_step=4, max_steps=10, metric="acc", mode="max", atom_ids=("node1:0",), threads=4)
    environ = {v: "4" for v in CLEARED_VARIABLES} | {"SLURM_JOB_ID": "77", "PATH": "/bin", "HPCSCHED_RANK": "0"}
    env = step_environment(environ, launch, world_size=4, nodes=2, master_addr="node1", master_port=23456)
    assert not any(v in env for v in CLEARED_VARIABLES)
    assert env["SLURM_JOB_ID"] == "77" and env["PATH"] == "/bin"  # the allocation stays reachable
    assert env["SUBMITIT_EXECUTOR"] == "hpcsched" and env["HPCSCHED_LAUNCH_ID"] == "t0003-l2"
    assert env["HPCSCHED_WORLD_SIZE"] == "4" and env["MASTER_ADDR"] == "node1" and env["MASTER_PORT"] == "23456"
    assert "HPCSCHED_RANK" not in env  # each task takes SLURM_PROCID
    assert 20000 <= master_port_for("t0003-l2") < 40000 and master_port_for("a") == master_port_for("a")


def test_atom_pool_prefers_own_nodes_and_packs():
    pool = AtomPool([f"n{n}:{k}" for n in (1, 2) for k in range(4)])
    pool.take(["n1:0", "n1:1", "n1:2"])
    assert pool.choose(2) == ("n2:0", "n2:1")  # the only node that fits
    assert pool.choose(1) == ("n1:3",)  # best fit: the fullest node that fits
    assert pool.choose(1, near=("n2:3",)) == ("n2:0",)  # near the trial's own atoms
    assert pool.choose(3, near=("n1:0",)) == ("n2:0", "n2:1", "n2:2")
    pool.take(["n2:0", "n2:1"])
    assert pool.choose(3) == ("n2:2", "n2:3", "n1:3")  # spans nodes, fullest-free first
    assert pool.choose(3, single_node=True) == ("n2:2", "n2:3")  # at most what one node offers
    assert pool.free_on("n2") == ("n2:2", "n2:3")
    with pytest.raises(ValueError):
        pool.choose(4)


def test_a_one_process_trial_gets_no_torch_distributed_environment():
    """LOCAL_RANK or MASTER_ADDR in a single process makes accelerate (transformers' Trainer) start a
    process group: only trials of several processes get torch.distributed's variables."""
    from hpcsched.executors.local import trial_environment

    launch = TrialLaunch(trial_id="t0001", launch_id="t0001-l1", run_dir="/r", trainable="f.py:t", config={},
                         from_step=0, max_steps=10, metric="acc", mode="max", atom_ids=("node1:0",), threads=1)
    inherited = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "MASTER_ADDR": "x", "MASTER_PORT": "1",
                 "PATH": "/bin"}
    env = step_environment(inherited, launch, world_size=1, nodes=1, master_addr="node1", master_port=23456)
    assert not {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"} & set(env)
    assert env["HPCSCHED_WORLD_SIZE"] == "1" and env["PATH"] == "/bin"
    local = trial_environment(launch, world_size=1)
    assert not {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"} & set(local)


def test_the_failed_tasks_are_read_from_what_srun_said():
    from hpcsched.executors.launching import failed_tasks

    # as srun 22.05 printed them on the local test cluster (--kill-on-bad-exit=1: it ends the others)
    aborted = ["srun: error: node1: task 1: Aborted",
               "srun: launch/slurm: _step_signal: Terminating StepId=30.0",
               "slurmstepd-node1: error: *** STEP 30.0 ON node1 CANCELLED AT 2026-12-05T04:19:47 ***",
               "srun: error: node1: task 0: Terminated", "srun: Force Terminated StepId=30.0"]
    assert failed_tasks(aborted) == [1]
    assert failed_tasks(["srun: error: node1: tasks 0-1: Exited with exit code 3"]) == [0, 1]
    assert failed_tasks(["srun: error: node2: tasks 2,4-5: Killed"]) == [2, 4, 5]  # only ended by srun
    assert failed_tasks(["srun: Job step aborted", "something else: task 3: Aborted"]) == []
