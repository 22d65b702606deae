"""Trainables for tests with real processes (no torch): deterministic scores from the config.

``toy``'s state counts the steps it trained; every report carries that count, the process id,
the atoms and the CPU affinity, so tests can check a resumed or resized trial continued from
exactly its checkpoint. An exclusive lock per trial records any second process of one trial.
"""

import fcntl
import json
import math
import os
import time


def toy(config, ctx):
    lock = open(ctx.trial_dir / f"alive-rank{ctx.rank}.lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        (ctx.trial_dir / "VIOLATION").write_text(f"two processes of {ctx.trial_id} rank {ctx.rank} at once\n")
        raise
    ranks = ctx.trial_dir / "ranks"
    ranks.mkdir(exist_ok=True)
    rank_file = ranks / f"{ctx.launch.launch_id}-r{ctx.rank}.json"
    seen = {"launch": ctx.launch.launch_id, "rank": ctx.rank, "world": ctx.world_size, "atoms": ctx.atoms,
            "node": os.environ.get("SLURMD_NODENAME", "local"), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            "pid": os.getpid(), "start": time.time(),
            "verdict_file_at_start": ctx.paths.verdict(ctx.launch.launch_id).exists()}
    rank_file.write_text(json.dumps(seen))
    try:
        _train(config, ctx)
    finally:
        rank_file.write_text(json.dumps({**seen, "end": time.time()}))


def _train(config, ctx):
    time.sleep(config.get("setup_time", 0.0))
    state = ctx.restore() or {"steps": 0}
    print(f"toy: {ctx.trial_id} rank {ctx.rank} from step {ctx.start_step}", flush=True)
    for step in ctx.steps():
        if config.get("crash_quality") == config["quality"] and step == config.get("crash_at", 3):
            raise RuntimeError(f"boom at step {step}")
        time.sleep(config.get("step_time", 0.05) / (ctx.atoms if config.get("scales", True) else 1))
        state["steps"] += 1
        score = config["quality"] * (1 - math.exp(-step / 4.0))
        if config.get("diverge_quality") == config["quality"] and step >= config.get("diverge_at", 3):
            score = float(config.get("diverged_score", "nan"))  # a loss gone to NaN / inf
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        ctx.report(step, score, state=state, steps_done=state["steps"], pid=os.getpid(), atoms=ctx.atoms,
                   cpus=",".join(map(str, cpus)), threads=ctx.threads, world=ctx.world_size,
                   node=os.environ.get("SLURMD_NODENAME", ""), gpus=os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                   nodes=os.environ.get("SLURM_STEP_NODELIST", ""))


def wrong_signature(config):
    return None


def leaves_a_cycle(config, ctx):
    """Trains like a two-step toy and leaves behind a reference cycle that the automatic collector has
    not reached (as a DistributedDataParallel model's cycles can survive into the oldest generation);
    when the cycle is freed, ``freed`` (in the trial's folder) is written."""
    import gc
    import weakref

    class Held:
        pass

    gc.disable()
    held = Held()
    held.itself = held
    weakref.finalize(held, (ctx.trial_dir / "freed").write_text, "freed")
    for step in ctx.steps():
        ctx.report(step, 0.5, state={"step": step})
