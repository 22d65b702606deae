"""Benchmark the analysis loaders on a large synthetic journal.

    .venv/bin/python tools/bench_analysis.py [--trials 10000] [--reports 1000000] [--atoms 64]

Writes a valid journal (it replays through RunState) to a temporary directory: trials run in
lanes of two atoms, some are paused and resumed, some resized to two atoms, most finish or are
stopped, a few error. Prints the time to generate it, then the wall and CPU seconds of parsing
it and of building each frame (in dependency order: trials reuses scores and allocations).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hpcsched.core.records import (EntranceClosed, Exited, Launched, Reported, RunFinished,  # noqa: E402
                                   RunStarted, Running, StopRequested, TrialCreated, to_json)


def _line(record) -> str:
    return json.dumps(to_json(record), separators=(",", ":"))


def _report_line(t: float, trial: str, step: int, score: float) -> str:
    # the same text as _line(Reported(...)), built without the dataclass (a million of them)
    return f'{{"kind":"reported","t":{t!r},"trial":"{trial}","step":{step},"score":{score!r},"checkpoint":""}}'


def generate_journal(path: Path, trials: int = 10_000, reports: int = 1_000_000, atoms: int = 64,
                     seed: int = 0) -> dict[str, int]:
    """Write a synthetic, valid journal to ``path``; return counts of what it holds."""
    assert _report_line(1.5, "t1", 3, 0.25) == _line(Reported(1.5, "t1", 3, 0.25)), "Reported's layout changed"
    rng = random.Random(seed)
    lanes = max(1, atoms // 2)
    per_trial = max(1, reports // trials)
    step_time, startup = 1.0, 5.0
    timed: list[tuple[float, int, str]] = []  # (t, order, line): sorted into one journal at the end
    order = 0
    lane_clock = [0.0] * lanes
    counts = {"trials": trials, "reported": 0, "launched": 0, "exited": 0}
    score_total = 0
    for i in range(trials):
        lane = i % lanes
        trial = f"t{i:05d}"
        mine = [f"{2 * lane}"]
        t = lane_clock[lane]
        lines: list[tuple[float, str]] = []
        lines.append((t, _line(TrialCreated(t, trial, i, {"lr": 10 ** rng.uniform(-4, 0),
                                                        "momentum": rng.choice([0.9, 0.95, 0.99]),
                                                        "arch": rng.choice(["a", "b"])}))))
        n_reports = per_trial if i < trials - 1 else reports - score_total
        score_total += n_reports
        quality = rng.random()
        pause_at = n_reports // 3 if rng.random() < 0.3 else None
        resize_at = (2 * n_reports) // 3 if rng.random() < 0.2 else None
        held = mine
        reason = "start"
        step = 0
        while True:
            lines.append((t, _line(Launched(t, trial, tuple(held), reason, step))))
            counts["launched"] += 1
            t += startup
            lines.append((t, _line(Running(t, trial, startup))))
            stop_at = n_reports
            if pause_at is not None and step < pause_at:
                stop_at = pause_at
            elif resize_at is not None and step < resize_at and len(held) == 1:
                stop_at = resize_at
            per_step = step_time / len(held)
            while step < stop_at:
                step += 1
                t += per_step
                score = quality * (1 - 1 / (1 + 0.05 * step)) + 0.001 * rng.random()
                lines.append((t, _report_line(t, trial, step, score)))
            if step < n_reports and pause_at is not None and step == pause_at:
                lines.append((t, _line(StopRequested(t, trial, "pause", reason="below cutoff"))))
                lines.append((t, _line(Exited(t, trial, "checkpointed", step))))
                counts["exited"] += 1
                t += 3.0  # the lane idles, then the trial is promoted
                reason = "resume"
                continue
            if step < n_reports and resize_at is not None and step == resize_at and len(held) == 1:
                extra = (f"{2 * lane + 1}",)
                lines.append((t, _line(StopRequested(t, trial, "resize", 2, extra, "grow 1->2"))))
                lines.append((t, _line(Exited(t, trial, "checkpointed", step))))
                counts["exited"] += 1
                held = mine + list(extra)
                reason = "resize"
                continue
            break
        end = rng.random()
        if end < 0.05:
            lines.append((t, _line(Exited(t, trial, "errored", step, "CUDA error: out of memory"))))
        elif end < 0.5:
            lines.append((t, _line(StopRequested(t, trial, "stop", reason="rung cutoff"))))
            lines.append((t, _line(Exited(t, trial, "checkpointed", step))))
        else:
            lines.append((t, _line(Exited(t, trial, "finished", step))))
        counts["exited"] += 1
        lane_clock[lane] = t
        for when, text in lines:
            timed.append((when, order, text))
            order += 1
    counts["reported"] = score_total
    end_t = max(lane_clock)
    deadline = end_t + 10.0
    timed.sort(key=lambda x: (x[0], x[1]))
    head = [_line(RunStarted(0.0, "bench", deadline, 2 * lanes, seed, "digest", "hypersched",
                             tuple(str(a) for a in range(2 * lanes))))]
    closed = _line(EntranceClosed(end_t * 0.7, "time left below the entrance limit"))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(head) + "\n")
        placed = False
        for when, _, text in timed:
            if not placed and when >= end_t * 0.7:
                f.write(closed + "\n")
                placed = True
            f.write(text + "\n")
        f.write(_line(RunFinished(end_t, "nothing left to run")) + "\n")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--atoms", type=int, default=64)
    parser.add_argument("--keep", type=Path, default=None, help="write the journal here and keep it")
    args = parser.parse_args(argv)

    import pandas as pd

    from hpcsched.analysis import Run

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.keep or Path(tmp) / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        journal = run_dir / "events.jsonl"
        started = time.perf_counter()
        counts = generate_journal(journal, args.trials, args.reports, args.atoms)
        lines = sum(1 for _ in open(journal, "rb"))
        print(f"generated {journal}: {lines} lines, {journal.stat().st_size / 1e6:.0f} MB, "
              f"{counts['trials']} trials, {counts['reported']} reports "
              f"({time.perf_counter() - started:.1f} s)")

        print(f"{'frame':<12} {'wall s':>7} {'cpu s':>7}")
        total_wall = total_cpu = 0.0
        run = Run(run_dir)
        for name in ("table", "info", "scores", "allocations", "trials", "usage", "best_so_far", "events"):
            wall, cpu = time.perf_counter(), time.process_time()
            frame = getattr(run, name)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            if name == "table":
                name, size = "parse", f"{len(frame.reports)} reports, {len(frame.records)} other records"
            else:
                size = f"{len(frame)} rows" if isinstance(frame, pd.DataFrame) else ""
            print(f"{name:<12} {wall:7.2f} {cpu:7.2f}  {size}")
        print(f"{'total':<12} {total_wall:7.2f} {total_cpu:7.2f}")
        assert len(run.trials) == counts["trials"] and len(run.scores) == counts["reported"]
        assert len(run.allocations) == counts["launched"]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
