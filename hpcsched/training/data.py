"""Image data for the examples, with torch alone (torchvision and Pillow are used when present).

Datasets yield uint8 images (C x H x W) and int labels. Sets held in memory or generated
(``TensorImages``, ``SyntheticImages``) build whole batches at once (``batch(indices)``); on-disk
sets (``ImageFolderSet``) go through a DataLoader with worker processes. Normalisation and
the cheap augmentations (random crop with padding, horizontal flip) run on whole batches on
the training device, drawn from a generator the caller seeds.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

Batch = tuple[torch.Tensor, torch.Tensor]


# ---------------------------------------------------------------- in-memory and generated sets


class TensorImages:
    """Images (N x C x H x W, uint8) and labels held in memory."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        if images.dtype != torch.uint8 or images.dim() != 4 or len(images) != len(labels):
            raise ValueError(f"expected uint8 images N x C x H x W and N labels, got {tuple(images.shape)} "
                             f"{images.dtype} and {len(labels)} labels")
        self.images, self.labels = images, labels.long()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.images[i], int(self.labels[i])

    def batch(self, indices: Sequence[int]) -> Batch:
        idx = torch.as_tensor(list(indices), dtype=torch.long)
        return self.images[idx], self.labels[idx]


class SyntheticImages:
    """Random images of a real data set's shape and size, from a seeded pool (cheap to serve).

    Each class has a fixed coarse colour pattern (drawn from ``seed``) that its images show
    through noise, so a model learns something and the configs of a search differ. Image ``i``
    is pool image ``(first_index + i) % pool``: a pool of distinct images is made once, so
    serving a batch is a gather, fast enough not to slow a GPU down. A training and a validation
    set share the patterns and differ by ``first_index``.
    """

    def __init__(self, size: int, num_classes: int = 10, image_size: int = 32, seed: int = 0,
                 first_index: int = 0, signal: float = 0.35, channels: int = 3, pool: int | None = None):
        self.size, self.num_classes, self.image_size = int(size), int(num_classes), int(image_size)
        self.seed, self.first_index = int(seed), int(first_index)
        pixels_per_image = channels * self.image_size ** 2
        self.pool = int(pool or min(self.size, max(64, 50_000_000 // pixels_per_image)))
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + 17)
        coarse = torch.rand(self.num_classes, channels, 4, 4, generator=g)
        self.templates = torch.nn.functional.interpolate(coarse, size=(self.image_size,) * 2, mode="nearest")
        g = torch.Generator().manual_seed((self.seed * 7_919_993 + self.first_index) * 2 + 1)
        self.pool_labels = torch.randint(self.num_classes, (self.pool,), generator=g)
        images = torch.empty(self.pool, channels, self.image_size, self.image_size, dtype=torch.uint8)
        for start in range(0, self.pool, 64):
            labels = self.pool_labels[start:start + 64]
            noise = torch.rand(len(labels), channels, self.image_size, self.image_size, generator=g)
            mixed = float(signal) * self.templates[labels] + (1.0 - float(signal)) * noise
            images[start:start + 64] = (mixed * 255).round_().clamp_(0, 255).to(torch.uint8)
        self.pool_images = images

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        x, y = self.batch([i])
        return x[0], int(y[0])

    def batch(self, indices: Sequence[int]) -> Batch:
        idx = torch.as_tensor(list(indices), dtype=torch.long)
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= self.size):
            raise IndexError(f"indices outside a synthetic set of {self.size}: {list(indices)[:5]}...")
        rows = (idx + self.first_index) % self.pool
        return self.pool_images[rows], self.pool_labels[rows]


# ---------------------------------------------------------------- CIFAR-10 python batches


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles CIFAR batches (dicts of numpy arrays, lists, bytes) and nothing else."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")


def _read_cifar_batch(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    with open(path, "rb") as f:
        data = _ArrayUnpickler(io.BytesIO(f.read()), encoding="bytes").load()
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a CIFAR-10 batch (a pickled dict)")
    data = {k.decode() if isinstance(k, bytes) else k: v for k, v in data.items()}
    if "data" not in data or "labels" not in data:
        raise ValueError(f"{path}: not a CIFAR-10 batch (needs 'data' and 'labels', has {sorted(data)})")
    images = torch.as_tensor(data["data"]).to(torch.uint8).reshape(-1, 3, 32, 32)
    return images, torch.as_tensor(list(data["labels"]), dtype=torch.long)


def load_cifar10(data_dir: str | Path) -> tuple[TensorImages, TensorImages]:
    """Train (data_batch_1..5) and test (test_batch) sets from the standard CIFAR-10 python batches."""
    root = Path(data_dir).expanduser()
    names = [f"data_batch_{i}" for i in range(1, 6)]
    missing = [n for n in names + ["test_batch"] if not (root / n).is_file()]
    if missing:
        raise FileNotFoundError(f"data_dir {str(root)!r}: no CIFAR-10 python batches ({', '.join(missing)} missing); "
                                f"extract cifar-10-python.tar.gz there, or set synthetic: true")
    parts = [_read_cifar_batch(root / n) for n in names]
    train = TensorImages(torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))
    test = TensorImages(*_read_cifar_batch(root / "test_batch"))
    return train, test


# ---------------------------------------------------------------- image folders (ImageNet layout)


def find_images(root: Path) -> tuple[list[tuple[Path, int]], list[str]]:
    """(path, class index) for ``root/<class>/<image>``; classes sorted by name, as torchvision does."""
    if not root.is_dir():
        raise FileNotFoundError(f"no image folder {str(root)!r} (expected {root}/<class>/<images>)")
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    if not classes:
        raise FileNotFoundError(f"{str(root)!r} has no class folders (expected {root}/<class>/<images>)")
    items = [(p, c) for c, name in enumerate(classes) for p in sorted((root / name).rglob("*"))
             if p.suffix.lower() in IMAGE_SUFFIXES]
    if not items:
        raise FileNotFoundError(f"{str(root)!r}: no images under its class folders")
    return items, classes


class ImageFolderSet:
    """``root/<class>/<image>`` decoded to uint8 C x size x size: random resized crop for training,
    resize + centre crop for evaluation. torchvision's transforms when installed, else Pillow."""

    def __init__(self, root: str | Path, train: bool, size: int = 224):
        self.items, self.classes = find_images(Path(root).expanduser())
        self.train, self.size = train, int(size)
        self._transform = _torchvision_transform(train, self.size)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.items[i]
        image = _open_rgb(path)
        if self._transform is not None:
            return self._transform(image), label
        return _pil_crop(image, self.size, self.train), label


def _torchvision_transform(train: bool, size: int) -> Callable | None:
    try:
        from torchvision import transforms
    except ImportError:
        return None
    if train:
        return transforms.Compose([transforms.RandomResizedCrop(size), transforms.PILToTensor()])
    return transforms.Compose([transforms.Resize(int(size * 256 / 224)), transforms.CenterCrop(size),
                               transforms.PILToTensor()])


def _open_rgb(path: Path):
    try:
        from PIL import Image
    except ImportError:
        raise ModuleNotFoundError("reading an image folder needs torchvision or Pillow (pip install pillow)") from None
    with Image.open(path) as image:
        return image.convert("RGB")


def _pil_crop(image, size: int, train: bool) -> torch.Tensor:
    """Random resized crop (scale 0.08-1, ratio 3/4-4/3) or resize + centre crop, with Pillow."""
    import math

    from PIL import Image

    w, h = image.size
    if train:
        for _ in range(10):
            area = w * h * float(torch.empty(1).uniform_(0.08, 1.0))
            ratio = math.exp(float(torch.empty(1).uniform_(math.log(3 / 4), math.log(4 / 3))))
            cw, ch = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
            if 0 < cw <= w and 0 < ch <= h:
                left = int(torch.randint(0, w - cw + 1, (1,)))
                top = int(torch.randint(0, h - ch + 1, (1,)))
                break
        else:
            cw = ch = min(w, h)
            left, top = (w - cw) // 2, (h - ch) // 2
        image = image.resize((size, size), Image.BILINEAR, box=(left, top, left + cw, top + ch))
    else:
        short = int(size * 256 / 224)
        scale = short / min(w, h)
        image = image.resize((max(size, round(w * scale)), max(size, round(h * scale))), Image.BILINEAR)
        w, h = image.size
        left, top = (w - size) // 2, (h - size) // 2
        image = image.crop((left, top, left + size, top + size))
    data = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    return data.reshape(size, size, 3).permute(2, 0, 1).contiguous()


# ---------------------------------------------------------------- batching and augmentation


class _IndexFeed:
    """A sampler whose indices are replaced before every pass (so loader workers persist)."""

    def __init__(self) -> None:
        self.indices: list[int] = []

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return len(self.indices)


class BatchFeed:
    """Batches of a dataset for given indices: built at once (``dataset.batch``) or by a DataLoader
    with ``workers`` processes that stay alive between passes."""

    def __init__(self, dataset: Any, batch_size: int, workers: int = 0, pin_memory: bool = False):
        self.dataset, self.batch_size = dataset, int(batch_size)
        self._feed = _IndexFeed()
        self._loader = None
        if not hasattr(dataset, "batch"):
            from torch.utils.data import DataLoader

            self._loader = DataLoader(dataset, batch_size=self.batch_size, sampler=self._feed,
                                      num_workers=workers, pin_memory=pin_memory,
                                      persistent_workers=workers > 0)

    def __call__(self, indices: Sequence[int]) -> Iterator[Batch]:
        if self._loader is None:
            for start in range(0, len(indices), self.batch_size):
                yield self.dataset.batch(indices[start:start + self.batch_size])
            return
        self._feed.indices = list(indices)
        for images, labels in self._loader:
            yield images, labels


def normalize(images: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """uint8 N x C x H x W -> float, scaled to [0, 1] and standardised per channel."""
    m = torch.tensor(mean, device=images.device).view(1, -1, 1, 1)
    s = torch.tensor(std, device=images.device).view(1, -1, 1, 1)
    return (images.float().div_(255.0) - m) / s


def random_crop_flip(images: torch.Tensor, generator: torch.Generator, padding: int = 4,
                     crop: bool = True, flip: bool = True) -> torch.Tensor:
    """Per image: a random crop of the zero-padded image (same size) and a horizontal flip with p=1/2."""
    n, c, h, w = images.shape
    out = images
    if crop and padding > 0:
        padded = torch.nn.functional.pad(images, (padding,) * 4)
        dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(images.device)
        dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(images.device)
        rows = (dy[:, None] + torch.arange(h, device=images.device))[:, None, :, None]
        cols = (dx[:, None] + torch.arange(w, device=images.device))[:, None, None, :]
        batch = torch.arange(n, device=images.device)[:, None, None, None]
        chans = torch.arange(c, device=images.device)[None, :, None, None]
        out = padded[batch, chans, rows, cols]
    if flip:
        mask = (torch.rand(n, generator=generator) < 0.5).to(images.device)
        out = torch.where(mask[:, None, None, None], out.flip(3), out)
    return out


def step_generator(seed: int, step: int, rank: int) -> torch.Generator:
    """The augmentation generator of one rank at one step: no state to save, same on any resume."""
    return torch.Generator().manual_seed((int(seed) * 1_000_003 + int(step)) * 4_099 + int(rank))
