"""The package's folders are the parts of docs/ARCHITECTURE.md's diagram, and every documented import works.

import-linter (pyproject.toml, run by tools/test.sh) checks that each arrow points down; these tests check
what it cannot: the names users import from their documented places, and the shape of the package.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "hpcsched"
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "api.py"}  # the package, `python -m hpcsched`, hpcsched.run

# Where users import public names from (README, docs/, examples): module -> names.
DOCUMENTED = {
    "hpcsched": ["run", "SearchResult", "TrialContext", "load_checkpoint", "__version__"],
    "hpcsched.trial": ["TrialContext", "load_checkpoint"],  # the module these lived in before the move
    "hpcsched.analysis": ["load_run", "load_simulation", "check_usage"],
    "hpcsched.analysis.report": ["build_report"],
    "hpcsched.trial.replay": ["train"],  # the replay trainable: `trainable: hpcsched.trial.replay:train`
    "hpcsched.cli.main": ["main"],  # the `hpcsched` script
}
NEEDS_TORCH = {
    "hpcsched.training.lightning": ["HpcschedCallback"],
    "hpcsched.training.huggingface": ["HpcschedTrainerCallback", "resume_from"],
    "hpcsched.training.loop": ["Recipe", "train_classifier", "load_model"],
    "hpcsched.training.resnet": ["resnet", "imagenet_resnet"],
    "hpcsched.training.data": ["CIFAR_MEAN", "CIFAR_STD", "IMAGENET_MEAN", "IMAGENET_STD", "ImageFolderSet",
                               "SyntheticImages", "load_cifar10", "random_crop_flip"],
    "hpcsched.training.distributed": [],
}
FROM_IMPORT = re.compile(r"^\s*from (hpcsched[\w.]*) import ([\w, ]+?)(?:\s+as\s+\w+)?\s*$", re.M)


def _missing(module: str, names: list[str]) -> list[str]:
    imported = importlib.import_module(module)
    return [name for name in names if not hasattr(imported, name)]


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_each_documented_name_imports_from_its_documented_place(module):
    assert _missing(module, DOCUMENTED[module]) == []


@pytest.mark.torch
@pytest.mark.parametrize("module", sorted(NEEDS_TORCH))
def test_each_documented_training_helper_imports_from_its_documented_place(module):
    assert _missing(module, NEEDS_TORCH[module]) == []


def _documents() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").rglob("*.py")),
             *sorted((REPO / "experiments").rglob("*.py"))]
    return [path for path in found if path.is_file()]


def test_every_import_the_documents_show_is_one_the_lists_above_hold():
    """A `from hpcsched... import ...` line in README, docs or examples names a place listed here, so the
    tests above import it; a document that shows a place that is not there fails."""
    shown: dict[str, set[str]] = {}
    for path in _documents():
        for module, names in FROM_IMPORT.findall(path.read_text()):
            shown.setdefault(module, set()).update(n.strip() for n in names.split(",") if n.strip())
    assert shown, "no import lines found in the documents"
    listed = {**DOCUMENTED, **NEEDS_TORCH}
    unlisted = {module: sorted(names - set(listed.get(module, ()))) for module, names in shown.items()}
    assert {module: names for module, names in unlisted.items() if names} == {}


def test_only_the_entry_points_sit_at_the_top_level():
    modules = {path.name for path in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL_MODULES


@pytest.mark.parametrize("folder", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()))
def test_each_folder_says_its_part_and_what_it_may_import(folder):
    docstring = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text()))
    assert docstring and "May import:" in docstring
    layers = _layers()
    assert any(folder in layer.split(" | ") for layer in layers), f"{folder} is in no layer of the contract"


def _layers() -> list[str]:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c["layers"] for c in contracts if c["type"] == "layers")
