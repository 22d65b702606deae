"""``hpcsched status RUN_DIR``: what runs where, on how many atoms, best so far, time left."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any, TextIO

from dataclasses import dataclass
from typing import Callable, Sequence

from hpcsched.core.atoms import node_of
from hpcsched.core.durations import format_duration
from hpcsched.core.errors import UserError
from hpcsched.rundir.journal import read_journal
from hpcsched.rundir.result import read_result
from hpcsched.rundir.paths import RunDir
from hpcsched.core.state import STATUSES, RunState, TrialStatus

_ORDER = {status: i for i, status in enumerate((
    TrialStatus.RUNNING, TrialStatus.LAUNCHING, TrialStatus.STOPPING, TrialStatus.PAUSED, TrialStatus.COMPLETED,
    TrialStatus.TERMINATED, TrialStatus.ERRORED, TrialStatus.CREATED))}


@dataclass(frozen=True)
class Column:
    """One column of the trials table: its header, width and how a trial's entry reads."""

    header: str
    width: int
    text: Callable[[dict[str, Any]], str]
    left: bool = False


def _score(value: float | None) -> str:
    return f"{value:.5g}" if value is not None else "-"


COLUMNS = {
    "trial": Column("trial", 8, lambda t: t["trial"], left=True),
    "status": Column("status", 10, lambda t: t["status"], left=True),
    "atoms": Column("atoms", 5, lambda t: str(t["atoms"])),
    "step": Column("step", 6, lambda t: str(t["step"])),
    "last": Column("last", 10, lambda t: _score(t["last_score"])),
    "best": Column("best", 10, lambda t: _score(t["best_score"])),
    "launches": Column("launches", 8, lambda t: str(t["launches"])),
    "elapsed": Column("elapsed", 9, lambda t: format_duration(t["elapsed"])),
    "nodes": Column("nodes", 12, lambda t: ",".join(t["nodes"]) or "-", left=True),
    "atom_ids": Column("atom ids", 16, lambda t: ",".join(t["atom_ids"]) or "-", left=True),
    "config": Column("config", 30, lambda t: json.dumps(t["config"], default=str), left=True),
    "error": Column("error", 0, lambda t: t["error"][:60], left=True),
}
DEFAULT_FORMAT = ("trial", "status", "atoms", "step", "last", "best", "launches", "elapsed", "atom_ids", "error")


def parse_format(text: str) -> tuple[str, ...]:
    """``--format trial,status,best``: the columns, each one of COLUMNS (UserError naming a bad one)."""
    fields = tuple(f.strip() for f in text.split(",") if f.strip())
    bad = [f for f in fields if f not in COLUMNS]
    if bad or not fields:
        raise UserError(f"--format: unknown column {bad[0]!r} in {text!r}; columns: {', '.join(COLUMNS)}" if bad
                        else f"--format: no columns in {text!r}; columns: {', '.join(COLUMNS)}")
    return fields


def parse_states(text: str) -> tuple[str, ...]:
    """``--state running,paused``: trial statuses, each one of state.STATUSES (UserError naming a bad one)."""
    states = tuple(s.strip().lower() for s in text.split(",") if s.strip())
    bad = [s for s in states if s not in STATUSES]
    if bad or not states:
        raise UserError(f"--state: unknown status {bad[0]!r} in {text!r}; valid: {', '.join(STATUSES)}" if bad
                        else f"--state: no status in {text!r}; valid: {', '.join(STATUSES)}")
    return states


def collect_status(run_dir: RunDir, now: float | None = None) -> dict[str, Any]:
    """The run's state from its journal (a torn last line is fine), as plain data."""
    records = read_journal(run_dir.journal)
    state = RunState.replayed(records)
    started = state.started
    now = time.time() if now is None else now
    controller = run_dir.controller_info() or {}
    alive = _controller_alive(controller) if state.finished is None else False
    trials = []
    for t in sorted(state.trials.values(), key=lambda t: (_ORDER.get(t.status, 9), t.trial_id)):
        trials.append({"trial": t.trial_id, "status": t.status, "atoms": len(t.atoms), "step": t.step,
                       "last_score": t.last_score, "last_metrics": t.last_metrics, "best_score": t.best_score,
                       "launches": t.launches, "elapsed": t.run_time(now),
                       "atom_ids": list(t.atoms), "nodes": sorted({node_of(a) for a in t.atoms} - {""}),
                       "config": t.config,
                       "error": t.error.splitlines()[-1] if t.error else ""})
    result = read_result(run_dir)
    counts = {k: v for k, v in state.counts.items() if v}
    if result:  # result.json is rewritten on a new best or a completed trial only: its counts lag the journal
        result = {**result, "trials_started": len(state.trials), "trials": counts}
    return {
        "run_dir": str(run_dir.path),
        "name": started.name if started else None,
        "variant": started.variant if started else None,
        "mode": state.mode,
        "started_at": started.t if started else None,
        "elapsed": ((state.finished.t if state.finished else now) - started.t) if started else None,
        "deadline": state.deadline,
        "time_left": (state.deadline - now) if state.deadline is not None else None,
        "extended_by": sum(e.by for e in state.extensions),
        "finished": state.finished.reason if state.finished else None,
        "stopped": state.stopped.reason if state.stopped and not state.finished else None,
        "controller": {"alive": alive, **controller},
        "atoms_total": state.total_atoms, "atoms_in_use": state.total_atoms - state.free_atoms,
        "counts": counts,
        "exploration_closed_at": state.entrance_closed_at,
        "best": ({"trial": state.best_trial, "score": state.best_score, "step": state.best_step}
                 if state.best_score is not None else None),
        "result": result,
        "trials": trials,
    }


def _controller_alive(info: dict[str, Any]) -> bool | None:
    if not info or info.get("host") != socket.gethostname():
        return None  # unknown from here
    try:
        os.kill(int(info["pid"]), 0)
    except (ProcessLookupError, ValueError, KeyError):
        return False
    except PermissionError:
        return True
    return True


def render_status(status: dict[str, Any], out: TextIO = sys.stdout,
                  columns: Sequence[str] = DEFAULT_FORMAT) -> None:
    """The human form of ``collect_status``; the trials table shows ``columns`` (names in COLUMNS)."""
    name = status["name"] or "?"
    c = status["controller"]
    if status["finished"]:
        who = f"finished ({status['finished']})"
    elif c.get("alive") is True:
        who = f"controller running (pid {c.get('pid')} on {c.get('host')})"
    elif c.get("alive") is False or status["stopped"]:
        why = f"controller stopped ({status['stopped']})" if status["stopped"] else "controller not running"
        who = f"{why}; resume with: hpcsched run SPEC --run-dir DIR --resume"
    else:
        who = f"controller on {c.get('host', '?')} (pid {c.get('pid', '?')}; not checkable from here)"
    print(f"run {name} [{status['variant']}]  {status['run_dir']}", file=out)
    print(f"  {who}", file=out)
    if status["deadline"] is not None:
        left = status["time_left"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["deadline"]))
        left_text = "" if status["finished"] else ("left " + format_duration(left) if left > 0 else "passed") + "; "
        extended = f"extended by {format_duration(status['extended_by'])}; " if status["extended_by"] else ""
        print(f"  deadline {when} ({extended}{left_text}elapsed {format_duration(status['elapsed'])})", file=out)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(status["counts"].items(), key=lambda kv: _ORDER.get(kv[0], 9)))
    print(f"  atoms {status['atoms_in_use']}/{status['atoms_total']} in use | trials: {counts or 'none yet'}", file=out)
    closed = status["exploration_closed_at"]
    if closed is None:
        print("  exploration open", file=out)
    else:  # closed on the run's clock, which started_at (always there once it closed) is on too
        print(f"  exploration closed after {format_duration(closed - status['started_at'])}", file=out)
    best = status["best"]
    if best:
        print(f"  best so far: {best['score']:.6g} (trial {best['trial']}, step {best['step']})", file=out)
    result = status.get("result")
    if result and result.get("best"):
        print(f"  result: {_answer(result)}", file=out)
    if status["trials"]:
        table = [COLUMNS[name] for name in columns]
        print("\n  " + _row(table, [c.header for c in table]), file=out)
        for t in status["trials"]:
            print("  " + _row(table, [c.text(t) for c in table]), file=out)


def _answer(result: dict[str, Any]) -> str:
    """The model the run returns (result.json's ``best``): which trial, which step, its score, its checkpoint
    (its step and score can differ from the best report's: the answer is the most trained checkpoint)."""
    best = result["best"]
    trained = "trained to R" if best.get("completed") else "not trained to R"
    metric = result.get("metric") or "score"
    return (f"trial {best['trial']} at step {best['step']}, {trained}, {metric} {_score(best.get('score'))}: "
            f"{best['checkpoint']}")


def _row(table: Sequence[Column], cells: Sequence[str]) -> str:
    return " ".join(cell.ljust(c.width) if c.left else cell.rjust(c.width) for c, cell in zip(table, cells)).rstrip()


def status_command(path, as_json: bool = False, watch: float | None = None, out: TextIO = sys.stdout,
                   states: Sequence[str] = (), columns: Sequence[str] = DEFAULT_FORMAT) -> int:
    """Print the run's status (``states``: only trials in these statuses) once, or every ``watch`` s."""
    run_dir = RunDir.existing(path)
    while True:
        status = collect_status(run_dir)
        if states:
            status["trials"] = [t for t in status["trials"] if t["status"] in states]
        if as_json:
            print(json.dumps(status, indent=2, default=str), file=out, flush=True)
        else:
            if watch:
                print("\033[2J\033[H", end="", file=out)
            render_status(status, out, columns)
            out.flush()
        if not watch or status["finished"]:
            return 0
        time.sleep(watch)
