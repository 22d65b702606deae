"""ImageNet trainable of the HyperSched paper: ResNet-50, an atom = 2 GPUs, sub-epochs.

One step = one sub-epoch: 100 training batches per process (from a fresh seeded shuffle of
the whole training set) and 20 validation batches; the score is top-1 accuracy on a fixed
validation subset (the same for every trial). The paper's rules (hpcsched.training): batch
128 per GPU, lr x sqrt(global batch / 128) through a ramp of at most +10% per sub-epoch
restarted at every resize; lr x 0.2 after sub-epochs 60, 120 and 160 (as the authors' code).

Config keys (the spec's ``space``): lr, momentum, weight_decay; arch (resnet50: torchvision's
model when installed, else an equivalent one with the same state_dict keys), width, blocks,
num_classes, image_size, batch_size, train_batches, val_batches, workers (DataLoader
processes per rank), seed; data_dir (ImageFolder layout: data_dir/train/<class>/*.JPEG and
data_dir/val/<class>/*.JPEG) or synthetic: true.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hpcsched.training.data import IMAGENET_MEAN, IMAGENET_STD, ImageFolderSet, SyntheticImages, random_crop_flip
from hpcsched.training.loop import Recipe, train_classifier
from hpcsched.training.loop import load_model as trained_model
from hpcsched.training.resnet import imagenet_resnet

MILESTONES = (60, 120, 160)


def build_model(config: dict[str, Any]):
    return imagenet_resnet(config.get("arch", "resnet50"), num_classes=int(config.get("num_classes", 1000)),
                           width=int(config.get("width", 64)), blocks=config.get("blocks"))


def datasets(config: dict[str, Any]):
    size = int(config.get("image_size", 224))
    if config.get("synthetic", False):
        classes, seed = int(config.get("num_classes", 1000)), int(config.get("data_seed", 0))
        train = SyntheticImages(int(config.get("synthetic_train", 1_281_167)), classes, size, seed=seed)
        val = SyntheticImages(int(config.get("synthetic_val", 50_000)), classes, size, seed=seed, first_index=10**9)
        return train, val
    data_dir = config.get("data_dir")
    if not data_dir:
        raise ValueError("config data_dir: required (a folder with train/ and val/ class folders), "
                         "or set synthetic: true")
    root = Path(os.path.expandvars(os.path.expanduser(str(data_dir))))
    return ImageFolderSet(root / "train", train=True, size=size), ImageFolderSet(root / "val", train=False, size=size)


def recipe(config: dict[str, Any]) -> Recipe:
    train, val = datasets(config)
    return Recipe(build_model=lambda: build_model(config), train_set=train, val_set=val,
                  mean=IMAGENET_MEAN, std=IMAGENET_STD,
                  augment=lambda x, g: random_crop_flip(x, g, crop=False),  # crops happen at decoding
                  batch_size=int(config.get("batch_size", 128)),
                  train_batches=int(config.get("train_batches", 100)), val_batches=int(config.get("val_batches", 20)),
                  milestones=MILESTONES, gamma=0.2, base_batch=int(config.get("base_batch", 128)),
                  workers=int(config.get("workers", 4)))


def train(config, ctx):
    train_classifier(config, ctx, recipe(config))


def load_model(checkpoint_path: str):
    """Rebuild the trained model from a checkpoint (e.g. the one result.json names)."""
    return trained_model(checkpoint_path, build_model)
