"""PyTorch Lightning integration: a callback that makes a ``Trainer`` an hpcsched trial.

    from hpcsched.training.lightning import HpcschedCallback

    def train(config, ctx):
        model, data = build(config)
        trainer = Trainer(max_epochs=ctx.max_steps, callbacks=[HpcschedCallback(ctx, monitor="val_acc")],
                          enable_checkpointing=False, logger=False, default_root_dir=ctx.trial_dir)
        trainer.fit(model, data, ckpt_path=ctx.restore_path())

One report per epoch (step = epoch, so R counts epochs), at the end of its validation, with
``monitor`` as the score and the other logged metrics beside it; the checkpoint is the
Trainer's own (``trainer.save_checkpoint``: weights, optimizer, schedulers, loop state), so a
paused or resized trial resumes with ``ckpt_path=ctx.restore_path()`` exactly where it stopped.
When hpcsched asks the trial to stop, the epoch finishes, its checkpoint is saved and the
Trainer stops. One process per trial: the Trainer runs on the devices hpcsched gave it.
"""

from __future__ import annotations

import math
import signal
from typing import Any

import lightning.pytorch as pl

from hpcsched.trial.context import STOP_SIGNALS, ExitRequested, SelfSaving, TrialContext


class HpcschedCallback(pl.Callback):
    """Report ``monitor`` to hpcsched at every epoch's validation end; checkpoint and stop on request."""

    def __init__(self, ctx: TrialContext, monitor: str):
        self.ctx = ctx
        self.monitor = monitor
        # hpcsched's stop handlers; the Trainer installs its own SIGTERM handler (which raises
        # mid-epoch) when fitting starts, so these are put back once it has
        self._stop_handlers = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for sig, handler in self._stop_handlers.items():
            if callable(handler):
                signal.signal(sig, handler)
        self.ctx.ready()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        metrics = {name: _number(value) for name, value in trainer.callback_metrics.items()}
        if self.monitor not in metrics:
            raise KeyError(f"HpcschedCallback: monitor {self.monitor!r} was not logged; logged: "
                           f"{', '.join(sorted(metrics)) or 'nothing'} (self.log({self.monitor!r}, ...) in "
                           f"validation_step)")
        score = metrics.pop(self.monitor)
        try:
            self.ctx.report(trainer.current_epoch + 1, score, state=SelfSaving(trainer.save_checkpoint),
                            **{k: v for k, v in metrics.items() if math.isfinite(v)})
        except ExitRequested:
            trainer.should_stop = True


def _number(value: Any) -> float:
    return float(value.item() if hasattr(value, "item") else value)
