"""A tiny model (linear regression on made-up data) trained by a transformers Trainer through
HpcschedTrainerCallback."""

import numpy as np
import torch
from transformers import Trainer, TrainerCallback, TrainingArguments

from hpcsched.training.huggingface import HpcschedTrainerCallback, resume_from


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        out = self.layer(x)
        loss = torch.nn.functional.mse_loss(out, labels) if labels is not None else None
        return {"loss": loss, "logits": out}


def _data(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=generator)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return [{"x": x[i], "labels": y[i]} for i in range(len(x))]


def _score(prediction) -> dict:
    mse = float(np.mean((prediction.predictions - prediction.label_ids) ** 2))
    return {"score": 1.0 / (1.0 + mse), "mse": mse}


class GlobalStep(TrainerCallback):
    """Adds the Trainer's global step to the evaluation's metrics (to check a resume continued the loop)."""

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        metrics["eval_global_step"] = float(state.global_step)


def train(config, ctx):
    args = TrainingArguments(output_dir=str(ctx.trial_dir / "hf"), num_train_epochs=ctx.max_steps,
                             per_device_train_batch_size=16, per_device_eval_batch_size=64,
                             learning_rate=config["lr"], lr_scheduler_type="constant", optim="sgd",
                             eval_strategy="epoch", save_strategy="no", logging_strategy="no", report_to=[],
                             use_cpu=True, disable_tqdm=True, seed=0, remove_unused_columns=False,
                             dataloader_num_workers=0)
    trainer = Trainer(model=Regression(), args=args, train_dataset=_data(0), eval_dataset=_data(1),
                      compute_metrics=_score,
                      callbacks=[GlobalStep(), HpcschedTrainerCallback(ctx, metric="eval_score")])
    trainer.train(resume_from_checkpoint=resume_from(ctx))
