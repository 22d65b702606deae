"""``hpcsched status RUN_DIR``: what runs where, on how many atoms, best so far, time left."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any, TextIO

from hpcsched.durations import format_duration
from hpcsched.journal import read_journal
from hpcsched.result import read_result
from hpcsched.rundir import RunDir
from hpcsched.state import RunState

_ORDER = {"running": 0, "launching": 1, "stopping": 2, "paused": 3, "completed": 4, "terminated": 5,
          "errored": 6, "created": 7}


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
                       "launches": t.launches,
                       "atom_ids": list(t.atoms), "config": t.config,
                       "error": t.error.splitlines()[-1] if t.error else ""})
    result = read_result(run_dir)
    return {
        "run_dir": str(run_dir.path),
        "name": started.name if started else None,
        "variant": started.variant if started else None,
        "mode": state.mode,
        "deadline": started.deadline if started else None,
        "time_left": (started.deadline - now) if started else None,
        "finished": state.finished.reason if state.finished else None,
        "controller": {"alive": alive, **controller},
        "atoms_total": state.total_atoms, "atoms_in_use": state.total_atoms - state.free_atoms,
        "counts": {k: v for k, v in state.counts.items() if v},
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


def render_status(status: dict[str, Any], out: TextIO = sys.stdout) -> None:
    """The human form of ``collect_status``."""
    name = status["name"] or "?"
    c = status["controller"]
    if status["finished"]:
        who = f"finished ({status['finished']})"
    elif c.get("alive") is True:
        who = f"controller running (pid {c.get('pid')} on {c.get('host')})"
    elif c.get("alive") is False:
        who = "controller not running (resume with: hpcsched run SPEC --run-dir DIR --resume)"
    else:
        who = f"controller on {c.get('host', '?')} (pid {c.get('pid', '?')}; not checkable from here)"
    print(f"run {name} [{status['variant']}]  {status['run_dir']}", file=out)
    print(f"  {who}", file=out)
    if status["deadline"] is not None:
        left = status["time_left"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["deadline"]))
        print(f"  deadline {when} ({'left ' + format_duration(left) if left > 0 else 'passed'})", file=out)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(status["counts"].items(), key=lambda kv: _ORDER.get(kv[0], 9)))
    print(f"  atoms {status['atoms_in_use']}/{status['atoms_total']} in use | trials: {counts or 'none yet'}", file=out)
    closed = status["exploration_closed_at"]
    print(f"  exploration {'closed' if closed is not None else 'open'}", file=out)
    best = status["best"]
    if best:
        print(f"  best so far: {best['score']:.6g} (trial {best['trial']}, step {best['step']})", file=out)
    result = status.get("result")
    if result and result.get("best"):
        print(f"  result: {result['best']['checkpoint']}", file=out)
    if status["trials"]:
        print(f"\n  {'trial':<8} {'status':<10} {'atoms':>5} {'step':>6} {'last':>10} {'best':>10} {'launches':>8}",
              file=out)
        for t in status["trials"]:
            last = f"{t['last_score']:.5g}" if t["last_score"] is not None else "-"
            best_t = f"{t['best_score']:.5g}" if t["best_score"] is not None else "-"
            line = f"  {t['trial']:<8} {t['status']:<10} {t['atoms']:>5} {t['step']:>6} {last:>10} {best_t:>10} " \
                   f"{t['launches']:>8}"
            if t["error"]:
                line += f"  {t['error'][:60]}"
            print(line, file=out)


def status_command(path, as_json: bool = False, watch: float | None = None, out: TextIO = sys.stdout) -> int:
    run_dir = RunDir.existing(path)
    while True:
        status = collect_status(run_dir)
        if as_json:
            print(json.dumps(status, indent=2, default=str), file=out, flush=True)
        else:
            if watch:
                print("\033[2J\033[H", end="", file=out)
            render_status(status, out)
            out.flush()
        if not watch or status["finished"]:
            return 0
        time.sleep(watch)
