"""Markers: ``slurm`` tests need the local test cluster, ``torch`` tests need torch.

Outside CI they are skipped when what they need is missing; with HPCSCHED_CI=1 (``.ci/run``)
a missing cluster or torch fails them instead, so nothing that matters is skipped in CI.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest

_AVAILABLE = pytest.StashKey[dict]()


def _slurm_reachable() -> bool:
    if not shutil.which("sinfo"):
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and any(s in out.stdout for s in ("idle", "mixed", "allocated"))


def pytest_configure(config):
    config.stash[_AVAILABLE] = {}


def _missing(config, marker: str) -> str | None:
    cache = config.stash[_AVAILABLE]
    if marker not in cache:
        if marker == "slurm":
            cache[marker] = None if _slurm_reachable() else \
                "no local Slurm cluster (run: sudo tools/slurm_test_cluster.sh start)"
        else:
            cache[marker] = None if importlib.util.find_spec("torch") else \
                "torch is not installed (pip install -e '.[examples]')"
    return cache[marker]


def pytest_runtest_setup(item):
    for marker in ("slurm", "torch"):
        if marker in item.keywords:
            why = _missing(item.config, marker)
            if why:
                if os.environ.get("HPCSCHED_CI") == "1":
                    pytest.fail(f"required in CI: {why}", pytrace=False)
                pytest.skip(why)
