"""Analysis of runs and simulations: pandas frames from journals, figures, reports.

    from hpcsched.analysis import load_run, load_simulation
    from hpcsched.analysis.report import build_report

Names are imported on first use (PEP 562), so ``import hpcsched.analysis.report`` for the command
line costs nothing until a report is built. Loading needs pandas; figures need matplotlib (the
``plot`` extra), imported when one is drawn. Columns: docs/analysis.md.

May import: ``core`` and ``rundir`` (the files it reads). Never the loop, an executor, a policy, the
trial side or the CLI.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import Any

_EXPORTS = MappingProxyType({
    "Run": "loaders", "RunInfo": "loaders", "find_journal": "loaders", "load_run": "loaders",
    "load_trials": "loaders", "load_scores": "loaders", "load_allocations": "loaders", "load_events": "loaders",
    "load_run_info": "loaders", "read_result": "loaders",
    "Simulation": "simulation", "load_simulation": "simulation", "is_simulation": "simulation",
    "means_table": "simulation",
    "usage_curve": "usage", "check_usage": "usage", "early_ranking": "rank_agreement",
    "build_report": "report",
})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hpcsched.analysis' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hpcsched.analysis.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
