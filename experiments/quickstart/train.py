"""Quickstart trainable: a small CNN on scikit-learn's handwritten digits (no download needed).

One step = one epoch over the training split; the score is validation accuracy. The
checkpoint holds the model, the optimizer and the RNG state, so a paused or resized trial
continues exactly where it stopped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
from torch import nn


def _digits_csv() -> Path:
    """scikit-learn's bundled digits file, found without importing scikit-learn (seconds per trial)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the quickstart needs scikit-learn's digits: pip install -e '.[examples]'")
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"


def digits(seed: int = 0):
    """Train/validation tensors (80/20 split, fixed), images 1x8x8 scaled to [0, 1]."""
    data = np.loadtxt(_digits_csv(), delimiter=",")
    x = torch.tensor(data[:, :64].reshape(-1, 1, 8, 8) / 16.0, dtype=torch.float32)
    y = torch.tensor(data[:, 64], dtype=torch.long)
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    train, val = order[:cut], order[cut:]
    return x[train], y[train], x[val], y[val]


class SmallCNN(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * width * 16, 10))

    def forward(self, x):
        return self.head(self.features(x))


def train(config, ctx):
    torch.set_num_threads(ctx.threads)
    torch.manual_seed(config.get("seed", 0))
    x_train, y_train, x_val, y_val = digits()
    model = SmallCNN(config["width"], config["dropout"])
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"],
                                weight_decay=config["weight_decay"])
    state = ctx.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
    batch = config["batch_size"]
    loss_fn = nn.CrossEntropyLoss()
    for step in ctx.steps():
        model.train()
        order = torch.randperm(len(y_train))
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            optimizer.zero_grad()
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(x_val).argmax(1) == y_val).float().mean().item()
        ctx.report(step, accuracy, state={"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                          "rng": torch.get_rng_state(), "config": dict(config)})


def load_model(checkpoint_path: str) -> SmallCNN:
    """Rebuild the trained model from a checkpoint (e.g. the one result.json names)."""
    from hpcsched import load_checkpoint

    state = load_checkpoint(checkpoint_path)
    model = SmallCNN(state["config"]["width"], state["config"]["dropout"])
    model.load_state_dict(state["model"])
    return model.eval()
