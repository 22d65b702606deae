"""A tiny Lightning model (linear regression on made-up data) trained through HpcschedCallback."""

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from hpcsched.training.lightning import HpcschedCallback


class Regression(pl.LightningModule):
    def __init__(self, lr: float):
        super().__init__()
        self.lr = lr
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("val_score", 1.0 / (1.0 + loss))
        self.log("val_loss", loss)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def _data(seed: int) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=generator)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return DataLoader(TensorDataset(x, y), batch_size=16)


class Progress(pl.Callback):
    """Logs the trainer's global step at each validation, to check a resume continued the loop."""

    def on_validation_epoch_end(self, trainer, pl_module):
        pl_module.log("global_step", float(trainer.global_step))


def train(config, ctx):
    torch.manual_seed(0)
    trainer = pl.Trainer(max_epochs=ctx.max_steps, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=ctx.trial_dir, num_sanity_val_steps=0,
                         callbacks=[Progress(), HpcschedCallback(ctx, monitor="val_score")])
    trainer.fit(Regression(config["lr"]), _data(0), _data(1), ckpt_path=ctx.restore_path())
