"""What a launch leaves behind on this host, found through /proc and killed.

Each launch's processes start in a session of their own (``start_new_session``): a rank, and srun on
SLURM, leads it, and whatever it starts joins its process group and session unless it leaves them.
A kill goes to the whole process group (a DataLoader's workers, a torchrun's children), and once the
launch has exited or been killed ``kill_leftovers`` ends what is left of its sessions and, where they
can still be found, the processes it started in another session: each carries the launch's token in
its environment (``scores.TOKEN_VARIABLE``) unless it cleared it. Only what runs on the controller's host
is found: on SLURM a step's processes on other nodes are Slurm's to end (its process tracking, proctrack;
on the local test cluster what a trial's step started was gone once the job ended, with or without this).
The stop signal (SIGUSR1) still goes to the ranks alone: it asks
them to checkpoint, and in a process that did not inherit their handler its default action kills: sent to
the group, it killed a DataLoader worker started with ``multiprocessing_context="spawn"`` (and
multiprocessing's resource tracker), and the trial failed ("DataLoader worker ... exited unexpectedly")
in the step it was to save. Forked workers inherit the handler and survive it.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Iterable

from hpcsched.rundir.scores import TOKEN_VARIABLE

log = logging.getLogger(__name__)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = _stat(pid)
    return state is None or state[0] != "Z"


def send(pid: int, sig: int) -> None:
    """Signal one process; gone or not ours: nothing to do."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(leader: int) -> None:
    """SIGKILL the process group ``leader`` leads (its own pid: a launch's process starts a session)."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is empty
    except PermissionError as exc:
        log.warning("could not kill process group %s: %s", leader, exc)


def leftovers(sessions: Iterable[int], token: str | None) -> list[int]:
    """Processes on this host, other than this one, in one of ``sessions`` or with ``token`` in their
    environment (zombies left out)."""
    sessions = set(sessions)
    marker = f"{TOKEN_VARIABLE}={token}".encode() if token else None
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        state = _stat(pid)
        if state is None or state[0] == "Z":
            continue
        if state[1] in sessions or (marker is not None and marker in _environment(pid)):
            found.append(pid)
    return found


def kill_leftovers(sessions: Iterable[int], token: str | None, what: str) -> list[int]:
    """SIGKILL every process ``leftovers`` finds; return their pids (logged as ``what``'s leftovers)."""
    pids = leftovers(sessions, token)
    for pid in pids:
        send(pid, signal.SIGKILL)
    if pids:
        log.info("%s: killed %d process(es) it left behind: %s", what, len(pids), pids)
    return pids


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, session id) of a process; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[3])  # after "pid (comm)": state ppid pgrp session ...


def _environment(pid: int) -> list[bytes]:
    """The entries of a process's environment ([] when it cannot be read)."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []
