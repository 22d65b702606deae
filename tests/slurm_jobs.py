"""Helpers for tests that submit the controller template to the local Slurm test cluster."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "slurm_templates" / "launch_controller.sh"
HPCSCHED = str(Path(sys.executable).parent / "hpcsched")


def sbatch(spec: Path, run_dir: Path, name: str, *extra: str, export: str = "") -> str:
    """Submit the template (``export``: more NAME=value,... for it); return the job id."""
    variables = f"ALL,SPEC={spec},RUN_DIR={run_dir},HPCSCHED={HPCSCHED}" + (f",{export}" if export else "")
    out = subprocess.run(["sbatch", "--parsable", f"--export={variables}",
                          f"--job-name={name}", f"--output={run_dir.parent}/{name}-%j.out", *extra, str(TEMPLATE)],
                         capture_output=True, text=True, check=True, cwd=REPO)
    return out.stdout.strip().split(";")[0]


UNANSWERED = "UNANSWERED"  # squeue failed for another reason than an unknown job (slurmctld busy): ask again


def job_state(job_id: str) -> str:
    """The job's state as squeue shows it; "" once it has ended (squeue no longer lists it, or has
    purged it: "Invalid job id"); ``UNANSWERED`` when squeue failed otherwise (a loaded slurmctld
    times out), so that a wait does not take a failed query for the job's end."""
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    if out.returncode != 0:
        return "" if "Invalid job id" in out.stderr else UNANSWERED
    return out.stdout.strip()


def job_details(job_id: str) -> str:
    """What Slurm says of the job (``scontrol show job``), for a failed assertion's message."""
    out = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True)
    return out.stdout + out.stderr


def wait_job(job_id: str, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not job_state(job_id):
            time.sleep(1)  # and not just unlisted for a moment (around a requeue)
            if not job_state(job_id):
                return
        time.sleep(1)
    subprocess.run(["scancel", job_id])
    raise TimeoutError(f"job {job_id} still running after {timeout}s")


def steps(job_id: str) -> dict[str, str]:
    """Running steps of a job: name (launch id) -> step id (JOB.STEP)."""
    out = subprocess.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i %j"], capture_output=True, text=True)
    pairs = (line.split() for line in out.stdout.splitlines() if line.strip())
    return {name: step for step, name in pairs if name not in ("batch", "extern")}


def controller_log(run_dir: Path, name: str, job_id: str) -> str:
    path = run_dir.parent / f"{name}-{job_id}.out"
    return path.read_text() if path.exists() else ""
