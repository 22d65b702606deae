"""``hpcsched check``: what a batch script would request, compared with the spec before sbatch."""

from __future__ import annotations

import pytest

from hpcsched.core.errors import UserError
from hpcsched.cli.preflight import parse_options, sbatch_request, script_options, time_limit_seconds
from tests.runs import REPO, hpcsched, write_spec

TEMPLATE = REPO / "slurm_templates" / "launch_controller.sh"
CIFAR = REPO / "experiments" / "cifar10" / "cifar10-1800s.yaml"


def test_script_options_read_the_sbatch_header_only():
    text = ("#!/bin/bash\n# a comment\n#SBATCH --nodes=2   # two nodes\n#SBATCH -t 10 --mem 4G\n"
            "##SBATCH --partition=gpu\n\n#SBATCH --gres=gpu:a100:2\necho hi\n#SBATCH --nodes=9\n")
    assert script_options(text) == ["--nodes=2", "-t", "10", "--mem", "4G", "--gres=gpu:a100:2"]
    options = parse_options(script_options(text))
    assert options == {"nodes": "2", "time": "10", "mem": "4G", "gres": "gpu:a100:2"}
    assert "partition" not in options  # '##SBATCH' is a comment, as for sbatch
    template = parse_options(script_options(TEMPLATE.read_text()))
    assert template["nodes"] == "2" and template["gpus-per-node"] == "4" and template["open-mode"] == "append"
    assert "requeue" in template and template["signal"] == "B:USR1@120"


def test_later_options_win_and_short_forms_are_read():
    options = parse_options(["--nodes=2", "-N1", "-c", "8", "--time", "1:00:00", "--requeue", "-t30"])
    assert options == {"nodes": "1", "cpus-per-task": "8", "time": "30", "requeue": ""}
    with pytest.raises(UserError, match="'stray' is not an option"):
        parse_options(["--nodes=2", "stray"])
    with pytest.raises(UserError, match="--time needs a value"):
        parse_options(["--time"])


@pytest.mark.parametrize("text, seconds", [("5", 300), ("1:30", 90), ("01:00:00", 3600), ("1-0", 86400),
                                           ("2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60), ("0-0:0:9", 9),
                                           ("UNLIMITED", None)])
def test_slurm_time_limits(text, seconds):
    assert time_limit_seconds(text) == seconds


def test_a_bad_time_limit_names_the_option():
    with pytest.raises(UserError, match="--time: '1h' is not a Slurm time limit"):
        time_limit_seconds("1h")


def test_what_a_request_allocates_per_node():
    r = sbatch_request(parse_options(["-N", "2", "--gpus-per-node=a100:4", "--ntasks-per-node=4", "-c", "8",
                                      "--mem=64G", "--time=2:00:00"]))
    assert (r.nodes, r.gpus_per_node, r.cpus_per_node, r.mem_per_node_mb, r.time_limit) == (2, 4, 32, 65536, 7200)
    r = sbatch_request(parse_options(["--gres=gpu:2", "--cpus-per-gpu=6", "--mem-per-gpu=10G"]))
    assert (r.nodes, r.gpus_per_node, r.cpus_per_node, r.mem_per_node_mb, r.time_limit) == (1, 2, 12, 20480, None)
    r = sbatch_request(parse_options(["--nodes=2", "--gpus=8", "--ntasks=8", "--mem-per-cpu=2000", "--mem=0"]))
    assert (r.gpus_per_node, r.cpus_per_node, r.mem_per_node_mb) == (4, 4, None)  # --mem=0 (last): all of it
    r = sbatch_request(parse_options(["--gpus-per-node=4", "--exclusive"]))
    assert r.cpus_per_node is None  # all CPUs of a node: not known before the job runs
    r = sbatch_request(parse_options(["--gpus-per-node=4", "--gres=gpu:2"]))
    assert r.gpus_per_node == 2  # the last GPU option given wins
    with pytest.raises(UserError, match="--mem: 'lots' is not a memory size"):
        sbatch_request(parse_options(["--mem=lots"]))
    with pytest.raises(UserError, match="--nodes: 'two' is not a count"):
        sbatch_request(parse_options(["--nodes=two"]))


def _check(*args: str):
    return hpcsched("check", *args, timeout=60)


def test_the_readme_cifar10_submission_passes_the_check():
    proc = _check(str(CIFAR), "--variant", "hypersched", "--sbatch-script", str(TEMPLATE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "resources: 8 atoms of 1 GPU(s) and 4 CPU(s) (4, 4 per node): ok" in proc.stdout
    assert "ready to submit" in proc.stdout


def test_the_cifar10_cpu_mismatch_is_caught_before_submission():
    """The spec's cpus_per_atom: 4 against one CPU per GPU (the template as it used to be)."""
    proc = _check(str(CIFAR), "--variant", "hypersched", "--sbatch-script", str(TEMPLATE), "--cpus-per-task=1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "resources.atoms: 8, but the allocation holds 2 atoms" in proc.stderr
    assert "CPUs are short: resources.cpus_per_atom: 4" in proc.stderr and "--cpus-per-task=4" in proc.stderr


def test_every_problem_is_named_at_once(tmp_path):
    spec = write_spec(tmp_path, deadline="2h", trainable="missing.py:train",
                      resources={"atoms": 8, "gpus_per_atom": 1, "cpus_per_atom": 1, "mem_per_atom": "8G"})
    proc = _check(str(spec), "--sbatch-script", str(TEMPLATE), "--mem=16G", "--nodes=1")
    assert proc.returncode == 2
    err = proc.stderr
    assert "3 problems:" in err and "trainable: no such file" in err
    assert "resources.atoms: 8, but the allocation holds 4 atoms" in err
    assert "deadline: 2h00m" in err and "--time=01:00:00" in err
    proc = _check(str(spec), "--sbatch-script", str(TEMPLATE), "--mem=16G", "--nodes=2", "--time=3:00:00")
    assert proc.returncode == 2 and "resources.mem_per_atom: 8G x 4 atoms on node1 = 32768 MB" in proc.stderr


def test_without_a_script_the_local_backend_is_checked(tmp_path):
    spec = write_spec(tmp_path)
    proc = _check(str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "resources on the local backend: ok" in proc.stdout and "ready to run" in proc.stdout
    spec = write_spec(tmp_path, resources={"atoms": 4096, "gpus_per_atom": 0, "cpus_per_atom": 1})
    proc = _check(str(spec))
    assert proc.returncode == 2 and "resources.atoms: 4096" in proc.stderr


def test_check_refuses_what_run_would_refuse(tmp_path):
    proc = _check(str(CIFAR), "--sbatch-script", str(TEMPLATE))
    assert proc.returncode == 2 and "choose one with --variant" in proc.stderr
    proc = _check(str(CIFAR), "--variant", "nope", "--sbatch-script", str(TEMPLATE))
    assert proc.returncode == 2 and "--variant: no variant named 'nope'" in proc.stderr
    proc = _check(str(CIFAR), "--variant", "asha", "--sbatch-script", str(tmp_path / "none.sh"))
    assert proc.returncode == 2 and "--sbatch-script: cannot read" in proc.stderr
    proc = hpcsched("status", str(tmp_path), "--nodes=2")
    assert proc.returncode == 2 and "unrecognized arguments: --nodes=2" in proc.stderr


def test_a_script_that_loses_output_or_checkpoints_is_warned_about(tmp_path):
    spec = write_spec(tmp_path, resources={"atoms": 2, "gpus_per_atom": 1, "cpus_per_atom": 1})
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --gres=gpu:2 --ntasks=2 --time=5 --requeue\nhpcsched run x\n")
    proc = _check(str(spec), "--sbatch-script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert "warning: --requeue without --open-mode=append" in proc.stdout
    assert "warning: no --signal=B:USR1@120" in proc.stdout
    proc = _check(str(spec), "--sbatch-script", str(TEMPLATE), "--nodes=1", "--gpus-per-node=2",
                  "--ntasks-per-node=2")
    assert proc.returncode == 0 and "warning" not in proc.stdout, proc.stdout


BOOM = REPO / "tests" / "trainables" / "boom.py"
TOY_FILE = REPO / "tests" / "trainables" / "toy.py"


@pytest.mark.parametrize("trainable, cause", [
    (f"{BOOM}:train", f"RuntimeError: boom at import\n    at {BOOM}, line 6: raise RuntimeError(\"boom at import\")"),
    (f"{TOY_FILE}:json", "is not callable (it is a module)"),
    (f"{TOY_FILE}:wrong_signature", "must take two arguments (config, ctx), its signature is wrong_signature(config)"),
    ("tests.trainables.boom:train", "cannot import module 'tests.trainables.boom': RuntimeError: boom at import"),
], ids=["raises-on-import", "a-module", "wrong-signature", "module-reference"])
def test_check_imports_the_trainable_as_a_trial_would(tmp_path, trainable, cause):
    """The source alone looks fine in the first two: check imports it in a child process, with a trial's
    environment, and names the exception and the trainable's own line; in under 10 s."""
    import time

    spec = write_spec(tmp_path, trainable=trainable)
    started = time.monotonic()
    proc = _check(str(spec))
    assert time.monotonic() - started < 10
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert cause in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "ready to run" not in proc.stdout


def test_gpus_and_nodes_no_atom_uses_are_warned_about_with_a_request_that_fits(tmp_path):
    spec = write_spec(tmp_path, resources={"atoms": 2, "gpus_per_atom": 1, "cpus_per_atom": 1})
    proc = _check(str(spec), "--sbatch-script", str(TEMPLATE))  # 2 nodes x 4 GPUs for 2 atoms of 1 GPU
    assert proc.returncode == 0, proc.stderr
    assert ("warning: 6 of 8 GPUs and 1 of 2 node(s) would sit idle: the spec's 2 atom(s) of 1 GPU(s) use "
            "2 GPU(s) on 1 node(s); request --nodes=1 --gpus-per-node=2 --ntasks-per-node=2, or raise "
            "resources.atoms to 8") in proc.stdout
    proc = _check(str(spec), "--sbatch-script", str(TEMPLATE), "--nodes=1")  # 1 node x 4 GPUs: GPUs only
    assert "warning: 2 of 4 GPUs would sit idle" in proc.stdout
    proc = _check(str(CIFAR), "--variant", "hypersched", "--sbatch-script", str(TEMPLATE))  # 8 atoms: all used
    assert "would sit idle" not in proc.stdout


def test_the_template_gives_each_job_its_own_run_directory_and_a_requeue_resumes_it(tmp_path):
    import os
    import subprocess

    stub = tmp_path / "hpcsched-stub"  # records the command lines the template would run
    stub.write_text('#!/bin/bash\necho "$@" >> "$CALLS"\n')
    stub.chmod(0o755)

    def job(job_id: str, **extra: str) -> list[str]:
        calls = tmp_path / f"calls-{job_id}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env.update(SPEC="experiments/cifar10/cifar10-1800s.yaml", VARIANT="hypersched", HPCSCHED=str(stub),
                   CALLS=str(calls), SLURM_JOB_ID=job_id, SLURM_JOB_NAME="hpcsched", **extra)
        proc = subprocess.run(["bash", str(TEMPLATE)], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"run directory: {env.get('RUN_DIR', f'runs/cifar10-1800s-{job_id}')}")
        return calls.read_text().splitlines()

    check, run = job("4242")
    assert check.startswith("check experiments/cifar10/cifar10-1800s.yaml --variant hypersched")
    assert run == "run experiments/cifar10/cifar10-1800s.yaml --backend slurm --run-dir runs/cifar10-1800s-4242 " \
                  "--variant hypersched"
    assert job("4243")[1].split("--run-dir ")[1].startswith("runs/cifar10-1800s-4243")  # another job: its own
    (tmp_path / "runs" / "cifar10-1800s-4242").mkdir(parents=True)
    (tmp_path / "runs" / "cifar10-1800s-4242" / "events.jsonl").write_text("")
    (tmp_path / "calls-4242").unlink()
    assert job("4242", SLURM_RESTART_COUNT="1")[1].endswith("--resume")  # requeued: the same id resumes
    continued = job("5000", RUN_DIR="runs/cifar10-1800s-4242", EXTEND="30m")[1]
    assert "--run-dir runs/cifar10-1800s-4242" in continued and continued.endswith("--resume --extend 30m")
