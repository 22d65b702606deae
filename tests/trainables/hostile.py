"""A trainable that writes what a buggy or hostile trial could put in its own files.

``config["attack"]`` names what it writes at step 1 instead of an honest report (see
ATTACKS); then it trains on like the toy, with scores far above every honest trial's, so
the test sees it if the controller accepted anything of it.
"""

import os
import pickle
import time

MARKER = "PLANTED_PICKLE_RAN"


class _Planted:
    """Unpickling this creates ``path`` (what a code-execution pickle would do)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _report(ctx, **fields):
    """A report line of this launch, with its token (as ``ctx.report`` would write it)."""
    return {"kind": "report", "t": time.time(), "launch": ctx.launch.launch_id,
            "token": os.environ.get("HPCSCHED_LAUNCH_TOKEN", ""), **fields}


def _json(data, **raw):
    import json

    text = json.dumps(data, separators=(",", ":"))
    for key, value in raw.items():
        text = text.replace(f'"{key}":"@"', f'"{key}":{value}')
    return text


ATTACKS = {
    "nan": lambda ctx: _json(_report(ctx, step=1, score="@"), score="NaN"),
    "infinity": lambda ctx: _json(_report(ctx, step=1, score="@"), score="Infinity"),
    "overflow": lambda ctx: _json(_report(ctx, step=1, score="@"), score="1e999"),
    "string_score": lambda ctx: _json(_report(ctx, step=1, score="0.99")),
    "string_step": lambda ctx: _json(_report(ctx, step="1", score=0.99)),
    "negative_step": lambda ctx: _json(_report(ctx, step=-5, score=5.0)),
    "step_past_R": lambda ctx: _json(_report(ctx, step=ctx.max_steps + 100, score=5.0)),
    "traversal": lambda ctx: _json(_report(ctx, step=1, score=5.0, checkpoint="../../../../etc/passwd")),
    "huge_line": lambda ctx: _json(_report(ctx, step=1, score=5.0, pad="x" * 50_000_000)),
    "deep_metrics": lambda ctx: _json(_report(ctx, step=1, score=5.0, metrics={"x": "@"}),
                                      x="[" * 30_000 + "]" * 30_000),  # 60 KB, under the line limit
}


def hostile(config, ctx):
    attack = config["attack"]
    if attack == "planted_pickle":  # a result pickle in place of submitit's, left behind on exit
        for step in ctx.steps():
            time.sleep(0.05)
            ctx.report(step, 0.5 * step / ctx.max_steps, state={"step": step})
        planted = ctx.trial_dir / "launches" / f"{ctx.launch.launch_id}_0_result.pkl"
        planted.write_bytes(pickle.dumps(("success", _Planted(str(ctx.trial_dir.parents[1] / MARKER)))))
        ctx.write_exit("finished")
        os._exit(0)  # before submitit writes its own result over the planted one
    for step in ctx.steps():
        time.sleep(0.05)
        if step == 1 and attack in ATTACKS:
            with open(ctx.trial_dir / "scores.jsonl", "a") as f:
                f.write(ATTACKS[attack](ctx) + "\n")
            ctx._last_step = step  # the honest reports go on from step 2
            continue
        quality = config.get("quality", 5.0)
        ctx.report(step, quality * step, state={"step": step})


def odd_metrics(config, ctx):
    """Honest scores beside metrics that are no finite numbers: a diverged loss (NaN) and an infinite
    gradient norm through ``ctx.report``, and at step 2 a line written by hand with JSON's Infinity."""
    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        if step == 2:
            with open(ctx.trial_dir / "scores.jsonl", "a") as f:
                f.write(_json(_report(ctx, step=2, score=0.2, metrics={"loss": "@"}), loss="Infinity") + "\n")
            ctx._last_step = step
            continue
        ctx.report(step, 0.1 * step, state={"step": step}, loss=float("nan"), grad=float("inf"), lr=0.1)


def ballast(config, ctx):
    """Honest scores, heavy checkpoints (``ballast_mb`` each): fills a small file system."""
    state = ctx.restore() or {"steps": 0}
    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        state["steps"] += 1
        state["ballast"] = os.urandom(int(config.get("ballast_mb", 1) * (1 << 20)))
        ctx.report(step, config["quality"] * step / ctx.max_steps, state=state)


def freezes(config, ctx):
    """Honest reports; the trial of quality ``freeze_quality`` stops itself (SIGSTOP) at step
    ``freeze_at``, as a hung one would."""
    import signal

    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        if step == config.get("freeze_at") and config["quality"] == config.get("freeze_quality"):
            os.kill(os.getpid(), signal.SIGSTOP)
        ctx.report(step, config["quality"] * step / ctx.max_steps, state={"step": step})


def rank_aborts(config, ctx):
    """Rank ``abort_rank`` of a several-process trial says why on stderr and aborts (SIGABRT, as a
    C++ library's uncaught exception does) at step ``abort_at``; the others train on."""
    import resource
    import sys

    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        if ctx.rank == config.get("abort_rank", 1) and step == config.get("abort_at", 3):
            print(f"terminate called: rank {ctx.rank} gave up at step {step}", file=sys.stderr, flush=True)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left in the working directory
            os.abort()
        ctx.report(step, 0.5 * step / ctx.max_steps, state={"step": step})


def forges(config, ctx):
    """``role: forger`` appends to another trial's scores.jsonl a report in the name of that trial's
    launch: its last step, score 9.9, a checkpoint it plants beside (once without a token, once with
    its own), then trains honestly; any other role trains honestly, scores at most 0.2."""
    import json

    if config["role"] == "forger":
        victim = _launch_of_another(ctx)
        if victim is not None:
            launch, folder = victim
            name = f"step-{ctx.max_steps:08d}.pkl"
            (folder / "checkpoints").mkdir(exist_ok=True)
            (folder / "checkpoints" / name).write_bytes(pickle.dumps({"forged": True}))
            forged = {"kind": "report", "t": time.time(), "launch": launch, "step": ctx.max_steps, "score": 9.9,
                      "checkpoint": name}
            own = {**forged, "token": os.environ.get("HPCSCHED_LAUNCH_TOKEN", "")}
            with open(folder / "scores.jsonl", "a") as f:
                f.write(json.dumps(forged) + "\n" + json.dumps(own) + "\n")
            (ctx.trial_dir / "forged").write_text(launch)
    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        ctx.report(step, 0.2 * step / ctx.max_steps, state={"step": step})


def _launch_of_another(ctx, timeout=20.0):
    """(launch id, trial folder) of another trial of the run once it has started, from its scores file."""
    import json

    give_up = time.time() + timeout
    while time.time() < give_up:
        for folder in ctx.trial_dir.parent.iterdir():
            scores = folder / "scores.jsonl"
            if folder == ctx.trial_dir or not scores.exists():
                continue
            for line in scores.read_text().splitlines():
                data = json.loads(line)
                if data.get("kind") == "started":
                    return data["launch"], folder
        time.sleep(0.05)
    return None


def leaves_children(config, ctx):
    """At its first step starts ``sleep 301`` (in its session) and ``sleep 302`` (in a session of its own,
    as a daemon would), writes their pids to ``children-<launch>-r<rank>`` in its folder, then trains on
    and returns, leaving both running; with ``hang: true`` it trains until it is killed."""
    import subprocess

    for step in ctx.steps():
        if step == 1:
            stay = subprocess.Popen(["sleep", "301"])
            away = subprocess.Popen(["sleep", "302"], start_new_session=True)
            (ctx.trial_dir / f"children-{ctx.launch.launch_id}-r{ctx.rank}").write_text(f"{stay.pid} {away.pid}")
        time.sleep(config.get("step_time", 0.05))
        ctx.report(step, 0.1 * step, state={"step": step})
    while config.get("hang"):
        time.sleep(1)


def fills_disk(config, ctx):
    """Honest scores, checkpoints of ``ballast_mb``; the trial of quality ``fill_quality`` fills the file
    system at step ``fill_at`` (once: ``filled`` marks it), leaving about 300 KB free in ``filler`` (for
    the test to delete) and keeping it so for ``then_sleep`` seconds, so that the next checkpoint of any trial
    fails with ENOSPC."""
    state = ctx.restore() or {"steps": 0}
    for step in ctx.steps():
        time.sleep(config.get("step_time", 0.05))
        if config["quality"] == config.get("fill_quality") and step == config.get("fill_at") \
                and not (ctx.trial_dir / "filled").exists():
            (ctx.trial_dir / "filled").touch()
            until = time.monotonic() + config.get("then_sleep", 0.0)
            with open(ctx.trial_dir / "filler", "wb", buffering=0) as f:
                # kept full while it sleeps, so that another trial's checkpoint meets the full disk first: a
                # checkpoint pruned meanwhile frees space the next one would otherwise fit in
                while True:
                    st = os.statvfs(ctx.trial_dir)
                    if st.f_bavail * st.f_frsize >= 300_000 + 65536:
                        f.write(bytes(65536))
                    elif time.monotonic() >= until:
                        break
                    else:
                        time.sleep(0.01)
        state["steps"] += 1
        state["ballast"] = os.urandom(int(config.get("ballast_mb", 1) * (1 << 20)))
        ctx.report(step, config["quality"] * step / ctx.max_steps, state=state)
