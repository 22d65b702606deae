"""Hugging Face integration: a ``TrainerCallback`` that makes a ``transformers.Trainer`` an hpcsched trial.

    from hpcsched.training.huggingface import HpcschedTrainerCallback, resume_from

    def train(config, ctx):
        args = TrainingArguments(output_dir=str(ctx.trial_dir / "hf"), num_train_epochs=ctx.max_steps,
                                 eval_strategy="epoch", save_strategy="no", report_to=[],
                                 learning_rate=config["lr"])
        trainer = Trainer(model=build(config), args=args, train_dataset=train_set, eval_dataset=eval_set,
                          callbacks=[HpcschedTrainerCallback(ctx, metric="eval_accuracy")])
        trainer.train(resume_from_checkpoint=resume_from(ctx))

One report per evaluation (``eval_strategy="epoch"``: step = epoch, so R counts epochs), with
``metric`` as the score and the Trainer's other evaluation metrics beside it. The checkpoint is the
Trainer's own checkpoint folder (weights, optimizer, scheduler, RNG and trainer state), saved at
that evaluation and kept by hpcsched as one file; ``resume_from(ctx)`` unpacks it again for
``resume_from_checkpoint``, so a paused or resized trial goes on with the next epoch. When hpcsched
asks the trial to stop, the epoch finishes, its checkpoint is saved and training stops. The
folder's files are held in memory while they are written: meant for models of a few GB at most.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from hpcsched.trial.context import ExitRequested, TrialContext

CHECKPOINT_KEY = "huggingface_checkpoint"  # the checkpoint's one entry: {file name in the folder: bytes}
RESUME_DIR = "hf-resume"  # under the trial's directory: where resume_from unpacks the checkpoint


class HpcschedTrainerCallback(TrainerCallback):
    """Report ``metric`` to hpcsched at each evaluation; save the Trainer's checkpoint with it; stop on request.

    ``per``: ``"epoch"`` (the report's step is the epoch; evaluate once per epoch) or ``"step"``
    (the Trainer's global step; then R counts optimizer steps)."""

    def __init__(self, ctx: TrialContext, metric: str, per: str = "epoch"):
        if per not in ("epoch", "step"):
            raise ValueError(f"HpcschedTrainerCallback: per must be 'epoch' or 'step', got {per!r}")
        self.ctx = ctx
        self.metric = metric
        self.per = per
        self._evaluated: dict[str, float] | None = None

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       **kwargs: Any) -> None:
        self.ctx.ready()

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    metrics: dict[str, float] | None = None, **kwargs: Any) -> None:
        metrics = dict(metrics or {})
        if self.metric not in metrics:
            raise KeyError(f"HpcschedTrainerCallback: metric {self.metric!r} is not among the evaluation's "
                           f"metrics: {', '.join(sorted(metrics)) or 'none'} (evaluation metrics start with "
                           f"'eval_'; compute_metrics adds yours)")
        self._evaluated = metrics
        control.should_save = True  # the Trainer writes its checkpoint folder next, then calls on_save

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                **kwargs: Any) -> None:
        metrics, self._evaluated = self._evaluated, None
        if metrics is None:
            return  # a save of the Trainer's own (save_strategy), not one for a report
        folder = Path(str(args.output_dir)) / f"checkpoint-{state.global_step}"
        score = metrics.pop(self.metric)
        step = state.global_step if self.per == "step" else int(round(state.epoch or 0))
        extra = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}
        try:
            self.ctx.report(step, score, state=folder_files(folder), **extra)
        except ExitRequested:
            control.should_training_stop = True
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # hpcsched keeps it as the report's checkpoint


def folder_files(folder: Path) -> dict[str, dict[str, bytes]]:
    """A checkpoint folder as one picklable value: every file's path (relative) and bytes."""
    return {CHECKPOINT_KEY: {str(p.relative_to(folder)): p.read_bytes()
                             for p in sorted(folder.rglob("*")) if p.is_file()}}


def resume_from(ctx: TrialContext) -> str | None:
    """The Trainer checkpoint folder this launch resumes from, unpacked from hpcsched's checkpoint
    under the trial's directory (for ``trainer.train(resume_from_checkpoint=...)``); None on a fresh start."""
    saved = ctx.restore()
    if saved is None:
        return None
    if not isinstance(saved, dict) or CHECKPOINT_KEY not in saved:
        raise ValueError(f"trial {ctx.trial_id}: the checkpoint of step {ctx.start_step} was not written by "
                         f"HpcschedTrainerCallback")
    folder = (ctx.trial_dir / RESUME_DIR / f"checkpoint-{ctx.start_step}").resolve()
    shutil.rmtree(folder, ignore_errors=True)
    for name, data in saved[CHECKPOINT_KEY].items():
        path = (folder / name).resolve()
        if folder not in path.parents:
            raise ValueError(f"trial {ctx.trial_id}: checkpoint file name {name!r} leaves its folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return str(folder)
