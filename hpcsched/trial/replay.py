"""A trainable that replays a recorded learning curve in a real process (no torch).

Trial ``i`` of a run replays the curve the simulator gives trial ``i`` (workloads.trace:
the same seeded order), sleeping ``time_scale`` x the curve's one-atom seconds per step, sped
up by the true scaling on the trial's atoms; it checkpoints, restores and resizes like any
trainable. Use it to run a simulated spec for real (``tools/bench_fidelity.py``)::

    trainable: hpcsched.trial.replay:train
    space:
      trace: {value: /path/to/curves.csv}   # trial,step,score[,time]
      step_time: 30                         # trace seconds per step (no time column)
      time_scale: 0.05                      # real seconds per trace second
      scaling: sqrt                         # the true speedup on a atoms
      seed: 0                               # the simulator's seed (which curve each trial gets)
      startup: 0                            # trace seconds of setup per launch
      draw: {uniform: [0, 1]}               # unused: makes every trial's config distinct, so the
                                            # space is not exhausted after one trial
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def train(config: dict[str, Any], ctx) -> None:
    from hpcsched.core.scaling import parse_scaling
    from hpcsched.workloads.trace import TraceWorkload, load_trace

    problems: list[str] = []
    scaling = parse_scaling(config.get("scaling", "linear"), "space.scaling", problems)
    if scaling is None or "trace" not in config:
        raise ValueError("; ".join(problems or ["space.trace: the replay trainable needs the path of a trace"]))
    scale = float(config.get("time_scale", 1.0))
    time.sleep(max(0.0, float(config.get("startup", 0.0))) * scale)
    curves = load_trace(Path(config["trace"]), config.get("step_time"))
    workload = TraceWorkload(curves, int(config.get("seed", 0)), ctx.max_steps)
    curve = workload.curve(ctx.trial_index % workload.size)
    state = ctx.restore() or {"step": 0}
    rate = scaling.rate(ctx.atoms)
    position = {int(step): i for i, step in enumerate(curve.steps)}
    done_work = _work_at(curve, state["step"], position)
    for step in ctx.steps():
        if step not in position:
            if step > int(curve.steps[-1]):
                return  # the recorded run ended here
            continue
        i = position[step]
        time.sleep(max(0.0, float(curve.work[i]) - done_work) * scale / rate)
        done_work = float(curve.work[i])
        state["step"] = step
        ctx.report(step, float(curve.scores[i]), state=state)


def _work_at(curve, step: int, position: dict[int, int]) -> float:
    """One-atom seconds of the curve up to ``step`` (0 before its first report)."""
    earlier = [s for s in position if s <= step]
    return float(curve.work[position[max(earlier)]]) if earlier else 0.0
