"""CIFAR-10 trainable of the HyperSched paper: a ResNet, SGD, data-parallel and resizable.

One step = one epoch over the training set (sharded over the trial's processes), then the
test set; the score is test accuracy. The paper's rules (hpcsched.training): batch 128 per
process, lr x sqrt(global batch / 128) reached by a ramp of at most +10% per epoch restarted
at every resize, lr x 0.2 after epochs 60, 120 and 160; augmentation: random crop with
padding 4 and horizontal flip.

Config keys (the spec's ``space``): lr, momentum, weight_decay (searched); arch (resnet18,
resnet50, ...), width (64: the standard network), blocks (per stage, optional), batch_size
(per process), seed; data_dir (the extracted ``cifar-10-batches-py``: data_batch_1..5,
test_batch) or synthetic: true (random images of CIFAR's shape: synthetic_train,
synthetic_val images).
"""

from __future__ import annotations

import os
from typing import Any

from hpcsched.training.data import CIFAR_MEAN, CIFAR_STD, SyntheticImages, load_cifar10, random_crop_flip
from hpcsched.training.loop import Recipe, train_classifier
from hpcsched.training.loop import load_model as trained_model
from hpcsched.training.resnet import resnet

MILESTONES = (60, 120, 160)


def build_model(config: dict[str, Any]):
    return resnet(config.get("arch", "resnet50"), num_classes=10, width=int(config.get("width", 64)),
                  stem="cifar", blocks=config.get("blocks"))


def datasets(config: dict[str, Any]):
    """(train, test) sets: the CIFAR-10 batches in ``data_dir``, or synthetic ones."""
    if config.get("synthetic", False):
        seed = int(config.get("data_seed", 0))
        train = SyntheticImages(int(config.get("synthetic_train", 50_000)), 10, 32, seed=seed)
        test = SyntheticImages(int(config.get("synthetic_val", 10_000)), 10, 32, seed=seed, first_index=10**9)
        return train, test
    data_dir = config.get("data_dir")
    if not data_dir:
        raise ValueError("config data_dir: required (the cifar-10-batches-py folder), or set synthetic: true")
    return load_cifar10(os.path.expandvars(os.path.expanduser(str(data_dir))))


def recipe(config: dict[str, Any]) -> Recipe:
    train, test = datasets(config)
    return Recipe(build_model=lambda: build_model(config), train_set=train, val_set=test,
                  mean=CIFAR_MEAN, std=CIFAR_STD, augment=lambda x, g: random_crop_flip(x, g, padding=4),
                  batch_size=int(config.get("batch_size", 128)), milestones=MILESTONES, gamma=0.2,
                  base_batch=int(config.get("base_batch", 128)))


def train(config, ctx):
    train_classifier(config, ctx, recipe(config))


def load_model(checkpoint_path: str):
    """Rebuild the trained model from a checkpoint (e.g. the one result.json names)."""
    return trained_model(checkpoint_path, build_model)
