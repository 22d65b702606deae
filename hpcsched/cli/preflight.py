"""``hpcsched check``: the checks of ``hpcsched run`` before anything waits in a queue.

On a login node it reads what a batch script would request (its ``#SBATCH`` lines, then sbatch
options given on the command line, which win as with sbatch) and carves that allocation into
the spec's atoms with the same rule the controller applies inside the job
(:func:`hpcsched.executors.slurm.slurm_resources`). Inside an allocation it checks the real one;
elsewhere, this machine (the local backend).
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TextIO

from hpcsched.core.durations import format_duration
from hpcsched.core.errors import UserError, shown
from hpcsched.executors.launching import inherited_environment
from hpcsched.executors.slurm import Allocation, NodeShare, SlurmResources, megabytes, slurm_resources
from hpcsched.trial.probe import probe_trainable
from hpcsched.loop.backends import ALLOCATION_SAFETY, backend_for
from hpcsched.loop.runner import checked_trainable, deadline_problem
from hpcsched.spec import Spec

# sbatch options that take no value (the others take one: --opt=value, --opt value, -o value, -ovalue)
_FLAGS = frozenset({"requeue", "no-requeue", "exclusive", "hold", "overcommit", "oversubscribe", "contiguous",
                    "spread-job", "test-only", "wait", "parsable", "quiet", "verbose", "use-min-nodes",
                    "ignore-pbs", "no-kill", "kill-on-invalid-dep", "exact"})
_SHORT = {"N": "nodes", "n": "ntasks", "c": "cpus-per-task", "t": "time", "G": "gpus", "J": "job-name",
          "p": "partition", "A": "account", "q": "qos", "C": "constraint", "o": "output", "e": "error",
          "w": "nodelist", "x": "exclude", "D": "chdir", "a": "array", "d": "dependency", "O": "overcommit",
          "s": "oversubscribe", "H": "hold", "Q": "quiet", "v": "verbose", "W": "wait", "k": "no-kill"}


def script_options(text: str) -> list[str]:
    """The sbatch arguments of a batch script's ``#SBATCH`` lines (sbatch stops at the first command)."""
    args: list[str] = []
    for line in text.splitlines()[1:] if text.startswith("#!") else text.splitlines():
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        if not stripped.startswith("#SBATCH"):
            break
        body = stripped[len("#SBATCH"):]
        args += shlex.split(body, comments=True)
    return args


def parse_options(args: Sequence[str]) -> dict[str, str]:
    """sbatch arguments as {long name: value} ('' for flags); later ones win. UserError for a stray word."""
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
        elif arg.startswith("-") and len(arg) >= 2:
            name, value, eq = arg[1], arg[2:], "=" if len(arg) > 2 else ""
        else:
            raise UserError(f"sbatch options: {shown(arg)} is not an option (expected --name=value or -X value)")
        name = _SHORT.get(name, name) if len(name) == 1 else name
        if not eq and name not in _FLAGS:
            if i + 1 >= len(args):
                raise UserError(f"sbatch options: --{name} needs a value")
            i += 1
            value = args[i]
        options.pop(name, None)  # re-inserted: the order says which of two spellings came last
        options[name] = value
        i += 1
    return options


def time_limit_seconds(text: str) -> float | None:
    """Slurm's --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; None for UNLIMITED."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value)
    if not match:
        raise UserError(f"--time: {shown(text)} is not a Slurm time limit (minutes, HH:MM:SS, D-HH:MM:SS)")
    days, a, b, c = match.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        parts = [int(a), int(b or 0), int(c or 0)]
        return int(days) * 86400.0 + parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]
    if c is not None:
        return int(a) * 3600.0 + int(b) * 60.0 + int(c)
    if b is not None:
        return int(a) * 60.0 + int(b)
    return int(a) * 60.0


@dataclass(frozen=True)
class SbatchRequest:
    """What a batch script asks for, per node (None: known only once the job runs)."""

    nodes: int
    gpus_per_node: int
    cpus_per_node: int | None
    mem_per_node_mb: int | None
    time_limit: float | None
    options: dict[str, str]

    def allocation(self) -> Allocation:
        """The allocation the request would get (CPUs unknown: none short; memory unknown: unchecked)."""
        cpus = self.cpus_per_node if self.cpus_per_node is not None else 1 << 20
        shares = tuple(NodeShare(f"node{i + 1}", cpus, self.gpus_per_node, self.mem_per_node_mb or 0)
                       for i in range(self.nodes))
        return Allocation("(requested)", shares, None)

    def describe(self) -> str:
        cpus = "CPUs per node unknown" if self.cpus_per_node is None else f"{self.cpus_per_node} CPUs"
        mem = "all memory" if self.mem_per_node_mb is None else f"{self.mem_per_node_mb} MB"
        limit = "no --time" if self.time_limit is None else f"time limit {format_duration(self.time_limit)}"
        return f"{self.nodes} node(s) x {self.gpus_per_node} GPU(s), {cpus}, {mem} per node; {limit}"


def _int(options: dict[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    match = re.fullmatch(r"(?:[A-Za-z0-9_.]+:)?(\d+)(?:-\d+)?", text.strip())  # [type:]N, N-M (take N)
    if not match:
        raise UserError(f"--{name}: {shown(text)} is not a count")
    return int(match.group(1))


def _gpus_per_node(options: dict[str, str], nodes: int, tasks_per_node: int) -> int:
    given = [name for name in options if name in ("gpus-per-node", "gres", "gpus-per-task", "gpus")]
    if not given:
        return 0
    name = given[-1]  # the last one given wins
    if name == "gres":
        for item in options["gres"].split(","):
            fields = item.split(":")
            if fields[0] == "gpu":
                count = fields[-1] if len(fields) > 1 and fields[-1].isdigit() else "1"
                return int(count)
        return 0
    if name == "gpus-per-task":
        return _int(options, name, 0) * tasks_per_node
    if name == "gpus":
        return _int(options, name, 0) // nodes
    return _int(options, name, 0)


def sbatch_request(options: dict[str, str]) -> SbatchRequest:
    """What ``options`` would allocate; UserError naming the option when a value cannot be read."""
    nodes = _int(options, "nodes", 1)
    if nodes < 1:
        raise UserError(f"--nodes: {shown(options['nodes'])}: at least one node")
    if "ntasks-per-node" in options:
        tasks = _int(options, "ntasks-per-node", 1)
    else:
        tasks = -(-_int(options, "ntasks", nodes) // nodes)
    gpus = _gpus_per_node(options, nodes, tasks)
    if "cpus-per-gpu" in options:
        cpus: int | None = _int(options, "cpus-per-gpu", 1) * gpus
    elif "exclusive" in options and "cpus-per-task" not in options:
        cpus = None  # every CPU of the node: how many depends on the node
    else:
        cpus = _int(options, "cpus-per-task", 1) * tasks
    mem: int | None = None
    scales = {"mem": 1, "mem-per-cpu": cpus, "mem-per-gpu": gpus}
    for name in options:  # in the order given: the last one wins
        if name in scales:
            scale = scales[name]
            try:
                per = megabytes(options[name])
            except ValueError:
                raise UserError(f"--{name}: {shown(options[name])} is not a memory size (e.g. 16G, 500M)") from None
            mem = None if per == 0 or scale is None else per * scale  # --mem=0: all of the node's memory
    limit = time_limit_seconds(options["time"]) if "time" in options else None
    return SbatchRequest(nodes, gpus, cpus, mem, limit, dict(options))


# ---------------------------------------------------------------- the check


@dataclass(frozen=True)
class CheckOptions:
    variant: str | None = None
    sbatch_script: Path | None = None
    sbatch_args: tuple[str, ...] = ()
    in_allocation: bool = False  # SLURM_JOB_ID is set: check the real allocation


def check_experiment(spec: Spec, options: CheckOptions, out: TextIO) -> None:
    """Print what was checked; raise UserError listing every problem (the CLI exits 2)."""
    problems: list[str] = []
    variant = spec.variant(options.variant)
    print(f"spec {spec.source or spec.name}: ok ({spec.name}, variant {variant.name})", file=out)
    try:
        trainable = checked_trainable(spec)
        probe_trainable(trainable, inherited_environment(os.environ))  # imported as a trial would import it
        print(f"trainable {trainable}: ok (imported as a trial would: a callable taking (config, ctx))", file=out)
    except UserError as exc:
        problems.append(str(exc))
    if options.sbatch_script is not None or options.sbatch_args:
        _check_request(spec, options, problems, out)
    else:
        backend = "slurm" if options.in_allocation else "local"
        if backend == "local":
            print("resources: checked against this machine, as `hpcsched run` here would use them "
                  "(--sbatch-script FILE checks a Slurm submission)", file=out)
        try:
            built = backend_for(spec, backend)
            print(f"resources on the {backend} backend: ok", file=out)
            missing = deadline_problem(spec, None, built.ends_at)
            if missing is not None:
                problems.append(missing)
            if built.ends_at is not None and spec.deadline is not None:
                left = built.ends_at - ALLOCATION_SAFETY - time.time()
                if spec.deadline > left:
                    print(f"warning: deadline {format_duration(spec.deadline)} is cut to the allocation's end, "
                          f"{format_duration(max(0.0, left))} from now", file=out)
        except UserError as exc:
            problems.append(str(exc))
    if problems:
        if len(problems) == 1:
            raise UserError(problems[0])
        raise UserError(f"{len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems))
    print("ready to submit" if options.sbatch_script or options.sbatch_args else "ready to run", file=out)


def _check_request(spec: Spec, options: CheckOptions, problems: list[str], out: TextIO) -> None:
    args: list[str] = []
    where = "command line"
    if options.sbatch_script is not None:
        path = options.sbatch_script
        try:
            args = script_options(path.read_text())
        except OSError as exc:
            raise UserError(f"--sbatch-script: cannot read {str(path)!r}: {exc.strerror}") from None
        where = f"{path}" + (" + command line" if options.sbatch_args else "")
    try:
        parsed = parse_options([*args, *options.sbatch_args])
        request = sbatch_request(parsed)
    except UserError as exc:
        problems.append(str(exc))
        return
    print(f"allocation ({where}): {request.describe()}", file=out)
    r = spec.resources
    try:
        resources = slurm_resources(request.allocation(), r.atoms, r.gpus_per_atom, r.cpus_per_atom,
                                    r.mem_per_atom, r.distributed)
        print(f"resources: {resources.atoms} atoms of {resources.gpus_per_atom} GPU(s) and "
              f"{resources.cpus_per_atom} CPU(s) ({', '.join(str(n) for _, n in resources.atoms_per_node)} "
              f"per node): ok", file=out)
        for line in idle_warnings(request, resources):
            print(f"warning: {line}", file=out)
    except UserError as exc:
        problems.append(f"{exc} [requested: {request.describe()}]")
    _check_time(spec, request, problems, out)
    if "requeue" in parsed and parsed.get("open-mode") != "append":
        print("warning: --requeue without --open-mode=append: a requeued job starts its output file anew",
              file=out)
    if not parsed.get("signal", "").startswith(("B:USR1", "USR1")):
        print("warning: no --signal=B:USR1@120: at the time limit or a preemption the trials are not "
              "checkpointed first", file=out)


def idle_warnings(request: SbatchRequest, resources: SlurmResources) -> list[str]:
    """What the request holds that no atom uses (GPUs, whole nodes), with a request that fits."""
    used_nodes = len(resources.atoms_per_node)
    idle_nodes = request.nodes - used_nodes
    held = request.nodes * request.gpus_per_node
    used = resources.atoms * resources.gpus_per_atom
    if used >= held and idle_nodes <= 0:
        return []
    parts = []
    if used < held:
        parts.append(f"{held - used} of {held} GPUs")
    if idle_nodes > 0:
        parts.append(f"{idle_nodes} of {request.nodes} node(s)")
    per_node = max(n for _, n in resources.atoms_per_node) * resources.gpus_per_atom
    fit = f"--nodes={used_nodes}" + (f" --gpus-per-node={per_node} --ntasks-per-node={per_node}" if per_node else "")
    more = held // resources.gpus_per_atom if resources.gpus_per_atom else None
    return [f"{' and '.join(parts)} would sit idle: the spec's {resources.atoms} atom(s) of "
            f"{resources.gpus_per_atom} GPU(s) use {used} GPU(s) on {used_nodes} node(s); request {fit}"
            + (f", or raise resources.atoms to {more}" if more and more > resources.atoms else "")]


def _check_time(spec: Spec, request: SbatchRequest, problems: list[str], out: TextIO) -> None:
    limit = request.time_limit
    if limit is None:
        if spec.deadline is None:
            problems.append("deadline: not in the spec and the script sets no --time (the partition's default "
                            "limit would decide); set one of them")
        else:
            print("warning: no --time: the partition's default time limit applies (sinfo -o '%P %l')", file=out)
        return
    usable = limit - ALLOCATION_SAFETY
    if spec.deadline is None:
        print(f"deadline: the time limit less {ALLOCATION_SAFETY:.0f} s ({format_duration(usable)}): ok", file=out)
    elif spec.deadline > usable:
        problems.append(f"deadline: {format_duration(spec.deadline)}, but --time={request.options['time']} leaves "
                        f"{format_duration(usable)} after the {ALLOCATION_SAFETY:.0f} s the controller keeps "
                        f"before the limit; raise --time or lower deadline")
    else:
        print(f"deadline: {format_duration(spec.deadline)} inside the time limit {format_duration(limit)}: ok",
              file=out)
