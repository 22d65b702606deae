"""Quickstart trainable: a small CNN on scikit-learn's handwritten digits (no download needed).

The 8x8 digits are upsampled to 16x16; a small training split (30 %) is enlarged with shifted
copies (one pixel each way). An epoch takes 0.5 to 1.5 s on one core of the 2-core development
machine with other work beside it (load average about 3; 24x24 images took 1.5 to 2 times as long,
and a busy machine could then not train the best to R by the deadline). One step = one epoch; the
learning rate follows a cosine from
its configured value to zero at R, so a trial's best model is its fully trained one; the score
is validation accuracy. The checkpoint holds the model, the optimizer and the RNG state, so a
paused or resized trial continues exactly where it stopped.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SIZE = 16  # image side after upsampling
SHIFTS = tuple((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1))  # training copies, in pixels
TRAIN_FRACTION = 0.3  # a small training split: the configuration matters


def _digits_csv() -> Path:
    """scikit-learn's bundled digits file, found without importing scikit-learn (seconds per trial)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the quickstart needs scikit-learn's digits: pip install -e '.[examples]'")
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"


def digits(seed: int = 0):
    """Train/validation tensors (30/70 split, fixed), images 1xSIZExSIZE in [0, 1]; the training
    images once per shift in SHIFTS (a shift of one 8x8 pixel)."""
    data = np.loadtxt(_digits_csv(), delimiter=",")
    x = torch.tensor(data[:, :64].reshape(-1, 1, 8, 8) / 16.0, dtype=torch.float32)
    x = F.interpolate(x, size=SIZE, mode="bilinear", align_corners=False)
    y = torch.tensor(data[:, 64], dtype=torch.long)
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(TRAIN_FRACTION * len(y))
    train, val = order[:cut], order[cut:]
    pixel = SIZE // 8
    x_train = torch.cat([torch.roll(x[train], shifts=(dy * pixel, dx * pixel), dims=(2, 3)) for dy, dx in SHIFTS])
    return x_train, y[train].repeat(len(SHIFTS)), x[val], y[val]


class SmallCNN(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * width * (SIZE // 2) ** 2, 10))

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
        for group in optimizer.param_groups:  # cosine to zero at R: the last epoch is the trained model
            group["lr"] = config["lr"] * 0.5 * (1 + math.cos(math.pi * (step - 1) / ctx.max_steps))
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
