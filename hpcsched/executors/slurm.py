"""SLURM backend: the controller runs inside an allocation; each trial launch is an ``srun`` step.

Atoms are ``gpus_per_atom`` GPUs on one node (ids ``node:k``), or ``cpus_per_atom`` CPUs when the
allocation has no GPUs. A launch pickles ``run_trial`` with submitit (see launching.py) and runs
``python -m submitit.core._submit`` as a step: ``--exact`` so steps run side by side, explicit
memory, GPU variables inherited from the batch step cleared (else every step grabs every GPU),
one task per GPU when the trial is distributed (several nodes possible), its identity the
launch id (never SLURM_JOB_ID, which is the controller's allocation). Command lines and the
allocation's description are built and parsed by pure functions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from hpcsched.core.clock import Clock
from hpcsched.core.errors import UserError
from hpcsched.executors.launching import ProcessExecutor, ProcessSettings, inherited_environment
from hpcsched.rundir.scores import TOKEN_VARIABLE
from hpcsched.trial.context import TrialLaunch

# Inherited from the batch step they change what every step gets (SLURM_GPUS_PER_NODE: each step
# takes all GPUs and steps serialise; SLURM_GPUS: steps fail). Verified on Slurm 22.05.
CLEARED_VARIABLES = (
    "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK", "SLURM_GPUS_PER_SOCKET", "SLURM_TRES_PER_TASK",
    "SLURM_CPUS_PER_GPU", "SLURM_MEM_PER_GPU", "SLURM_MEM_PER_CPU", "SLURM_MEM_PER_NODE", "SLURM_CPUS_PER_TASK",
    "SLURM_NTASKS_PER_NODE", "SLURM_NTASKS_PER_GPU", "SLURM_DISTRIBUTION", "SLURM_CPU_BIND", "SLURM_GPU_BIND",
    "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_HOSTFILE",
)


@dataclass(frozen=True)
class NodeShare:
    node: str
    cpus: int
    gpus: int
    mem_mb: int


@dataclass(frozen=True)
class Allocation:
    """What the controller's job holds, per node, and when it ends."""

    job_id: str
    nodes: tuple[NodeShare, ...]
    end_time: float | None  # epoch seconds


# ---------------------------------------------------------------- reading the allocation (pure parsers)


def parse_job_details(text: str, expand: Mapping[str, Sequence[str]]) -> list[NodeShare]:
    """Per-node CPUs, GPUs and memory from ``scontrol show job -d`` text.

    ``expand`` maps a compressed node list (``node[1-2]``) to its host names.
    """
    shares: list[NodeShare] = []
    for match in re.finditer(r"^\s*Nodes=(\S+)\s+CPU_IDs=(\S+)\s+Mem=(\d+)\s+GRES=(\S*)", text, re.M):
        nodelist, cpu_ids, mem, gres = match.groups()
        cpus = _count_ids(cpu_ids)
        gpus = sum(int(n) for n in re.findall(r"gpu(?::[\w.-]+)?:(\d+)", gres))
        for node in expand.get(nodelist, [nodelist]):
            shares.append(NodeShare(node, cpus, gpus, int(mem)))
    return shares


def _count_ids(ids: str) -> int:
    total = 0
    for part in ids.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            total += int(hi) - int(lo) + 1
        elif part:
            total += 1
    return total


def parse_end_time(text: str) -> float | None:
    """``EndTime=2026-12-02T12:20:22`` of ``scontrol show job`` as epoch seconds (local time)."""
    import datetime as dt

    match = re.search(r"EndTime=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", text)
    if not match:
        return None
    return dt.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").timestamp()


def read_allocation(environ: Mapping[str, str] = os.environ) -> Allocation:
    """The allocation this process runs in (needs SLURM_JOB_ID and scontrol)."""
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id:
        raise UserError("--backend slurm: not inside a Slurm allocation (SLURM_JOB_ID is not set); "
                        "submit with: sbatch slurm_templates/launch_controller.sh")
    if shutil.which("scontrol") is None:
        raise UserError("--backend slurm: scontrol is not on PATH")
    text = _run(["scontrol", "show", "job", "-d", job_id])
    lists = set(re.findall(r"^\s*Nodes=(\S+)\s+CPU_IDs=", text, re.M))
    expand = {nodelist: _run(["scontrol", "show", "hostnames", nodelist]).split() for nodelist in lists}
    shares = parse_job_details(text, expand)
    if not shares:
        raise UserError(f"--backend slurm: cannot read the nodes of job {job_id} from scontrol")
    return Allocation(job_id, tuple(shares), parse_end_time(text))


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"{' '.join(command)} failed: {getattr(exc, 'stderr', '') or exc}") from None


# ---------------------------------------------------------------- atoms


@dataclass(frozen=True)
class SlurmResources:
    gpus_per_atom: int
    cpus_per_atom: int
    mem_per_atom_mb: int
    distributed: bool
    atoms_per_node: tuple[tuple[str, int], ...]

    @property
    def atoms(self) -> int:
        return sum(n for _, n in self.atoms_per_node)

    @property
    def max_atoms_per_trial(self) -> int | None:
        """Without torch.distributed a trial is one process: it cannot span nodes."""
        return None if self.distributed else max(n for _, n in self.atoms_per_node)


def slurm_resources(allocation: Allocation, atoms: int | str, gpus_per_atom: int | str, cpus_per_atom: int,
                    mem_per_atom: str, distributed: bool) -> SlurmResources:
    """Carve the allocation into atoms; raise UserError naming the field when it cannot."""
    has_gpus = any(s.gpus for s in allocation.nodes)
    g = (1 if has_gpus else 0) if gpus_per_atom == "auto" else int(gpus_per_atom)
    if g and not has_gpus:
        raise UserError(f"resources.gpus_per_atom: {g}, but allocation {allocation.job_id} has no GPUs")
    per_node = []
    for share in allocation.nodes:
        n = share.gpus // g if g else share.cpus // cpus_per_atom
        if g:
            n = min(n, share.cpus // cpus_per_atom)
        per_node.append((share.node, n))
    available = sum(n for _, n in per_node)
    if available < 1:
        raise UserError(f"resources: allocation {allocation.job_id} ({allocation.nodes}) holds no atom of "
                        f"{g} GPU(s) and {cpus_per_atom} CPU(s); request --cpus-per-task/--ntasks-per-node "
                        f"so each node has CPUs for its concurrent steps")
    if atoms != "auto":
        if atoms > available:
            short = ""
            if g and sum(s.gpus // g for s in allocation.nodes) > available:  # CPUs, not GPUs, are short
                short = (f"; CPUs are short: resources.cpus_per_atom: {cpus_per_atom} with "
                         f"{', '.join(f'{s.cpus} CPUs on {s.node}' for s in allocation.nodes)} (request more CPUs "
                         f"per GPU, e.g. --cpus-per-task={cpus_per_atom} with --ntasks-per-node = GPUs per node, "
                         f"or lower cpus_per_atom)")
            raise UserError(f"resources.atoms: {atoms}, but the allocation holds {available} atoms of {g} GPU(s) "
                            f"and {cpus_per_atom} CPU(s) ({', '.join(f'{n} on {node}' for node, n in per_node)})"
                            + short)
        remaining, trimmed = atoms, []
        for node, n in per_node:
            take = min(n, remaining)
            trimmed.append((node, take))
            remaining -= take
        per_node = [(node, n) for node, n in trimmed if n]
    if mem_per_atom:
        mem = megabytes(mem_per_atom)
        node_mem = {share.node: share.mem_mb for share in allocation.nodes}
        for node, n in per_node:
            if node_mem[node] and n * mem > node_mem[node]:
                raise UserError(f"resources.mem_per_atom: {mem_per_atom} x {n} atoms on {node} = {n * mem} MB, "
                                f"but the allocation has {node_mem[node]} MB there (raise --mem, or lower "
                                f"mem_per_atom or atoms)")
    else:
        mem = min(s.mem_mb // max(1, n) for s, (_, n) in zip(allocation.nodes, per_node) if n) if per_node else 0
    return SlurmResources(g, cpus_per_atom, mem, distributed, tuple(per_node))


def megabytes(text: str) -> int:
    """Slurm's memory sizes (``500M``, ``16G``, plain megabytes) in MB; ValueError otherwise."""
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    text = text.strip().upper()
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


# ---------------------------------------------------------------- commands (pure)


def step_layout(atoms: Sequence[str], gpus_per_atom: int, distributed: bool) -> list[tuple[str, int]]:
    """(node, tasks) in the order of the atoms: one task per GPU (or atom) when distributed, else one."""
    counts: dict[str, int] = {}
    for atom in atoms:
        node = atom.rpartition(":")[0]
        counts[node] = counts.get(node, 0) + 1
    if not distributed:
        if len(counts) != 1:
            raise ValueError(f"a trial that is not distributed cannot span nodes, got atoms {list(atoms)}")
        return [(next(iter(counts)), 1)]
    per_atom = gpus_per_atom or 1
    return [(node, n * per_atom) for node, n in counts.items()]


def srun_command(launch_id: str, folder: Path, layout: Sequence[tuple[str, int]], gpus_per_task: int,
                 cpus_per_task: int, mem_per_cpu_mb: int, program: Sequence[str]) -> list[str]:
    """The srun line of one launch (``layout``: tasks per node, rank 0's node first).

    On several nodes the hostfile (SLURM_HOSTFILE, --distribution=arbitrary) names each task's
    node: with --nodelist alone srun orders the nodes as the allocation does, and rank 0 (whose
    node is MASTER_ADDR) could land on another node than ``layout[0]``."""
    tasks = sum(n for _, n in layout)
    nodes = [node for node, _ in layout]
    command = ["srun", "--exact", f"--job-name={launch_id}", f"--nodes={len(nodes)}", f"--ntasks={tasks}",
               f"--cpus-per-task={cpus_per_task}", f"--mem-per-cpu={max(1, mem_per_cpu_mb)}M",
               "--kill-on-bad-exit=1", "--input=none",
               f"--output={folder}/{launch_id}_%t_log.out", f"--error={folder}/{launch_id}_%t_log.err"]
    if gpus_per_task:
        command.append(f"--gpus-per-task={gpus_per_task}")
    if len(nodes) > 1:
        command.append("--distribution=arbitrary")
    else:
        command += [f"--nodelist={nodes[0]}", f"--ntasks-per-node={layout[0][1]}"]
    return command + list(program)


def hostfile_lines(layout: Sequence[tuple[str, int]]) -> list[str]:
    """One host per task, in rank order (for --distribution=arbitrary)."""
    return [node for node, n in layout for _ in range(n)]


def step_environment(environ: Mapping[str, str], launch: TrialLaunch, world_size: int, nodes: int,
                     master_addr: str, master_port: int, token: str = "") -> dict[str, str]:
    """The step's environment: the batch step's GPU/memory variables cleared, hpcsched's set (the launch's
    token too)."""
    env = inherited_environment(environ, CLEARED_VARIABLES)
    env.update(SUBMITIT_EXECUTOR="hpcsched", HPCSCHED_LAUNCH_ID=launch.launch_id, HPCSCHED_TRIAL_ID=launch.trial_id,
               HPCSCHED_WORLD_SIZE=str(world_size), HPCSCHED_NUM_NODES=str(nodes), OMP_NUM_THREADS=str(launch.threads),
               **{TOKEN_VARIABLE: token})
    if world_size > 1:  # torch.distributed's rendezvous; a one-process trial gets none (see local.py)
        env.update(WORLD_SIZE=str(world_size), MASTER_ADDR=master_addr, MASTER_PORT=str(master_port))
    env.pop("HPCSCHED_RANK", None)  # per task: SLURM_PROCID
    env.pop("HPCSCHED_LOCAL_RANK", None)
    return env


def master_port_for(launch_id: str) -> int:
    """A port for torch.distributed's rendezvous, stable per launch, spread over 20000-39999."""
    import zlib

    return 20000 + zlib.crc32(launch_id.encode()) % 20000


# ---------------------------------------------------------------- the executor


class SlurmExecutor(ProcessExecutor):
    def __init__(self, settings: ProcessSettings, clock: Clock, resources: SlurmResources, job_id: str):
        super().__init__(settings, clock)
        self.resources = resources
        self.job_id = job_id
        self.spans_nodes = resources.distributed  # a trial that is one process stays on one node

    def atom_ids(self) -> tuple[str, ...]:
        return tuple(f"{node}:{k}" for node, n in self.resources.atoms_per_node for k in range(n))

    def placement(self, atoms: tuple[str, ...]) -> dict[str, Any]:
        r = self.resources
        return {"threads": max(1, r.cpus_per_atom * len(atoms) // self.world_size(atoms))}

    def world_size(self, atoms: tuple[str, ...]) -> int:
        r = self.resources
        return sum(n for _, n in step_layout(atoms, r.gpus_per_atom, r.distributed))

    def spawn(self, command: str, launch: TrialLaunch, folder: Path, world_size: int, token: str) -> list[Any]:
        import shlex

        r = self.resources
        layout = step_layout(launch.atom_ids, r.gpus_per_atom, r.distributed)
        atoms = len(launch.atom_ids)
        gpus_per_task = (r.gpus_per_atom * atoms) // world_size if r.gpus_per_atom else 0
        cpus_per_task = max(1, (r.cpus_per_atom * atoms) // world_size)
        mem_per_cpu = max(1, (r.mem_per_atom_mb * atoms) // max(1, cpus_per_task * world_size))
        srun = srun_command(launch.launch_id, folder, layout, gpus_per_task, cpus_per_task, mem_per_cpu,
                            shlex.split(command))
        env = step_environment(os.environ, launch, world_size, len(layout), layout[0][0],
                               master_port_for(launch.launch_id), token)
        if "--distribution=arbitrary" in srun:
            hostfile = folder / f"{launch.launch_id}.hosts"
            hostfile.write_text("\n".join(hostfile_lines(layout)) + "\n")
            env["SLURM_HOSTFILE"] = str(hostfile)
        log = open(launch.paths.srun_log(launch.launch_id), "ab")
        try:
            process = subprocess.Popen(srun, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                       start_new_session=True)
        finally:
            log.close()
        return [process]


def allocation_deadline(allocation: Allocation, environ: Mapping[str, str] = os.environ) -> float | None:
    """When the allocation ends (scontrol's EndTime; SLURM_JOB_END_TIME if set)."""
    if environ.get("SLURM_JOB_END_TIME"):
        return float(environ["SLURM_JOB_END_TIME"])
    return allocation.end_time

