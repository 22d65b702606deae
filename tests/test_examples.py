"""The CIFAR-10 and ImageNet examples: their specs carry the paper's knobs, their data and models
work with torch alone, and a synthetic smoke run of each finishes through ``hpcsched run``."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from hpcsched.spec import load_experiment
from tests.runs import REPO, hpcsched

CIFAR = REPO / "experiments" / "cifar10"
IMAGENET = REPO / "experiments" / "imagenet"


# ---------------------------------------------------------------- specs


@pytest.mark.parametrize("deadline", [900, 1800, 3600])
def test_cifar10_specs_hold_the_papers_setup(deadline):
    spec = load_experiment(CIFAR / f"cifar10-{deadline}s.yaml").spec
    assert spec.deadline == deadline and spec.max_trials == 100
    assert spec.space.grid_size == 144 and spec.space.capacity == 144
    grid = {p.name: p.values for p in spec.space.grid_params}
    assert grid["lr"] == (1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1.0)
    assert grid["weight_decay"] == (1e-4, 5e-4, 1e-3, 5e-3)
    assert grid["momentum"] == (0.9, 0.95, 0.99, 0.997)
    r = spec.resources
    assert (r.atoms, r.gpus_per_atom, r.distributed) == (8, 1, True)
    variants = {v.name: v.scheduler for v in spec.variants}
    assert variants["hypersched"].kind == "hypersched" and variants["asha"].kind == "asha"
    for s in variants.values():
        assert (s.r, s.eta, s.R) == (2, 4, 200)


def test_imagenet_spec_holds_the_papers_setup():
    spec = load_experiment(IMAGENET / "imagenet.yaml").spec
    r = spec.resources
    assert (r.atoms, r.gpus_per_atom, r.distributed, spec.deadline) == (16, 2, True, 7200)
    hyper = spec.variant("hypersched").scheduler
    assert (hyper.r, hyper.eta, hyper.allocation_grid) == (10, 4, 2)
    assert spec.variant("asha").scheduler.kind == "asha"
    constants = {p.name: p.values[0] for p in spec.space.params if p.kind == "value"}
    assert constants["train_batches"] == 100 and constants["val_batches"] == 20 and constants["batch_size"] == 128


def test_smoke_specs_fit_two_cpu_slots():
    for path in (CIFAR / "smoke.yaml", IMAGENET / "smoke.yaml"):
        spec = load_experiment(path).spec
        assert spec.resources.atoms == 2 and spec.resources.gpus_per_atom == 0 and spec.resources.distributed
        assert spec.deadline <= 90


# ---------------------------------------------------------------- data and models (torch alone)


def _write_cifar_batch(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    data = {b"batch_label": b"fake", b"labels": rng.integers(0, 10, n).tolist(),
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"x.png"] * n}
    path.write_bytes(pickle.dumps(data, protocol=2))


@pytest.mark.torch
def test_cifar10_batches_load_and_other_pickles_are_refused(tmp_path):
    from hpcsched.training.data import load_cifar10

    for i in range(1, 6):
        _write_cifar_batch(tmp_path / f"data_batch_{i}", 6, i)
    with pytest.raises(FileNotFoundError, match="test_batch missing"):
        load_cifar10(tmp_path)
    _write_cifar_batch(tmp_path / "test_batch", 4, 9)
    train, test = load_cifar10(tmp_path)
    assert len(train) == 30 and len(test) == 4
    x, y = train.batch([0, 29])
    assert x.shape == (2, 3, 32, 32) and str(x.dtype) == "torch.uint8"
    first = pickle.loads((tmp_path / "data_batch_1").read_bytes())
    assert x[0].flatten().tolist() == first[b"data"][0].tolist() and int(y[0]) == first[b"labels"][0]

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    (tmp_path / "test_batch").write_bytes(pickle.dumps({b"data": Evil(), b"labels": []}))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_cifar10(tmp_path)


@pytest.mark.torch
def test_synthetic_images_are_deterministic_and_share_class_patterns():
    from hpcsched.training.data import SyntheticImages

    a = SyntheticImages(100, 10, 32, seed=1)
    b = SyntheticImages(100, 10, 32, seed=1)
    val = SyntheticImages(50, 10, 32, seed=1, first_index=10**9)
    xa, ya = a.batch([3, 7, 99])
    xb, yb = b.batch([3, 7, 99])
    assert xa.equal(xb) and ya.equal(yb)
    assert not val.batch([3])[0].equal(a.batch([3])[0])
    assert val.templates.equal(a.templates)
    with pytest.raises(IndexError):
        a.batch([100])


@pytest.mark.torch
def test_augmentation_keeps_shapes_and_is_seeded():
    import torch

    from hpcsched.training.data import random_crop_flip, step_generator

    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.int64).reshape(2, 3, 8, 8).to(torch.uint8)
    one = random_crop_flip(x, step_generator(0, 5, 1), padding=2)
    two = random_crop_flip(x, step_generator(0, 5, 1), padding=2)
    assert one.shape == x.shape and one.dtype == torch.uint8 and one.equal(two)
    flipped = random_crop_flip(x, torch.Generator().manual_seed(0), crop=False)
    for i in range(2):
        assert flipped[i].equal(x[i]) or flipped[i].equal(x[i].flip(2))


@pytest.mark.torch
def test_image_folder_reads_the_imagenet_layout(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    from hpcsched.training.data import ImageFolderSet

    for c, name in enumerate(["n01", "n02"]):
        (tmp_path / name).mkdir()
        for k in range(2):
            pil.new("RGB", (40 + 10 * k, 30), (100 * c, 50, 200)).save(tmp_path / name / f"{k}.png")
    train, val = ImageFolderSet(tmp_path, train=True, size=24), ImageFolderSet(tmp_path, train=False, size=24)
    assert train.classes == ["n01", "n02"] and len(val) == 4
    x, y = val[3]
    assert x.shape == (3, 24, 24) and str(x.dtype) == "torch.uint8" and y == 1
    assert train[0][0].shape == (3, 24, 24)
    with pytest.raises(FileNotFoundError, match="no image folder"):
        ImageFolderSet(tmp_path / "missing", train=True)


@pytest.mark.torch
def test_resnets_match_the_reference_sizes():
    from hpcsched.training.resnet import imagenet_resnet, resnet

    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(imagenet_resnet("resnet50")) == 25_557_032  # torchvision's resnet50
    assert count(resnet("resnet18", 10)) == 11_173_962  # the usual CIFAR ResNet-18
    tiny = resnet("resnet50", 10, width=4, blocks=[1, 1])
    assert count(tiny) < 5_000
    with pytest.raises(ValueError, match="unknown"):
        resnet("resnet7")


# ---------------------------------------------------------------- smoke runs through `hpcsched run`


def _smoke(spec: Path, variant: str, run: Path) -> dict:
    proc = hpcsched("run", str(spec), "--variant", variant, "--run-dir", str(run), "--deadline", "35s",
                    "--quiet", timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((run / "result.json").read_text())
    assert result["best"] is not None and Path(result["best"]["checkpoint"]).exists()
    assert result["reason"] in ("deadline", "nothing left to run")
    return result


@pytest.mark.slow
@pytest.mark.torch
def test_cifar10_smoke_run_writes_a_loadable_best_model(tmp_path):
    import importlib.util

    import torch

    result = _smoke(CIFAR / "smoke.yaml", "hypersched", tmp_path / "run")
    spec = importlib.util.spec_from_file_location("cifar10_example_train", CIFAR / "train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = example.load_model(result["best"]["checkpoint"])
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


@pytest.mark.slow
@pytest.mark.torch
def test_imagenet_smoke_run_with_asha(tmp_path):
    result = _smoke(IMAGENET / "smoke.yaml", "asha", tmp_path / "run")
    assert result["variant"] == "asha"
