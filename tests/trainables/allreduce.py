"""A trial whose ranks join one gloo process group at MASTER_ADDR and all-reduce their rank numbers."""

import json
import os


def allreduce(config, ctx):
    import torch
    import torch.distributed as dist

    from hpcsched.training.distributed import DataParallel

    with DataParallel.setup(ctx, backend="gloo", timeout_s=60) as dp:
        total = torch.tensor([float(ctx.rank + 1)])
        dist.all_reduce(total)
        seen = {"rank": ctx.rank, "world": ctx.world_size, "node": os.environ.get("SLURMD_NODENAME", ""),
                "master_addr": ctx.master_addr, "sum": total.item(), "backend": dp.backend}
        (ctx.trial_dir / f"allreduce-{ctx.launch.launch_id}-r{ctx.rank}.json").write_text(json.dumps(seen))
        for step in ctx.steps():
            ctx.report(step, total.item(), state={"step": step})
