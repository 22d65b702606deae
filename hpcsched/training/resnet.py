"""ResNets (He et al. 2016) for 32x32 images (CIFAR stem) and 224x224 images (ImageNet stem).

Module names follow torchvision's (conv1, bn1, layer1..4, fc; blocks with conv1..3, bn1..3,
downsample), so an ImageNet ResNet-50 built here has the same state_dict keys as
``torchvision.models.resnet50``. ``width`` scales every layer (64 is the standard network) and
``blocks`` overrides the blocks per stage, which lets tests build a network of a few thousand
parameters with the same code.
"""

from __future__ import annotations

from typing import Sequence

from torch import nn

ARCHS: dict[str, tuple[str, tuple[int, ...]]] = {
    "resnet10": ("basic", (1, 1, 1, 1)),
    "resnet18": ("basic", (2, 2, 2, 2)),
    "resnet34": ("basic", (3, 4, 6, 3)),
    "resnet50": ("bottleneck", (3, 4, 6, 3)),
    "resnet101": ("bottleneck", (3, 4, 23, 3)),
    "resnet152": ("bottleneck", (3, 8, 36, 3)),
}


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(inplanes, planes * self.expansion, stride)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(inplanes, planes * self.expansion, stride)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def _shortcut(inplanes: int, outplanes: int, stride: int) -> nn.Module | None:
    if stride == 1 and inplanes == outplanes:
        return None
    return nn.Sequential(nn.Conv2d(inplanes, outplanes, 1, stride, bias=False), nn.BatchNorm2d(outplanes))


class ResNet(nn.Module):
    def __init__(self, block: str, layers: Sequence[int], num_classes: int = 10, width: int = 64,
                 stem: str = "cifar"):
        super().__init__()
        kind = {"basic": BasicBlock, "bottleneck": Bottleneck}[block]
        if stem not in ("cifar", "imagenet"):
            raise ValueError(f"stem must be 'cifar' or 'imagenet', got {stem!r}")
        self.inplanes = width
        if stem == "cifar":  # 3x3 stride-1 convolution, no pooling: keeps 32x32 resolution
            self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        stages = []
        for i, blocks in enumerate(layers):
            stages.append(self._stage(kind, width * 2 ** i, int(blocks), stride=1 if i == 0 else 2))
        self.layer1, self.layer2, self.layer3, self.layer4 = (stages + [nn.Identity()] * 4)[:4]
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _stage(self, kind, planes: int, blocks: int, stride: int) -> nn.Sequential:
        modules = []
        for b in range(max(1, blocks)):
            modules.append(kind(self.inplanes, planes, stride if b == 0 else 1))
            self.inplanes = planes * kind.expansion
        return nn.Sequential(*modules)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet(arch: str = "resnet18", num_classes: int = 10, width: int = 64, stem: str = "cifar",
           blocks: Sequence[int] | None = None) -> ResNet:
    """A ResNet by name (``ARCHS``), optionally with other widths or blocks per stage."""
    if arch not in ARCHS:
        raise ValueError(f"arch: unknown {arch!r}; valid: {', '.join(ARCHS)}")
    block, layers = ARCHS[arch]
    if blocks is not None:
        layers = tuple(int(b) for b in blocks)
        if not 1 <= len(layers) <= 4 or min(layers) < 1:
            raise ValueError(f"blocks: expected 1 to 4 stages of >= 1 blocks, got {list(blocks)!r}")
    if int(width) < 1:
        raise ValueError(f"width: expected a positive integer, got {width!r}")
    return ResNet(block, layers, num_classes, int(width), stem)


def imagenet_resnet(arch: str = "resnet50", num_classes: int = 1000, width: int = 64,
                    blocks: Sequence[int] | None = None) -> nn.Module:
    """torchvision's model for a standard ImageNet ResNet when torchvision is installed;
    this module's equivalent (same state_dict keys) otherwise or for other widths/blocks."""
    if width == 64 and blocks is None:
        try:
            from torchvision import models
        except ImportError:
            models = None
        if models is not None and hasattr(models, arch):
            return getattr(models, arch)(num_classes=num_classes)
    return resnet(arch, num_classes, width, "imagenet", blocks)
